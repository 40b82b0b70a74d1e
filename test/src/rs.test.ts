// Fast SIMD Reed-Solomon codec (DESIGN.md §3) against klauspost/reedsolomon's
// known answers and, property-style, against the pure-TS reference codec, at
// every kernel level this CPU supports (GFNI, AVX-512, AVX2, SSSE3, scalar).
import test from 'ava';
import { FormatError, UnrecoverableError } from '../../src/errors';
import { codingMatrix, rsCodec, rsDetectedSimdLevel, rsSimdLevel, setRsSimdLevel } from '../../src/rs';
import { rsReferenceCodec } from '../../src/rs-reference';
import { hexBytes, loadKat, prng, randomBytes, randomInt, randomSubset } from '../helpers/rs-fixtures';

const LEVELS = ['gfni', 'avx512', 'avx2', 'ssse3', 'scalar'];
// Sizes around every kernel's block (32/64/128 bytes) plus the degenerate ones.
const SIZES = [0, 1, 2, 15, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 255, 256, 257, 1000, 4095, 4097];
const CASES_PER_LEVEL = 150;

/** The distinct levels this CPU can run, best first. */
function supportedLevels(): string[] {
  const detected = rsDetectedSimdLevel();
  const out = LEVELS.filter((l) => setRsSimdLevel(l) === l);
  setRsSimdLevel(detected);
  return out;
}

function atEveryLevel(body: (level: string) => void): void {
  const detected = rsDetectedSimdLevel();
  try {
    for (const level of supportedLevels()) {
      setRsSimdLevel(level);
      body(level);
    }
  } finally {
    setRsSimdLevel(detected);
  }
}

/** Copies shards into one buffer at odd offsets so kernels see unaligned input. */
function unaligned(shards: Buffer[], rand: () => number): Buffer[] {
  const size = shards.length === 0 ? 0 : shards[0].length;
  const slab = Buffer.alloc(shards.length * (size + 64) + 64);
  let offset = randomInt(rand, 0, 63);
  return shards.map((s) => {
    const view = slab.subarray(offset, offset + size);
    s.copy(view);
    offset += size + randomInt(rand, 1, 63);
    return view;
  });
}

test('coding matrix 4+2 parity rows are 1b 1c 12 14 / 1c 1b 14 12', (t) => {
  const rows = codingMatrix(4, 2).map((r) => Buffer.from(r).toString('hex'));
  t.deepEqual(rows.slice(4), ['1b1c1214', '1c1b1412']);
  t.deepEqual(rows.slice(0, 4), ['01000000', '00010000', '00000100', '00000001']);
});

test('a SIMD kernel is detected on x86-64', (t) => {
  if (process.arch !== 'x64') return t.pass(`no SIMD kernels on ${process.arch}; scalar is correct there`);
  t.not(rsDetectedSimdLevel(), 'scalar');
  t.is(rsSimdLevel(), rsDetectedSimdLevel());
  t.true(supportedLevels().includes('scalar'));
});

test.serial('encode is byte-identical to klauspost/reedsolomon at every level', (t) => {
  const kat = loadKat();
  atEveryLevel((level) => {
    for (const v of kat) {
      const codec = rsCodec(v.k, v.m);
      for (const c of v.cases) {
        const parity = codec.encode(c.data.map(hexBytes)).map((p) => p.toString('hex'));
        t.deepEqual(parity, c.parity, `${level} k=${v.k} m=${v.m} size=${c.shard_bytes}`);
      }
    }
  });
});

test.serial('property: fast codec equals the reference over random k, m, sizes and erasures', (t) => {
  atEveryLevel((level) => {
    for (let n = 0; n < CASES_PER_LEVEL; n++) {
      const seed = 0xc0dec000 + n;
      const rand = prng(seed);
      const k = randomInt(rand, 1, 10);
      const m = randomInt(rand, 1, 4);
      const size = SIZES[randomInt(rand, 0, SIZES.length - 1)];
      const where = `${level} seed=${seed.toString(16)} k=${k} m=${m} size=${size}`;
      const data = unaligned(
        Array.from({ length: k }, () => randomBytes(rand, size)),
        rand,
      );
      const parity = rsCodec(k, m).encode(data);
      t.deepEqual(parity, rsReferenceCodec(k, m).encode(data), `encode ${where}`);
      const all = [...data, ...parity];
      const lost = randomSubset(rand, k + m, randomInt(rand, 0, m));
      const shards = all.map((s, i) => (lost.includes(i) ? null : s));
      t.deepEqual(rsCodec(k, m).reconstruct(shards), all, `reconstruct ${where} lost=${lost}`);
      // Partial rebuild into caller buffers, wanted in random order.
      const wanted = randomSubset(rand, k + m, randomInt(rand, 1, k + m)).sort(() => rand() - 0.5);
      const outputs = wanted.map(() => Buffer.alloc(size + 3, 0xee));
      const some = rsCodec(k, m).reconstructSome(shards, wanted, outputs);
      t.deepEqual(
        some,
        wanted.map((w) => all[w]),
        `reconstructSome ${where} lost=${lost} wanted=${wanted}`,
      );
      t.true(
        outputs.every((o) => o.subarray(size).equals(Buffer.alloc(3, 0xee))),
        `no write past the shard ${where}`,
      );
    }
  });
});

