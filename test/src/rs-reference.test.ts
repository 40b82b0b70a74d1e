// Reference Reed-Solomon codec (DESIGN.md §3) against klauspost/reedsolomon's
// known answers (testdata/rs/kat.json) and the field axioms.
import test from 'ava';
import { FormatError, UnrecoverableError } from '../../src/errors';
import { gfDiv, gfMul, gfPow } from '../../src/gf256';
import { codingMatrix } from '../../src/rs-matrix';
import { rsReferenceCodec } from '../../src/rs-reference';
import { hexBytes, loadKat, subsetsUpTo } from '../helpers/rs-fixtures';

const hexRow = (row: Uint8Array): string => Buffer.from(row).toString('hex');

test('GF(2^8) 0x11D: reduction, inverses, distributivity', (t) => {
  t.is(gfMul(0x80, 2), 0x1d); // x^8 = x^4+x^3+x^2+1
  t.is(gfMul(0x53, 0xca), 0x8f); // 0x11D field, not AES's 0x11B (which gives 0x01)
  for (let a = 1; a < 256; a++) {
    t.is(gfMul(a, gfDiv(1, a)), 1, `inverse of ${a}`);
    t.is(gfPow(a, 255), 1, `a^255 = 1 for ${a}`);
  }
  for (let a = 0; a < 256; a += 7) {
    for (let b = 0; b < 256; b += 5) {
      t.is(gfMul(a, b), gfMul(b, a));
      t.is(gfMul(a, b ^ 0x5a), gfMul(a, b) ^ gfMul(a, 0x5a));
    }
  }
  t.is(gfPow(0, 0), 1);
  t.is(gfPow(0, 3), 0);
});

test('coding matrix 4+2: identity on top, parity rows 1b 1c 12 14 / 1c 1b 14 12', (t) => {
  const rows = codingMatrix(4, 2).map(hexRow);
  t.deepEqual(rows, ['01000000', '00010000', '00000100', '00000001', '1b1c1214', '1c1b1412']);
});

test('coding matrix parity rows equal klauspost/reedsolomon for every fixture (k, m)', (t) => {
  for (const v of loadKat()) {
    const parityRows = codingMatrix(v.k, v.m)
      .slice(v.k)
      .map((row) => Array.from(row));
    t.deepEqual(parityRows, v.parity_rows, `k=${v.k} m=${v.m}`);
  }
});

test('encode is byte-identical to klauspost/reedsolomon', (t) => {
  let checked = 0;
  for (const v of loadKat()) {
    const codec = rsReferenceCodec(v.k, v.m);
    for (const c of v.cases) {
      const parity = codec.encode(c.data.map(hexBytes));
      t.deepEqual(
        parity.map((p) => p.toString('hex')),
        c.parity,
        `k=${v.k} m=${v.m} size=${c.shard_bytes}`,
      );
      checked++;
    }
  }
  t.true(checked >= 30);
});

test('reconstruct rebuilds every erasure set of up to m shards', (t) => {
  for (const v of loadKat().filter((x) => x.k + x.m <= 12)) {
    const codec = rsReferenceCodec(v.k, v.m);
    const c = v.cases[1];
    const all = [...c.data, ...c.parity].map(hexBytes);
    for (const lost of subsetsUpTo(v.k + v.m, v.m)) {
      const shards = all.map((s, i) => (lost.includes(i) ? null : Buffer.from(s)));
      const rebuilt = codec.reconstruct(shards);
      t.deepEqual(
        rebuilt.map((s) => s.toString('hex')),
        all.map((s) => s.toString('hex')),
        `k=${v.k} m=${v.m} lost=${lost}`,
      );
    }
  }
});

test('more than m missing is an UnrecoverableError naming the shards', (t) => {
  const codec = rsReferenceCodec(4, 2);
  const data = [1, 2, 3, 4].map((x) => Buffer.alloc(8, x));
  const all = [...data, ...codec.encode(data)];
  const shards = all.map((s, i) => (i === 0 || i === 2 || i === 5 ? null : s));
  const error = t.throws(() => codec.reconstruct(shards), { instanceOf: UnrecoverableError });
  t.deepEqual(error?.failedShards, [0, 2, 5]);
});

test('unequal lengths and wrong shard counts are FormatErrors', (t) => {
  const codec = rsReferenceCodec(3, 2);
  const bad = [Buffer.alloc(4), Buffer.alloc(4), Buffer.alloc(5)];
  t.is(t.throws(() => codec.encode(bad), { instanceOf: FormatError })?.field, 'shard_length');
  t.is(t.throws(() => codec.encode(bad.slice(0, 2)), { instanceOf: FormatError })?.field, 'shard_count');
  const shards = [Buffer.alloc(4), null, Buffer.alloc(4), Buffer.alloc(3), Buffer.alloc(4)];
  t.is(t.throws(() => codec.reconstruct(shards), { instanceOf: FormatError })?.field, 'shard_length');
  t.throws(() => rsReferenceCodec(0, 2), { instanceOf: FormatError });
  t.throws(() => rsReferenceCodec(200, 57), { instanceOf: FormatError });
});

test('zero-length shards encode and reconstruct to zero-length shards', (t) => {
  const codec = rsReferenceCodec(2, 2);
  const parity = codec.encode([Buffer.alloc(0), Buffer.alloc(0)]);
  t.deepEqual(
    parity.map((p) => p.length),
    [0, 0],
  );
  const rebuilt = codec.reconstruct([null, Buffer.alloc(0), null, Buffer.alloc(0)]);
  t.deepEqual(
    rebuilt.map((p) => p.length),
    [0, 0, 0, 0],
  );
});
