// GF(2^8) arithmetic for Reed-Solomon "rs-vandermonde" (DESIGN.md §3):
// primitive polynomial x^8+x^4+x^3+x^2+1 (0x11D), generator 2. Same field as
// Backblaze JavaReedSolomon and klauspost/reedsolomon, so parity is byte-identical.
import { assert } from './errors';

export const GF_POLY = 0x11d;

/** LOG[x] for x in 1..255; EXP doubled to 510 entries so mul needs no modulo. */
const EXP = new Uint8Array(510);
const LOG = new Uint8Array(256);

function buildTables(): void {
  let x = 1;
  for (let i = 0; i < 255; i++) {
    EXP[i] = x;
    LOG[x] = i;
    x <<= 1;
    if (x & 0x100) x ^= GF_POLY;
  }
  assert(x === 1, 'generator 2 has order 255 under 0x11D');
  for (let i = 255; i < 510; i++) EXP[i] = EXP[i - 255];
}
buildTables();

export function gfMul(a: number, b: number): number {
  if (a === 0 || b === 0) return 0;
  return EXP[LOG[a] + LOG[b]];
}

export function gfDiv(a: number, b: number): number {
  assert(b !== 0, 'GF(2^8) division by zero');
  if (a === 0) return 0;
  return EXP[LOG[a] + 255 - LOG[b]];
}

/** a^n with 0^0 = 1, as Backblaze's galExp (the Vandermonde row 0 is [1,0,0..]). */
export function gfPow(a: number, n: number): number {
  if (n === 0) return 1;
  if (a === 0) return 0;
  return EXP[(LOG[a] * n) % 255];
}
