// Shard header (spec §3, §3.1) and the format_version gate (spec §12).
// 4096 bytes, little-endian. header_crc32c covers raw bytes [16, 4096) including
// the reserved ones (DESIGN §3). Every malformed field is a FormatError naming it.
import { crc32c } from './crc32c';
import { ErrorSite, FormatError, assert } from './errors';
import { shardDataLenBytes } from './mapping';
import { blockCountFor } from './region';

export const HEADER_BYTES = 4096;
export const SHARD_MAGIC = 'RFSHARD1';
export const FORMAT_VERSION = 1;

export const FLAG_MODE_EC = 1;
export const FLAG_COMPRESSED = 2;
export const FLAG_ENCRYPTED = 4;
export const FLAG_LAST_BLOCK_SHORT = 8;
export const FLAG_PARITY_SHARD = 16;
const FLAGS_KNOWN = 0x1f; // spec §3.1: bits 5..15 reserved

export const EC_ALGO_NONE = 0;
export const EC_ALGO_RS_VANDERMONDE = 1;
export const CSUM_ALGO_HIGHWAY256 = 1;

const PAGE_BYTES = 4096;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const EC_SHARDS_MAX = 256; // GF(2^8) Reed-Solomon: k+m <= 256
const CRC_START = 16;
const MAGIC_BYTES = Buffer.from(SHARD_MAGIC, 'ascii');

// Field offsets (spec §3 table).
const OFF = {
  magic: 0,
  formatVersion: 8,
  flags: 10,
  crc: 12,
  fileId: 16,
  chunkIndex: 24,
  version: 32,
  shardIndex: 40,
  ecK: 42,
  ecM: 44,
  ecAlgo: 46,
  csumAlgo: 47,
  bitrotBlock: 48,
  shardDataLen: 52,
  chunkLogicalLen: 60,
  blockCount: 68,
  created: 72,
  ecBlockSize: 80,
  placementSeed: 88,
  clusterMapEpoch: 96,
  chunkSize: 104,
  contentLen: 112,
} as const;

export interface ShardHeader {
  formatVersion: number;
  flags: number;
  fileId: bigint;
  chunkIndex: bigint;
  version: bigint;
  shardIndex: number;
  ecK: number;
  ecM: number;
  ecAlgo: number;
  csumAlgo: number;
  bitrotBlockBytes: number;
  shardDataLenBytes: bigint;
  chunkLogicalLenBytes: bigint;
  blockCount: number;
  createdUnixNanos: bigint;
  ecBlockSizeBytes: bigint;
  placementSeed: bigint;
  clusterMapEpoch: bigint;
  chunkSizeBytes: bigint;
  contentLenBytes: bigint;
}

/** Serialize a header; validates first, computes header_crc32c, reserved bytes zero. */
export function encodeHeader(h: ShardHeader): Buffer {
  validateHeader(h);
  const out = Buffer.alloc(HEADER_BYTES); // zero => reserved [120, 4096) is zero (spec §3)
  MAGIC_BYTES.copy(out, OFF.magic);
  out.writeUInt16LE(h.formatVersion, OFF.formatVersion);
  out.writeUInt16LE(h.flags, OFF.flags);
  out.writeBigUInt64LE(h.fileId, OFF.fileId);
  out.writeBigUInt64LE(h.chunkIndex, OFF.chunkIndex);
  out.writeBigUInt64LE(h.version, OFF.version);
  out.writeUInt16LE(h.shardIndex, OFF.shardIndex);
  out.writeUInt16LE(h.ecK, OFF.ecK);
  out.writeUInt16LE(h.ecM, OFF.ecM);
  out.writeUInt8(h.ecAlgo, OFF.ecAlgo);
  out.writeUInt8(h.csumAlgo, OFF.csumAlgo);
  out.writeUInt32LE(h.bitrotBlockBytes, OFF.bitrotBlock);
  out.writeBigUInt64LE(h.shardDataLenBytes, OFF.shardDataLen);
  out.writeBigUInt64LE(h.chunkLogicalLenBytes, OFF.chunkLogicalLen);
  out.writeUInt32LE(h.blockCount, OFF.blockCount);
  out.writeBigUInt64LE(h.createdUnixNanos, OFF.created);
  out.writeBigUInt64LE(h.ecBlockSizeBytes, OFF.ecBlockSize);
  out.writeBigUInt64LE(h.placementSeed, OFF.placementSeed);
  out.writeBigUInt64LE(h.clusterMapEpoch, OFF.clusterMapEpoch);
  out.writeBigUInt64LE(h.chunkSizeBytes, OFF.chunkSize);
  out.writeBigUInt64LE(h.contentLenBytes, OFF.contentLen);
  out.writeUInt32LE(crc32c(out.subarray(CRC_START)), OFF.crc);
  return out;
}

