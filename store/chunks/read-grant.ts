// What a read grant of one chunk carries (issue 20 item 2, DESIGN §6; native/fuse3/read_grant.h):
// enough for the transport to answer reads of a clean replica chunk in C, each block still verified
// against its position-bound hash (spec §4.1, §9). Made only for what a read through the store
// would answer from the same replica with nothing laid over it: replica chunks stored raw or
// encrypted alone in cipher format v2 (issue 23: then the grant carries the segment size, nonce
// base and data key, and C opens the segments, each tag checked; compressed chunks and EC are
// read in JS), no pending intent, no fault injected, the shard's header and hash table cached by a
// read that verified them. Everything that changes any of this tells the store (Store.onReadChange), and
// the transport voids every grant then.
import { assert } from '../../src/errors';
import { ShardKeyer } from '../../src/keying';
import { HASH_ENTRY_BYTES, blockCountFor, dataStartBytes } from '../../src/region';
import { ChunkEnv, readOrder } from './chunk-env';
import { ChunkRef, shardDataLen } from './chunk-ref';
import { SegmentGrant, segmentGrantOf } from './segment-read';

export interface ReadGrantInfo {
  chunkIndex: number;
  chunkSizeBytes: number;
  /** The verified replica's shard file. */
  path: string;
  /** Shard file offset of block 0's data (spec §2 region 3). */
  dataAtBytes: number;
  blockBytes: number;
  shardDataLenBytes: number;
  logicalLenBytes: number;
  /** Block 0's position-bound key (spec §4.1); block i XORs i into key2's low word. */
  key: Buffer;
  /** Every block's hash entry (spec §4), as a verified read cached it. */
  table: Buffer;
  /** An encrypted chunk's cipher (the shard data is its v2 payload); null: stored raw. */
  cipher: SegmentGrant | null;
}

/** The grant of ref's chunk from the first replica in read order, or null (see the file comment). */
export function readGrantOf(env: ChunkEnv, ref: ChunkRef): ReadGrantInfo | null {
  if (ref.fl.layout.kind !== 'replica') return null;
  const cipher = ref.stored === null ? null : segmentGrantOf(env, ref);
  if (ref.stored !== null && cipher === null) return null;
  if (env.backlog.has(ref.ino, ref.chunkIndex)) return null;
  const shardIndex = readOrder(env, ref, ref.diskIds.map((_, i) => i))[0];
  if (env.health.suspect(ref.diskIds[shardIndex])) return null;
  const src = env.shards.grantSource(ref, shardIndex);
  if (src === null) return null;
  const dataLen = shardDataLen(ref);
  const bb = ref.fl.bitrotBlockBytes;
  const blockCount = blockCountFor(dataLen, bb);
  // Pair assertion with the native side (read_grant.cc CheckSpec): one entry per block.
  assert(src.table.length === blockCount * HASH_ENTRY_BYTES, `read grant: ${src.path} table of ${src.table.length} bytes for ${blockCount} blocks`);
  const keyer = new ShardKeyer(env.shards.key, { fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), shardIndex, version: ref.version });
  return {
    chunkIndex: ref.chunkIndex, chunkSizeBytes: ref.fl.chunkSizeBytes, path: src.path, dataAtBytes: dataStartBytes(blockCount),
    blockBytes: bb, shardDataLenBytes: dataLen, logicalLenBytes: ref.logicalLenBytes, key: Buffer.from(keyer.keyFor(0)), table: src.table, cipher,
  };
}
