// HighwayHash (csum_algo 1, spec §4): Google's published golden values and a
// cross-check of the 64-bit function against Google's C++ (npm `highwayhash`).
import test from 'ava';
import { highway256, highway64, loadHighway } from '../../src/highway';
import { prng, randomBytes } from './fixtures';
import { EXPECTED_256, KEY, input } from '../helpers/highway-vectors';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const googleHighway = require('highwayhash') as { asString(key: Buffer, data: Buffer): string };

test.before(async () => loadHighway());

// kExpected64[n] from the same file.
const EXPECTED_64: Array<[number, string]> = [
  [0, '907A56DE22C26E53'],
  [1, '7EAB43AAC7CDDD78'],
  [64, '75542C5D4CD2A6FF'],
];

function digestWords(d: Buffer): string[] {
  return [0, 8, 16, 24].map((o) => d.readBigUInt64LE(o).toString(16).toUpperCase().padStart(16, '0'));
}

test("HighwayHash-256 matches Google's published golden values", (t) => {
  for (const [n, words] of EXPECTED_256) t.deepEqual(digestWords(highway256(KEY, input(n))), words, `size ${n}`);
});

test("HighwayHash-64 matches Google's published golden values", (t) => {
  for (const [n, word] of EXPECTED_64) {
    t.is(highway64(KEY, input(n)).readBigUInt64LE(0).toString(16).toUpperCase().padStart(16, '0'), word, `size ${n}`);
  }
});

test('HighwayHash-64 agrees with Google C++ (npm highwayhash) on random inputs', (t) => {
  const rand = prng(2024);
  for (let i = 0; i < 300; i++) {
    const key = randomBytes(rand, 32);
    const n = i < 100 ? i : rand() % 70000;
    const data = randomBytes(rand, n);
    t.is(highway64(key, data).readBigUInt64LE(0).toString(), googleHighway.asString(key, data), `len ${n}`);
  }
});

test('digest depends on every key word', (t) => {
  const base = highway256(KEY, input(40));
  for (let w = 0; w < 4; w++) {
    const k = Buffer.from(KEY);
    k[w * 8] ^= 1;
    t.false(highway256(k, input(40)).equals(base), `key word ${w}`);
  }
});
