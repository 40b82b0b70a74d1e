// The intent log's on-disk structures (DESIGN §5 "The log is a file of its own"; format in
// docs/intent-log.md): the file header and the self-verifying write record. Pure encode and
// decode; the file I/O is store/chunks/intent-log.ts. Little-endian throughout.
import { crc32c } from './crc32c';
import { assert } from './errors';
import { LOG_RECORD_OVERHEAD_BYTES } from './log-record-cipher';

/** The header occupies the file's first block; records start after it. */
export const LOG_BLOCK_BYTES = 4096;
export const LOG_HEADER_MAGIC = 0x484c4643; // 'CFLH'
export const LOG_RECORD_MAGIC = 0x524c4643; // 'CFLR'
export const LOG_FORMAT_VERSION = 1;
/** Bytes of a record before its payload. */
export const RECORD_HEADER_BYTES = 88;
/** A write a record holds is at most this long (a journaled span is at most 1 MiB: store/chunks/intent-span.ts). */
export const RECORD_WRITE_BYTES_MAX = 1 << 20;
/**
 * A record's payload never exceeds this: the longest write, sealed (format byte, nonce and tag of
 * src/log-record-cipher.ts around it, DESIGN §10 "Log records").
 */
export const RECORD_PAYLOAD_BYTES_MAX = RECORD_WRITE_BYTES_MAX + LOG_RECORD_OVERHEAD_BYTES;
/** Flag bit 0: the payload is sealed (encrypting layouts), not the plain bytes written. */
export const RECORD_FLAG_SEALED = 1;
/** Flag bit 1: mtimeNs and ctimeNs hold the times the write committed (else the write stamped none). */
export const RECORD_FLAG_TIMES = 2;
const RECORD_KIND_WRITE = 1;
const UUID_BYTES = 36;
const HEADER_FIELDS_BYTES = 72;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

export interface LogHeader {
  /** The store this log belongs to (config storeUuid). */
  storeUuid: string;
  /** Random per log file: a record of another log never replays here. */
  logId: bigint;
  /** Bumped at every read-write open: records along the chain never go back to an older epoch. */
  epoch: number;
  /** The file's full size (records wrap to LOG_BLOCK_BYTES at this end). */
  sizeBytes: number;
}

export interface LogRecord {
  seq: bigint;
  logId: bigint;
  epoch: number;
  flags: number;
  ino: number;
  chunkIndex: number;
  version: bigint;
  /** Chunk offset of the bytes written, and how many (the plain length, even when sealed). */
  offsetBytes: number;
  lengthBytes: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  /** The bytes written (or, sealed, their ciphertext). */
  payload: Uint8Array;
}

/** Whether times fit a record (far times, beyond ±292 years, are committed in the metadata only). */
export function timesFit(mtimeNs: bigint, ctimeNs: bigint): boolean {
  return mtimeNs >= I64_MIN && mtimeNs <= I64_MAX && ctimeNs >= I64_MIN && ctimeNs <= I64_MAX;
}

export function encodeLogHeader(h: LogHeader): Buffer {
  assert(h.storeUuid.length === UUID_BYTES, 'log header: a store uuid is 36 characters');
  const wholeBlocks = h.sizeBytes % LOG_BLOCK_BYTES === 0 && h.sizeBytes > LOG_BLOCK_BYTES;
  assert(wholeBlocks, 'log header: size is whole blocks past the header');
  const b = Buffer.alloc(LOG_BLOCK_BYTES);
  b.writeUInt32LE(LOG_HEADER_MAGIC, 0);
  b.writeUInt32LE(LOG_FORMAT_VERSION, 8);
  b.write(h.storeUuid, 12, UUID_BYTES, 'latin1');
  b.writeBigUInt64LE(h.logId, 48);
  b.writeUInt32LE(h.epoch, 56);
  b.writeBigUInt64LE(BigInt(h.sizeBytes), 60);
  b.writeUInt32LE(crc32c(b.subarray(8, HEADER_FIELDS_BYTES)), 4);
  return b;
}

/** The header, or a one-line reason why these bytes are not one. */
export function decodeLogHeader(b: Uint8Array): LogHeader | string {
  if (b.length < HEADER_FIELDS_BYTES) return `header is ${b.length} bytes, shorter than ${HEADER_FIELDS_BYTES}`;
  const v = Buffer.from(b.buffer, b.byteOffset, HEADER_FIELDS_BYTES);
  if (v.readUInt32LE(0) !== LOG_HEADER_MAGIC) return 'no intent log header (bad magic)';
  if (v.readUInt32LE(4) !== crc32c(v.subarray(8))) return 'intent log header checksum mismatch';
  const format = v.readUInt32LE(8);
  if (format !== LOG_FORMAT_VERSION) return `intent log format ${format} is not ${LOG_FORMAT_VERSION}`;
  return {
    storeUuid: v.toString('latin1', 12, 12 + UUID_BYTES),
    logId: v.readBigUInt64LE(48),
    epoch: v.readUInt32LE(56),
    sizeBytes: Number(v.readBigUInt64LE(60)),
  };
}

