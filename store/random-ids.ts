// Random ids that must not repeat by chance: placement seeds (spec §5), needle cookies (spec §11.2),
// names of temporary shard files. Drawn from one block of crypto.randomBytes at a time: in this VM a
// call costs ~14 us whatever its size (measured: randomBytes(8) in a loop, 4 Dec), a seventh of a
// create's database transaction. Encryption nonces do not come from here (src/ draws
// its own per chunk).
import * as crypto from 'node:crypto';

/** Bytes drawn at once: 512 seeds or 1,024 cookies per call. */
const POOL_BYTES = 4096;

let pool = Buffer.alloc(0);
let atBytes = 0;

function take(lengthBytes: number): Buffer {
  if (atBytes + lengthBytes > pool.length) {
    pool = crypto.randomBytes(POOL_BYTES);
    atBytes = 0;
  }
  const out = pool.subarray(atBytes, atBytes + lengthBytes);
  atBytes += lengthBytes;
  return out;
}

/** A random unsigned 64-bit number. */
export function randomU64(): bigint {
  return take(8).readBigUInt64LE(0);
}

/** A random unsigned 32-bit number. */
export function randomU32(): number {
  return take(4).readUInt32LE(0);
}
