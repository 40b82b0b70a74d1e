// Scrub's check of the GCM tag of encrypted chunks (DESIGN §10). The §9 hashes cover the
// stored bytes, so a shard rewritten with fresh hashes (a bad write, or a forgery by someone without
// the key) passes them; only the tag shows it. With the store key, scrub and heal decrypt each
// encrypted chunk: a replica whose payload does not authenticate is damaged like one whose hashes
// fail; an EC chunk's payload spans its data shards, so the damaged shard is the one without which
// the payload authenticates (found by leaving each out in turn, rare: only when the tag fails).
import { DecryptError, deriveDataKey } from '../../src/chunk-cipher';
import { openPayload } from '../../src/payload-cipher';
import { FormatError } from '../../src/errors';
import { FLAG_ENCRYPTED } from '../../src/header';
import { shardCount } from '../../src/layout';
import { ChunkEnv } from '../chunks/chunk-env';
import { ChunkRef } from '../chunks/chunk-ref';
import { readEcPayload } from '../chunks/ec-chunk';
import { classifyShardError } from '../chunks/shard-encode';

/** The shards whose hashes pass but whose bytes fail the tag; unexplained: the tag fails and no one shard explains it. */
export interface TagFailures {
  shards: Set<number>;
  unexplained: boolean;
}

const NONE: TagFailures = Object.freeze({ shards: new Set<number>(), unexplained: false });

/** The chunk is encrypted and the key is loaded: its tag can be checked. */
export function tagCheckable(env: ChunkEnv, ref: ChunkRef): boolean {
  return env.storeKey !== null && ((ref.stored?.flags ?? 0) & FLAG_ENCRYPTED) !== 0;
}

/** The payload authenticates under the chunk version's data key (v2: every segment's tag, src/chunk-segments.ts). */
export function tagOk(env: ChunkEnv, ref: ChunkRef, payload: Uint8Array): boolean {
  try {
    openPayload(
      deriveDataKey(env.storeKey!, { fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), version: ref.version }),
      payload,
    );
    return true;
  } catch (err) {
    if (err instanceof DecryptError || err instanceof FormatError) return false;
    throw err;
  }
}

/** Replica i's verified payload, or null when its hashes fail (that is the hash check's to report). */
async function replicaPayload(env: ChunkEnv, ref: ChunkRef, i: number): Promise<Buffer | null> {
  try {
    return await env.shards.readWhole(ref, i);
  } catch (err) {
    if (classifyShardError(err) === null) throw err;
    return null;
  }
}

/** The shard of an EC chunk without which the payload authenticates, or -1. */
async function ecCulprit(env: ChunkEnv, ref: ChunkRef): Promise<number> {
  for (let j = 0; j < shardCount(ref.fl.layout); j++) {
    try {
      if (tagOk(env, ref, await readEcPayload(env, ref, j))) return j;
    } catch {
      // not enough other shards verify: j cannot be left out
    }
  }
  return -1;
}

/** Which shards of ref fail the tag although their hashes pass (none when the chunk is not encrypted or no key is loaded). */
export async function tagFailures(env: ChunkEnv, ref: ChunkRef): Promise<TagFailures> {
  if (!tagCheckable(env, ref)) return NONE;
  if (ref.fl.layout.kind === 'replica') {
    const shards = new Set<number>();
    for (let i = 0; i < ref.diskIds.length; i++) {
      const payload = await replicaPayload(env, ref, i);
      if (payload !== null && !tagOk(env, ref, payload)) shards.add(i);
    }
    return { shards, unexplained: false };
  }
  let joined: Buffer;
  try {
    joined = await readEcPayload(env, ref);
  } catch {
    return NONE; // too few shards verify: the hash check reports them
  }
  if (tagOk(env, ref, joined)) return NONE;
  const j = await ecCulprit(env, ref);
  return j < 0 ? { shards: new Set(), unexplained: true } : { shards: new Set([j]), unexplained: false };
}
