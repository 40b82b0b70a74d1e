// HighwayHash-256 (spec §4, csum_algo = 1) via highwayhasher's native module: the
// independent reference the tests check our own kernels against. Shard hashing and
// verification use the batch calls of src/highway-native.ts (one call per range).
// The module loads asynchronously once; after that hashing is synchronous so the
// pure format code (src/) can call it without promises. Digest layout: four u64
// result words, each little-endian (DESIGN §3), which is what highwayhasher emits.
import { HighwayHash } from 'highwayhasher';
import { assert } from './errors';

type Creator = Awaited<ReturnType<typeof HighwayHash.loadModule>>;
let creator: Creator | null = null;

export const HIGHWAY_KEY_BYTES = 32;
export const HIGHWAY256_DIGEST_BYTES = 32;

/** Load the hasher once per process. Safe to call many times. */
export async function loadHighway(): Promise<void> {
  if (creator === null) creator = await HighwayHash.loadModule();
}

function loaded(): Creator {
  assert(creator !== null, 'loadHighway() must be awaited before hashing');
  return creator;
}

/** HighwayHash-256 of data under a 32-byte key. */
export function highway256(key: Uint8Array, data: Uint8Array): Buffer {
  assert(key.length === HIGHWAY_KEY_BYTES, 'HighwayHash key must be 32 bytes');
  const digest = loaded().hash256(key, data);
  assert(digest.length === HIGHWAY256_DIGEST_BYTES, 'HighwayHash-256 digest must be 32 bytes');
  return Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength);
}

/** HighwayHash-64, for cross-checking against Google's C++ implementation in tests. */
export function highway64(key: Uint8Array, data: Uint8Array): Buffer {
  assert(key.length === HIGHWAY_KEY_BYTES, 'HighwayHash key must be 32 bytes');
  const digest = loaded().hash64(key, data);
  return Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength);
}
