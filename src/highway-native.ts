// HighwayHash-256 from our own N-API addon (native/highway/, built into the same
// module as the Reed-Solomon kernels). The point is the batch calls: one native
// call hashes or verifies every bitrot block of a shard range with its
// position-bound key (spec §4.1), instead of one ~6 µs call per 16 KiB block.
// highwayhasher (src/highway.ts) stays as the independent reference in tests.
import { assert } from './errors';
import { BitrotKey, BlockPosition, bitrotKeyBytes } from './keying';
import { HASH_ENTRY_BYTES, blockCountFor } from './region';
import { rsNative } from './rs-native';

export type HighwayKernel = 'scalar' | 'avx2';

interface HighwayAddon {
  hash256(key: Uint8Array, data: Uint8Array, out: Uint8Array): void;
  hashBlocks(
    key: Uint8Array,
    fileId: bigint,
    chunkIndex: bigint,
    shardIndex: number,
    version: bigint,
    firstBlock: number,
    data: Uint8Array,
    blockBytes: number,
    out: Uint8Array,
  ): void;
  /** Absent from an addon built before it (a stale build/): hashBlocksIntoAsync hashes inline then. */
  hashBlocksAsync?(
    key: Uint8Array,
    fileId: bigint,
    chunkIndex: bigint,
    shardIndex: number,
    version: bigint,
    firstBlock: number,
    data: Uint8Array,
    blockBytes: number,
    out: Uint8Array,
    done: (err: Error | null) => void,
  ): void;
  verifyBlocks(
    key: Uint8Array,
    fileId: bigint,
    chunkIndex: bigint,
    shardIndex: number,
    version: bigint,
    firstBlock: number,
    data: Uint8Array,
    blockBytes: number,
    entries: Uint8Array,
  ): number;
  highwayKernel(): string;
  detectedHighwayKernel(): string;
  setHighwayKernel(name: string): string;
}

const U64_MAX = (1n << 64n) - 1n;
const U32_MAX = 0xffffffff;

// The same module object rs-native.ts loads; it also carries the hash exports.
function addon(): HighwayAddon {
  return rsNative() as unknown as HighwayAddon;
}

// Key bytes of the last BitrotKey seen: a store uses one cluster key, so this
// avoids building 32 bytes from bigints on every read. Checked word by word.
let cachedKey: { k0: bigint; k1: bigint; k2: bigint; k3: bigint; bytes: Buffer } | null = null;

function keyBytesOf(key: BitrotKey): Buffer {
  const c = cachedKey;
  if (c !== null && c.k0 === key.k0 && c.k1 === key.k1 && c.k2 === key.k2 && c.k3 === key.k3) return c.bytes;
  const bytes = bitrotKeyBytes(key);
  cachedKey = { k0: key.k0, k1: key.k1, k2: key.k2, k3: key.k3, bytes };
  return bytes;
}

function checkRange(pos: BlockPosition, firstBlockIndex: number, dataBytes: number, bitrotBlockBytes: number): number {
  assert(pos.fileId >= 0n && pos.fileId <= U64_MAX, 'file_id is u64');
  assert(pos.chunkIndex >= 0n && pos.chunkIndex <= U64_MAX, 'chunk_index is u64');
  assert(pos.version >= 0n && pos.version <= U64_MAX, 'version is u64');
  assert(Number.isInteger(pos.shardIndex) && pos.shardIndex >= 0 && pos.shardIndex <= 0xffff, 'shard_index is u16');
  assert(Number.isInteger(bitrotBlockBytes) && bitrotBlockBytes > 0, 'bitrot_block is positive');
  const blockCount = blockCountFor(dataBytes, bitrotBlockBytes);
  assert(
    Number.isInteger(firstBlockIndex) &&
      firstBlockIndex >= 0 &&
      firstBlockIndex + Math.max(blockCount - 1, 0) <= U32_MAX,
    'block_index is u32',
  );
  return blockCount;
}

