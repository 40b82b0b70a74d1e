// CRC32C (Castagnoli), used for header_crc32c (spec §3, DESIGN §3) and needle
// data_crc32c (spec §11.2). Node's zlib.crc32 is plain CRC-32, so we use
// @node-rs/crc32's crc32c (check value of "123456789" is 0xE3069283).
import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/** CRC32C of data, optionally continuing from a previous CRC. Unsigned 32-bit. */
export function crc32c(data: Uint8Array, previous = 0): number {
  return nativeCrc32c(Buffer.from(data.buffer, data.byteOffset, data.byteLength), previous) >>> 0;
}