/** Parse and validate a header (spec §3, §12). Throws FormatError naming the field. */
export function decodeHeader(bytes: Uint8Array, site: ErrorSite = {}): ShardHeader {
  if (bytes.length < HEADER_BYTES) {
    throw new FormatError('header', `truncated: ${bytes.length} of ${HEADER_BYTES} bytes`, site);
  }
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  if (!b.subarray(0, 8).equals(MAGIC_BYTES)) {
    throw new FormatError('magic', `expected "${SHARD_MAGIC}", got ${b.subarray(0, 8).toString('hex')}`, site);
  }
  // spec §12: the version gates all parsing, so it is checked before the CRC.
  const formatVersion = b.readUInt16LE(OFF.formatVersion);
  if (formatVersion !== FORMAT_VERSION) {
    throw new FormatError(
      'format_version',
      `unknown format_version ${formatVersion} (this reader understands ${FORMAT_VERSION})`,
      site,
    );
  }
  const stored = b.readUInt32LE(OFF.crc);
  const computed = crc32c(b.subarray(CRC_START));
  if (stored !== computed) {
    throw new FormatError('header_crc32c', `stored ${hex32(stored)} != computed ${hex32(computed)}`, site);
  }
  const h: ShardHeader = {
    formatVersion,
    flags: b.readUInt16LE(OFF.flags),
    fileId: b.readBigUInt64LE(OFF.fileId),
    chunkIndex: b.readBigUInt64LE(OFF.chunkIndex),
    version: b.readBigUInt64LE(OFF.version),
    shardIndex: b.readUInt16LE(OFF.shardIndex),
    ecK: b.readUInt16LE(OFF.ecK),
    ecM: b.readUInt16LE(OFF.ecM),
    ecAlgo: b.readUInt8(OFF.ecAlgo),
    csumAlgo: b.readUInt8(OFF.csumAlgo),
    bitrotBlockBytes: b.readUInt32LE(OFF.bitrotBlock),
    shardDataLenBytes: b.readBigUInt64LE(OFF.shardDataLen),
    chunkLogicalLenBytes: b.readBigUInt64LE(OFF.chunkLogicalLen),
    blockCount: b.readUInt32LE(OFF.blockCount),
    createdUnixNanos: b.readBigUInt64LE(OFF.created),
    ecBlockSizeBytes: b.readBigUInt64LE(OFF.ecBlockSize),
    placementSeed: b.readBigUInt64LE(OFF.placementSeed),
    clusterMapEpoch: b.readBigUInt64LE(OFF.clusterMapEpoch),
    chunkSizeBytes: b.readBigUInt64LE(OFF.chunkSize),
    contentLenBytes: b.readBigUInt64LE(OFF.contentLen),
  };
  validateHeader(h, site);
  return h;
}

/** Semantic checks shared by encode (before write) and decode (after read). */
export function validateHeader(h: ShardHeader, site: ErrorSite = {}): void {
  const fail = (field: string, msg: string): never => {
    throw new FormatError(field, msg, site);
  };
  checkRanges(h, fail);
  if (h.formatVersion !== FORMAT_VERSION) fail('format_version', `unknown format_version ${h.formatVersion}`);
  if ((h.flags & ~FLAGS_KNOWN) !== 0) fail('flags', `reserved bits set: 0x${h.flags.toString(16)}`);
  if (h.csumAlgo !== CSUM_ALGO_HIGHWAY256) fail('csum_algo', `unknown csum_algo ${h.csumAlgo}`);
  if (h.bitrotBlockBytes <= 0 || h.bitrotBlockBytes % PAGE_BYTES !== 0) {
    fail('bitrot_block', `${h.bitrotBlockBytes} is not a positive multiple of ${PAGE_BYTES}`);
  }
  if (h.shardDataLenBytes > SAFE) fail('shard_data_len', 'too large');
  const expectedBlocks = blockCountFor(h.shardDataLenBytes, h.bitrotBlockBytes);
  if (h.blockCount !== expectedBlocks) {
    fail(
      'block_count',
      `${h.blockCount} != ceil(shard_data_len ${h.shardDataLenBytes} / bitrot_block ${h.bitrotBlockBytes}) = ${expectedBlocks}`,
    );
  }
  const short = h.shardDataLenBytes % BigInt(h.bitrotBlockBytes) !== 0n;
  if (((h.flags & FLAG_LAST_BLOCK_SHORT) !== 0) !== short) {
    fail('flags', `last_block_short must be ${short ? 1 : 0} for shard_data_len ${h.shardDataLenBytes}`);
  }
  validateErasure(h, fail);
  if ((h.flags & (FLAG_COMPRESSED | FLAG_ENCRYPTED)) === 0 && h.contentLenBytes !== h.chunkLogicalLenBytes) {
    fail('content_len', `${h.contentLenBytes} != chunk_logical_len ${h.chunkLogicalLenBytes} without a transform`);
  }
}

