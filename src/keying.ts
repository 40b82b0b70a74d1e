// Position-bound HighwayHash-256 keys (spec §4.1):
//   key0 = K0 ^ file_id, key1 = K1 ^ chunk_index,
//   key2 = K2 ^ ((shard_index as u64) << 32 | block_index), key3 = K3 ^ version
// Each key word is little-endian in the 32-byte key (DESIGN §3).
import { ErrorSite, FormatError, assert } from './errors';

export const BITROT_KEY_BYTES = 32;

export interface BitrotKey {
  k0: bigint;
  k1: bigint;
  k2: bigint;
  k3: bigint;
}

/** Where a shard block lives; binds its hash to (file, chunk, shard, version). */
export interface BlockPosition {
  fileId: bigint;
  chunkIndex: bigint;
  shardIndex: number;
  version: bigint;
}

/** Parse the cluster key: 64 hex chars or 32 bytes, K0..K3 each 8 little-endian bytes. */
export function parseBitrotKey(hex64: string | Uint8Array, site: ErrorSite = {}): BitrotKey {
  let bytes: Buffer;
  if (typeof hex64 === 'string') {
    if (!/^[0-9a-fA-F]{64}$/.test(hex64)) throw new FormatError('bitrot_key', 'must be 64 hex characters', site);
    bytes = Buffer.from(hex64, 'hex');
  } else {
    bytes = Buffer.from(hex64.buffer, hex64.byteOffset, hex64.byteLength);
  }
  if (bytes.length !== BITROT_KEY_BYTES) {
    throw new FormatError('bitrot_key', `must be ${BITROT_KEY_BYTES} bytes, got ${bytes.length}`, site);
  }
  return {
    k0: bytes.readBigUInt64LE(0),
    k1: bytes.readBigUInt64LE(8),
    k2: bytes.readBigUInt64LE(16),
    k3: bytes.readBigUInt64LE(24),
  };
}

/** The 32 key bytes (inverse of parseBitrotKey). */
export function bitrotKeyBytes(key: BitrotKey): Buffer {
  const out = Buffer.alloc(BITROT_KEY_BYTES);
  out.writeBigUInt64LE(key.k0, 0);
  out.writeBigUInt64LE(key.k1, 8);
  out.writeBigUInt64LE(key.k2, 16);
  out.writeBigUInt64LE(key.k3, 24);
  return out;
}

/** Key for one block (spec §4.1). Allocates; hot loops use ShardKeyer instead. */
export function blockKey(key: BitrotKey, pos: BlockPosition, blockIndex: number): Buffer {
  return new ShardKeyer(key, pos).keyFor(blockIndex);
}

/**
 * Per-shard key builder: everything but key2's low 32 bits is fixed for a shard,
 * so the key is built once and only block_index is patched per block.
 * keyFor() returns the same internal buffer each call (valid until the next call).
 */
export class ShardKeyer {
  private readonly keyBytes = Buffer.alloc(BITROT_KEY_BYTES);
  private readonly k2Low: number;

  constructor(key: BitrotKey, pos: BlockPosition) {
    assert(Number.isInteger(pos.shardIndex) && pos.shardIndex >= 0 && pos.shardIndex < 0x10000, 'shard_index is u16');
    const mask = (1n << 64n) - 1n;
    this.keyBytes.writeBigUInt64LE((key.k0 ^ pos.fileId) & mask, 0);
    this.keyBytes.writeBigUInt64LE((key.k1 ^ pos.chunkIndex) & mask, 8);
    this.keyBytes.writeBigUInt64LE((key.k2 ^ (BigInt(pos.shardIndex) << 32n)) & mask, 16);
    this.keyBytes.writeBigUInt64LE((key.k3 ^ pos.version) & mask, 24);
    this.k2Low = this.keyBytes.readUInt32LE(16);
  }

  keyFor(blockIndex: number): Buffer {
    assert(Number.isInteger(blockIndex) && blockIndex >= 0 && blockIndex <= 0xffffffff, 'block_index is u32');
    this.keyBytes.writeUInt32LE((this.k2Low ^ blockIndex) >>> 0, 16);
    return this.keyBytes;
  }
}
