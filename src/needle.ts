// Needle = [NeedleHeader 32 B | data | zero pad to needle_align] (spec §11.2, DESIGN §3).
// Header, little-endian: magic "RFND" (bytes 52 46 4E 44), flags u32, file_id u64,
// data_len u32, cookie u32, data_crc32c u32, reserved u32 = 0.
import { crc32c } from './crc32c';
import { ErrorSite, FormatError, assert } from './errors';

export const NEEDLE_HEADER_BYTES = 32;
export const NEEDLE_MAGIC = Buffer.from([0x52, 0x46, 0x4e, 0x44]);
export const NEEDLE_ALIGN_DEFAULT = 8;
export const NEEDLE_FLAG_DELETED = 1;
export const NEEDLE_FLAG_COMPRESSED = 2;
export const NEEDLE_FLAG_ENCRYPTED = 4;
const NEEDLE_FLAGS_KNOWN = 7;
const U32_MAX = 0xffffffff;

export interface NeedleHeader {
  flags: number;
  fileId: bigint;
  dataLenBytes: number;
  cookie: number;
  dataCrc32c: number;
}

/** Bytes a needle of dataLen occupies in the container stream (header + data + pad). */
export function needleSpanBytes(dataLenBytes: number, alignBytes = NEEDLE_ALIGN_DEFAULT): number {
  assert(Number.isSafeInteger(dataLenBytes) && dataLenBytes >= 0, 'needle data_len');
  assert(Number.isInteger(alignBytes) && alignBytes > 0, 'needle_align must be positive');
  return Math.ceil((NEEDLE_HEADER_BYTES + dataLenBytes) / alignBytes) * alignBytes;
}

/** Encode one needle (flags 0: this version writes no compressed/encrypted needles). */
export function encodeNeedle(
  fileId: bigint,
  cookie: number,
  data: Uint8Array,
  alignBytes = NEEDLE_ALIGN_DEFAULT,
): Buffer {
  if (data.length > U32_MAX) throw new FormatError('data_len', `${data.length} exceeds u32`);
  if (!Number.isInteger(cookie) || cookie < 0 || cookie > U32_MAX)
    throw new FormatError('cookie', `${cookie} is not a u32`);
  if (fileId < 0n || fileId >= 1n << 64n) throw new FormatError('file_id', `${fileId} is not a u64`);
  const out = Buffer.alloc(needleSpanBytes(data.length, alignBytes)); // zero => pad and reserved are 0
  NEEDLE_MAGIC.copy(out, 0);
  out.writeUInt32LE(0, 4);
  out.writeBigUInt64LE(fileId, 8);
  out.writeUInt32LE(data.length, 16);
  out.writeUInt32LE(cookie, 20);
  out.writeUInt32LE(crc32c(data), 24);
  out.set(data, NEEDLE_HEADER_BYTES);
  assert(decodeNeedleHeader(out).dataLenBytes === data.length, 'needle header round trip');
  return out;
}

/** Parse a needle header; FormatError names magic, flags or the truncation. */
export function decodeNeedleHeader(bytes: Uint8Array, site: ErrorSite = {}): NeedleHeader {
  if (bytes.length < NEEDLE_HEADER_BYTES) {
    throw new FormatError('needle_header', `truncated: ${bytes.length} of ${NEEDLE_HEADER_BYTES} bytes`, site);
  }
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, NEEDLE_HEADER_BYTES);
  if (!b.subarray(0, 4).equals(NEEDLE_MAGIC)) {
    throw new FormatError('magic', `expected "RFND", got ${b.subarray(0, 4).toString('hex')}`, site);
  }
  const flags = b.readUInt32LE(4);
  if ((flags & ~NEEDLE_FLAGS_KNOWN) !== 0)
    throw new FormatError('flags', `unknown needle flags 0x${flags.toString(16)}`, site);
  return {
    flags,
    fileId: b.readBigUInt64LE(8),
    dataLenBytes: b.readUInt32LE(16),
    cookie: b.readUInt32LE(20),
    dataCrc32c: b.readUInt32LE(24),
  };
}
