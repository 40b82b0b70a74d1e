// Fixtures for the Reed-Solomon tests: the klauspost/reedsolomon known-answer
// file (testdata/rs/kat.json, made by scripts/tools/rs-kat/main.go) and a seeded PRNG.
import { mulberry32Float } from '../../src/prng';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TESTDATA } from './root';

export interface KatCase {
  shard_bytes: number;
  data: string[];
  parity: string[];
}

export interface KatVector {
  k: number;
  m: number;
  parity_rows: number[][];
  cases: KatCase[];
}

export function loadKat(): KatVector[] {
  return JSON.parse(fs.readFileSync(path.join(TESTDATA, 'rs', 'kat.json'), 'utf8')) as KatVector[];
}

export const hexBytes = (hex: string): Buffer => Buffer.from(hex, 'hex');

/** mulberry32 as floats: every failing case can be replayed from its seed. */
export const prng = mulberry32Float;

export function randomInt(rand: () => number, lo: number, hi: number): number {
  return lo + Math.floor(rand() * (hi - lo + 1));
}

export function randomBytes(rand: () => number, lengthBytes: number): Buffer {
  const out = Buffer.alloc(lengthBytes);
  for (let i = 0; i < lengthBytes; i++) out[i] = Math.floor(rand() * 256);
  return out;
}

/** A random subset of 0..n-1 with exactly `count` members, ascending. */
export function randomSubset(rand: () => number, n: number, count: number): number[] {
  const pool = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, count).sort((a, b) => a - b);
}

/** Every subset of 0..n-1 with at most `countMax` members. */
export function subsetsUpTo(n: number, countMax: number): number[][] {
  const out: number[][] = [];
  for (let mask = 0; mask < 1 << n; mask++) {
    const members = Array.from({ length: n }, (_, i) => i).filter((i) => mask & (1 << i));
    if (members.length <= countMax) out.push(members);
  }
  return out;
}