/** The record's bytes: header (its crc32c covers everything after the crc field) and payload. */
export function encodeRecord(r: LogRecord): Buffer {
  const b = Buffer.allocUnsafe(recordBytes(r));
  encodeRecordInto(r, b, 0);
  return b;
}

/** How many bytes r's record takes (header and payload). */
export function recordBytes(r: Pick<LogRecord, 'payload'>): number {
  return RECORD_HEADER_BYTES + r.payload.length;
}

/** encodeRecord written into target at atBytes (a commit's one buffer: no copy); returns its length. */
export function encodeRecordInto(r: LogRecord, target: Buffer, atBytes: number): number {
  assert(r.payload.length <= RECORD_PAYLOAD_BYTES_MAX, 'log record: payload within bounds');
  assert(r.lengthBytes <= RECORD_WRITE_BYTES_MAX, 'log record: a write within bounds');
  assert(r.lengthBytes > 0 && r.offsetBytes >= 0, 'log record: a non-empty write');
  const sealed = (r.flags & RECORD_FLAG_SEALED) !== 0;
  assert(sealed || r.payload.length === r.lengthBytes, 'log record: a plain payload is the bytes written');
  const len = recordBytes(r);
  assert(atBytes >= 0 && atBytes + len <= target.length, 'log record: fits its target');
  const b = target.subarray(atBytes, atBytes + len);
  b.writeUInt32LE(LOG_RECORD_MAGIC, 0);
  b.writeUInt32LE(b.length, 8);
  b.writeUInt16LE(r.flags, 12);
  b.writeUInt16LE(RECORD_KIND_WRITE, 14);
  b.writeBigUInt64LE(r.logId, 16);
  b.writeUInt32LE(r.epoch, 24);
  b.writeUInt32LE(0, 28);
  b.writeBigUInt64LE(r.seq, 32);
  b.writeBigUInt64LE(BigInt(r.ino), 40);
  b.writeUInt32LE(r.chunkIndex, 48);
  b.writeUInt32LE(r.offsetBytes, 52);
  b.writeBigUInt64LE(r.version, 56);
  b.writeBigInt64LE(r.mtimeNs, 64);
  b.writeBigInt64LE(r.ctimeNs, 72);
  b.writeUInt32LE(r.lengthBytes, 80);
  b.writeUInt32LE(r.payload.length, 84);
  b.set(r.payload, RECORD_HEADER_BYTES);
  b.writeUInt32LE(crc32c(b.subarray(8)), 4);
  return len;
}

/** How many bytes a record at the start of b says it has (to read the rest), or null: no record there. */
export function recordLength(b: Uint8Array): number | null {
  if (b.length < RECORD_HEADER_BYTES) return null;
  const v = Buffer.from(b.buffer, b.byteOffset, RECORD_HEADER_BYTES);
  if (v.readUInt32LE(0) !== LOG_RECORD_MAGIC) return null;
  const len = v.readUInt32LE(8);
  return len >= RECORD_HEADER_BYTES && len <= RECORD_HEADER_BYTES + RECORD_PAYLOAD_BYTES_MAX ? len : null;
}

/**
 * The record at the start of b if it verifies (magic, length, checksum, kind), else null: a torn
 * write, padding, or bytes of something else. Whether it is the record replay expects next (log
 * id, epoch, sequence number) is the caller's question.
 */
export function decodeRecord(b: Uint8Array): LogRecord | null {
  const len = recordLength(b);
  if (len === null || b.length < len) return null;
  const v = Buffer.from(b.buffer, b.byteOffset, len);
  if (v.readUInt32LE(4) !== crc32c(v.subarray(8))) return null;
  if (v.readUInt16LE(14) !== RECORD_KIND_WRITE) return null;
  const payloadLen = v.readUInt32LE(84);
  if (RECORD_HEADER_BYTES + payloadLen !== len) return null;
  return {
    flags: v.readUInt16LE(12),
    logId: v.readBigUInt64LE(16),
    epoch: v.readUInt32LE(24),
    seq: v.readBigUInt64LE(32),
    ino: Number(v.readBigUInt64LE(40)),
    chunkIndex: v.readUInt32LE(48),
    offsetBytes: v.readUInt32LE(52),
    version: v.readBigUInt64LE(56),
    mtimeNs: v.readBigInt64LE(64),
    ctimeNs: v.readBigInt64LE(72),
    lengthBytes: v.readUInt32LE(80),
    payload: v.subarray(RECORD_HEADER_BYTES),
  };
}

/** Position rounded up to the next block (a commit starts on a block boundary). */
export function alignUp(positionBytes: number): number {
  return Math.ceil(positionBytes / LOG_BLOCK_BYTES) * LOG_BLOCK_BYTES;
}