test.serial('rebuilding every erasure set of up to m for 4+2, 6+3 and 10+4 matches the originals', (t) => {
  const rand = prng(42);
  atEveryLevel((level) => {
    for (const [k, m] of [
      [4, 2],
      [6, 3],
      [10, 4],
    ]) {
      const data = Array.from({ length: k }, () => randomBytes(rand, 333));
      const all = [...data, ...rsCodec(k, m).encode(data)];
      for (let mask = 0; mask < 1 << (k + m); mask++) {
        const lost = all.map((_, i) => i).filter((i) => mask & (1 << i));
        if (lost.length > m || lost.length === 0) continue;
        const rebuilt = rsCodec(k, m).reconstructSome(
          all.map((s, i) => (lost.includes(i) ? null : s)),
          lost,
        );
        if (!rebuilt.every((r, i) => r.equals(all[lost[i]]))) t.fail(`${level} ${k}+${m} lost=${lost}`);
      }
    }
  });
  t.pass();
});

test('more than m missing is an UnrecoverableError naming the shards', (t) => {
  const codec = rsCodec(4, 2);
  const data = [1, 2, 3, 4].map((x) => Buffer.alloc(64, x));
  const all = [...data, ...codec.encode(data)];
  const shards = all.map((s, i) => (i === 1 || i === 3 || i === 4 ? null : s));
  t.deepEqual(t.throws(() => codec.reconstruct(shards), { instanceOf: UnrecoverableError })?.failedShards, [1, 3, 4]);
  t.throws(() => codec.reconstructSome(shards, [1]), { instanceOf: UnrecoverableError });
});

test('bad arguments are FormatErrors naming the field', (t) => {
  const codec = rsCodec(3, 2);
  const field = (fn: () => unknown) => t.throws(fn, { instanceOf: FormatError })?.field;
  const data = [Buffer.alloc(8, 1), Buffer.alloc(8, 2), Buffer.alloc(8, 3)];
  const all = [...data, ...codec.encode(data)];
  t.is(
    field(() => codec.encode([Buffer.alloc(8), Buffer.alloc(8), Buffer.alloc(9)])),
    'shard_length',
  );
  t.is(
    field(() => codec.encode(data.slice(1))),
    'shard_count',
  );
  t.is(
    field(() => codec.reconstruct([null, ...all.slice(1, 4), Buffer.alloc(7)])),
    'shard_length',
  );
  t.is(
    field(() => codec.reconstructSome(all, [5])),
    'shard_index',
  );
  t.is(
    field(() => codec.reconstructSome(all, [1, 1])),
    'shard_index',
  );
  t.is(
    field(() => codec.encodeInto(data, [Buffer.alloc(8)])),
    'shard_count',
  );
  t.is(
    field(() => codec.encodeInto(data, [Buffer.alloc(8), Buffer.alloc(7)])),
    'shard_length',
  );
  t.is(
    field(() => codec.encodeInto(data, [data[0], Buffer.alloc(8)])),
    'output_buffer',
  );
  const slab = Buffer.alloc(32);
  const overlapping = [slab.subarray(0, 8), slab.subarray(4, 12)];
  t.is(
    field(() => codec.encodeInto(data, overlapping)),
    'output_buffer',
  );
  t.is(
    field(() => codec.reconstructSome([null, ...all.slice(1)], [0], [all[1]])),
    'output_buffer',
  );
  t.throws(() => rsCodec(0, 1), { instanceOf: FormatError });
});

test('encodeInto writes the same parity as encode, into caller buffers', (t) => {
  const rand = prng(7);
  const codec = rsCodec(5, 3);
  const data = Array.from({ length: 5 }, () => randomBytes(rand, 4096 + 13));
  const parity = [0, 1, 2].map(() => Buffer.alloc(4096 + 13));
  codec.encodeInto(data, parity);
  t.deepEqual(parity, rsReferenceCodec(5, 3).encode(data));
});
