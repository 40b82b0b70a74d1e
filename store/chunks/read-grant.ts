// What a read grant of one chunk carries (DESIGN §6; native/fuse3/read_grant.h):
// enough for the transport to answer reads of a clean chunk in C, each block still verified
// against its position-bound hash (spec §4.1, §9). Made only for what a read through the store
// would answer from the same shards with nothing laid over them: chunks stored raw or encrypted
// alone in cipher format v2 (then the grant carries the segment size, nonce base and data
// key, and C opens the segments, each tag checked; compressed chunks are read in JS), no pending
// intent, no fault injected, each granted shard's header and hash table cached by a read that
// verified them. A replica chunk is granted on the first replica in read order; an EC chunk on its
// data shards (spec §6 fast path), each granted once a JS read has cached it and its disk is not
// suspect (a read needing another goes to JS, which reads or reconstructs it, then re-grants).
// Everything that changes any of this tells the store (Store.onReadChange), and the transport
// voids every grant then.
import { assert } from '../../src/errors';
import { ShardKeyer } from '../../src/keying';
import { HASH_ENTRY_BYTES, blockCountFor, dataStartBytes } from '../../src/region';
import { shardDataLenBytes } from '../../src/mapping';
import { ChunkEnv, readOrder } from './chunk-env';
import { ChunkRef, ecGeometry, payloadLen, shardDataLen } from './chunk-ref';
import { SegmentGrant, segmentGrantOf } from './segment-read';

/** One granted shard: its file and the hash table a verified read cached. */
export interface GrantShard {
  path: string;
  /** Block 0's position-bound key (spec §4.1); block i XORs i into key2's low word. */
  key: Buffer;
  /** Every block's hash entry (spec §4), as a verified read cached it. */
  table: Buffer;
}

export interface ReadGrantInfo {
  chunkIndex: number;
  chunkSizeBytes: number;
  /** Shard file offset of block 0's data (spec §2 region 3): the same in every shard of the chunk. */
  dataAtBytes: number;
  blockBytes: number;
  shardDataLenBytes: number;
  logicalLenBytes: number;
  /** The stored payload (chunk_logical_len): the content, or its v2 payload. */
  payloadLenBytes: number;
  /** EC(k,m): k and ec_block_size (spec §6); null: a replica chunk. */
  ec: { k: number; ecBlockSizeBytes: number } | null;
  /** Replica: the verified replica; EC: data shards 0..k-1, null where not granted. */
  shards: Array<GrantShard | null>;
  /** An encrypted chunk's cipher (the payload is v2); null: stored raw. */
  cipher: SegmentGrant | null;
}

/** Shard i of ref as a grant needs it, or null (not cached by a verified read, disk suspect or gated). */
function grantShardOf(env: ChunkEnv, ref: ChunkRef, shardIndex: number, blockCount: number): GrantShard | null {
  if (env.health.suspect(ref.diskIds[shardIndex])) return null;
  const src = env.shards.grantSource(ref, shardIndex);
  if (src === null) return null;
  // Pair assertion with the native side (read_grant.cc CheckSpec): one entry per block.
  assert(
    src.table.length === blockCount * HASH_ENTRY_BYTES,
    `read grant: ${src.path} table of ${src.table.length} bytes for ${blockCount} blocks`,
  );
  const keyer = new ShardKeyer(env.shards.key, {
    fileId: ref.fileId,
    chunkIndex: BigInt(ref.chunkIndex),
    shardIndex,
    version: ref.version,
  });
  return { path: src.path, key: Buffer.from(keyer.keyFor(0)), table: src.table };
}

/** The grant of ref's chunk, or null (see the file comment). */
export function readGrantOf(env: ChunkEnv, ref: ChunkRef): ReadGrantInfo | null {
  const cipher = ref.stored === null ? null : segmentGrantOf(env, ref);
  if (ref.stored !== null && cipher === null) return null;
  if (env.backlog.has(ref.ino, ref.chunkIndex)) return null;
  const dataLen = shardDataLen(ref);
  const bb = ref.fl.bitrotBlockBytes;
  const blockCount = blockCountFor(dataLen, bb);
  const l = ref.fl.layout;
  let shards: Array<GrantShard | null>;
  if (l.kind === 'replica') {
    const one = grantShardOf(
      env,
      ref,
      readOrder(
        env,
        ref,
        ref.diskIds.map((_, i) => i),
      )[0],
      blockCount,
    );
    if (one === null) return null;
    shards = [one];
  } else {
    // Pair assertion with read_grant.cc CheckShape: every shard holds the §6 shard_data_len.
    assert(dataLen === shardDataLenBytes(ecGeometry(ref)), `read grant: EC shard_data_len ${dataLen}`);
    shards = Array.from({ length: l.k }, (_, i) => grantShardOf(env, ref, i, blockCount));
    if (shards.every((s) => s === null)) return null;
  }
  return {
    chunkIndex: ref.chunkIndex,
    chunkSizeBytes: ref.fl.chunkSizeBytes,
    dataAtBytes: dataStartBytes(blockCount),
    blockBytes: bb,
    shardDataLenBytes: dataLen,
    logicalLenBytes: ref.logicalLenBytes,
    payloadLenBytes: payloadLen(ref),
    ec: l.kind === 'ec' ? { k: l.k, ecBlockSizeBytes: ref.fl.ecBlockSizeBytes } : null,
    shards,
    cipher,
  };
}