// Replica: k=1, m=0, algo=0 (DESIGN §3). EC: 1<=k, 1<=m, k+m<=256, algo=1.
function validateErasure(h: ShardHeader, fail: (field: string, msg: string) => never): void {
  const ec = (h.flags & FLAG_MODE_EC) !== 0;
  const parity = (h.flags & FLAG_PARITY_SHARD) !== 0;
  if (!ec) {
    if (h.ecK !== 1) fail('ec_k', `replica shard must have ec_k=1, got ${h.ecK}`);
    if (h.ecM !== 0) fail('ec_m', `replica shard must have ec_m=0, got ${h.ecM}`);
    if (h.ecAlgo !== EC_ALGO_NONE) fail('ec_algo', `replica shard must have ec_algo=0, got ${h.ecAlgo}`);
    if (parity) fail('flags', 'parity_shard set on a replica shard');
    if (h.shardDataLenBytes !== h.chunkLogicalLenBytes)
      fail('shard_data_len', 'replica shard_data_len != chunk_logical_len');
    return;
  }
  if (h.ecK < 1) fail('ec_k', `ec_k ${h.ecK} out of range (>= 1)`);
  if (h.ecM < 1) fail('ec_m', `ec_m ${h.ecM} out of range (>= 1 for EC)`);
  if (h.ecK + h.ecM > EC_SHARDS_MAX) fail('ec_m', `ec_k+ec_m ${h.ecK + h.ecM} > ${EC_SHARDS_MAX}`);
  if (h.ecAlgo !== EC_ALGO_RS_VANDERMONDE) fail('ec_algo', `EC shard must have ec_algo=1, got ${h.ecAlgo}`);
  if (h.shardIndex >= h.ecK + h.ecM) fail('shard_index', `${h.shardIndex} >= ec_k+ec_m ${h.ecK + h.ecM}`);
  if (parity !== h.shardIndex >= h.ecK)
    fail('flags', `parity_shard must be ${parity ? 0 : 1} for shard_index ${h.shardIndex}`);
  if (h.ecBlockSizeBytes === 0n || h.ecBlockSizeBytes > SAFE)
    fail('ec_block_size', `${h.ecBlockSizeBytes} out of range for EC`);
  if (h.chunkLogicalLenBytes > SAFE) fail('chunk_logical_len', 'too large');
  const expected = shardDataLenBytes({
    k: h.ecK,
    m: h.ecM,
    ecBlockSizeBytes: Number(h.ecBlockSizeBytes),
    chunkLogicalLenBytes: Number(h.chunkLogicalLenBytes),
  });
  if (h.shardDataLenBytes !== BigInt(expected)) {
    fail(
      'shard_data_len',
      `${h.shardDataLenBytes} != ${expected} from chunk_logical_len, ec_block_size and ec_k (spec §6)`,
    );
  }
}

function checkRanges(h: ShardHeader, fail: (field: string, msg: string) => never): void {
  const u = (field: string, v: number, bits: number): void => {
    if (!Number.isInteger(v) || v < 0 || v >= 2 ** bits) fail(field, `${v} is not a u${bits}`);
  };
  const u64 = (field: string, v: bigint): void => {
    if (typeof v !== 'bigint' || v < 0n || v >= 1n << 64n) fail(field, `${String(v)} is not a u64`);
  };
  u('format_version', h.formatVersion, 16);
  u('flags', h.flags, 16);
  u('shard_index', h.shardIndex, 16);
  u('ec_k', h.ecK, 16);
  u('ec_m', h.ecM, 16);
  u('ec_algo', h.ecAlgo, 8);
  u('csum_algo', h.csumAlgo, 8);
  u('bitrot_block', h.bitrotBlockBytes, 32);
  u('block_count', h.blockCount, 32);
  u64('file_id', h.fileId);
  u64('chunk_index', h.chunkIndex);
  u64('version', h.version);
  u64('shard_data_len', h.shardDataLenBytes);
  u64('chunk_logical_len', h.chunkLogicalLenBytes);
  u64('created_unix_nanos', h.createdUnixNanos);
  u64('ec_block_size', h.ecBlockSizeBytes);
  u64('placement_seed', h.placementSeed);
  u64('cluster_map_epoch', h.clusterMapEpoch);
  u64('chunk_size', h.chunkSizeBytes);
  u64('content_len', h.contentLenBytes);
}

function hex32(v: number): string {
  assert(v >= 0, 'hex32: negative');
  return '0x' + v.toString(16).padStart(8, '0');
}