/**
 * Digests of every block of data (blocks firstBlockIndex.., the last may be short)
 * into out, 32 bytes each (spec §4), in one native call.
 */
export function hashBlocksInto(
  out: Uint8Array,
  key: BitrotKey,
  pos: BlockPosition,
  data: Uint8Array,
  bitrotBlockBytes: number,
  firstBlockIndex: number,
): void {
  const blockCount = checkRange(pos, firstBlockIndex, data.length, bitrotBlockBytes);
  assert(out.length >= blockCount * HASH_ENTRY_BYTES, 'one 32-byte entry per block');
  addon().hashBlocks(
    keyBytesOf(key),
    pos.fileId,
    pos.chunkIndex,
    pos.shardIndex,
    pos.version,
    firstBlockIndex,
    data,
    bitrotBlockBytes,
    out,
  );
}

/**
 * hashBlocksInto on the libuv pool, off the calling thread (DESIGN §5 "Shard hashes off the mount's
 * thread"): neither out nor data may be touched until it resolves. Inline on an addon without it.
 */
export function hashBlocksIntoAsync(
  out: Uint8Array,
  key: BitrotKey,
  pos: BlockPosition,
  data: Uint8Array,
  bitrotBlockBytes: number,
  firstBlockIndex: number,
): Promise<void> {
  const native = addon();
  if (native.hashBlocksAsync === undefined) {
    hashBlocksInto(out, key, pos, data, bitrotBlockBytes, firstBlockIndex);
    return Promise.resolve();
  }
  const blockCount = checkRange(pos, firstBlockIndex, data.length, bitrotBlockBytes);
  assert(out.length >= blockCount * HASH_ENTRY_BYTES, 'one 32-byte entry per block');
  return new Promise((resolve, reject) =>
    native.hashBlocksAsync!(
      keyBytesOf(key),
      pos.fileId,
      pos.chunkIndex,
      pos.shardIndex,
      pos.version,
      firstBlockIndex,
      data,
      bitrotBlockBytes,
      out,
      (err) => (err === null ? resolve() : reject(err)),
    ),
  );
}

/**
 * Check every block of data against entries (32 bytes per block, same order)
 * (spec §9). Returns the range-relative index of the first bad block, or -1.
 */
export function firstBadBlock(
  key: BitrotKey,
  pos: BlockPosition,
  firstBlockIndex: number,
  data: Uint8Array,
  entries: Uint8Array,
  bitrotBlockBytes: number,
): number {
  const blockCount = checkRange(pos, firstBlockIndex, data.length, bitrotBlockBytes);
  assert(entries.length >= blockCount * HASH_ENTRY_BYTES, 'one 32-byte entry per block');
  const bad = addon().verifyBlocks(
    keyBytesOf(key),
    pos.fileId,
    pos.chunkIndex,
    pos.shardIndex,
    pos.version,
    firstBlockIndex,
    data,
    bitrotBlockBytes,
    entries,
  );
  assert(Number.isInteger(bad) && bad >= -1 && bad < blockCount, 'verifyBlocks returns -1 or a block in range');
  return bad;
}

/** One plain HighwayHash-256 under a 32-byte key (no position binding). */
export function nativeHighway256(key: Uint8Array, data: Uint8Array): Buffer {
  assert(key.length === 32, 'HighwayHash key must be 32 bytes');
  const out = Buffer.alloc(32);
  addon().hash256(key, data, out);
  return out;
}

/** The kernel in use, e.g. 'avx2'. */
export function highwayKernel(): HighwayKernel {
  return addon().highwayKernel() as HighwayKernel;
}

/** The best kernel this CPU supports. */
export function detectedHighwayKernel(): HighwayKernel {
  return addon().detectedHighwayKernel() as HighwayKernel;
}

/** Select a kernel (tests force 'scalar'); falls back to scalar if unsupported. Returns the active one. */
export function setHighwayKernel(kernel: HighwayKernel): HighwayKernel {
  return addon().setHighwayKernel(kernel) as HighwayKernel;
}
