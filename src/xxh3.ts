// xxh3_64 with seed 0, used for the §7 directory fan-out and DESIGN §3 placement.
// xxhash-addon returns the u64 as 8 big-endian bytes.
import { XXHash3 } from 'xxhash-addon';

export function xxh3_64(data: Uint8Array): bigint {
  const digest = XXHash3.hash(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  return digest.readBigUInt64BE(0);
}

/** Little-endian u64 bytes, the encoding DESIGN §3 fixes for hash inputs. */
export function u64le(value: bigint): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(BigInt.asUintN(64, value));
  return out;
}
