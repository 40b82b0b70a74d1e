// Native HighwayHash-256 (native/highway/, src/highway-native.ts) against Google's
// published vectors and against highwayhasher (an independent implementation),
// for every kernel this CPU has: single hashes, then the batch calls with
// position-bound keys (spec §4.1) over multi-block ranges with short last blocks.
import test from 'ava';
import { BitrotError } from '../../src/errors';
import { hashBlocks, verifyBlockRange } from '../../src/hashtable';
import { highway256, loadHighway } from '../../src/highway';
import {
  HighwayKernel,
  detectedHighwayKernel,
  firstBadBlock,
  hashBlocksInto,
  highwayKernel,
  nativeHighway256,
  setHighwayKernel,
} from '../../src/highway-native';
import { BitrotKey, BlockPosition, blockKey, parseBitrotKey } from '../../src/keying';
import { rsNative } from '../../src/rs-native';
import { encodeShard, verifyShardBytes } from '../../src/shard';
import { EXPECTED_256, KEY, input } from '../helpers/highway-vectors';
import { KEY as BITROT_KEY, prng, randomBytes, replicaParams } from './fixtures';

test.before(async () => loadHighway());

const KERNELS: HighwayKernel[] = detectedHighwayKernel() === 'avx2' ? ['scalar', 'avx2'] : ['scalar'];

// Runs body once per kernel with that kernel forced, then restores the detected one.
function forEachKernel(body: (kernel: HighwayKernel) => void): void {
  try {
    for (const kernel of KERNELS) {
      if (setHighwayKernel(kernel) !== kernel) throw new Error(`could not select ${kernel}`);
      body(kernel);
    }
  } finally {
    setHighwayKernel(detectedHighwayKernel());
  }
}

function words(d: Buffer): string[] {
  return [0, 8, 16, 24].map((o) => d.readBigUInt64LE(o).toString(16).toUpperCase().padStart(16, '0'));
}

function randomKey(rand: () => number): BitrotKey {
  return parseBitrotKey(randomBytes(rand, 32));
}

// Reference: one highwayhasher call per block with keying.ts's key (not the native key mixing).
function referenceEntries(key: BitrotKey, pos: BlockPosition, data: Buffer, bb: number, first: number): Buffer {
  const count = Math.ceil(data.length / bb);
  const out = Buffer.alloc(count * 32);
  for (let i = 0; i < count; i++) {
    highway256(blockKey(key, pos, first + i), data.subarray(i * bb, Math.min((i + 1) * bb, data.length))).copy(
      out,
      i * 32,
    );
  }
  return out;
}

test.serial('the scalar kernel can be forced and the detected one restored', (t) => {
  t.is(setHighwayKernel('scalar'), 'scalar');
  t.is(highwayKernel(), 'scalar');
  t.is(setHighwayKernel(detectedHighwayKernel()), detectedHighwayKernel());
  t.is(highwayKernel(), detectedHighwayKernel());
});

test.serial("native HighwayHash-256 matches Google's published golden values", (t) => {
  forEachKernel((kernel) => {
    for (const [n, expected] of EXPECTED_256)
      t.deepEqual(words(nativeHighway256(KEY, input(n))), expected, `${kernel} size ${n}`);
  });
});

test.serial('native HighwayHash-256 equals highwayhasher for random keys, lengths 0..2000', (t) => {
  forEachKernel((kernel) => {
    const rand = prng(kernel === 'scalar' ? 11 : 12);
    let mismatches = 0;
    for (let n = 0; n <= 2000; n++) {
      const key = randomBytes(rand, 32);
      const data = randomBytes(rand, n);
      if (!nativeHighway256(key, data).equals(highway256(key, data))) mismatches++;
    }
    t.is(mismatches, 0, kernel);
  });
});

test.serial('hashBlocksInto equals per-block highwayhasher with position-bound keys, short last blocks', (t) => {
  forEachKernel((kernel) => {
    const rand = prng(kernel === 'scalar' ? 21 : 22);
    for (let trial = 0; trial < 40; trial++) {
      const key = randomKey(rand);
      const bb = [1, 31, 32, 33, 64, 100, 4096, 16384][trial % 8];
      const len = trial === 0 ? 0 : rand() % (bb * 9 + 1);
      const pos: BlockPosition = {
        fileId: (BigInt(rand()) << 32n) | BigInt(rand()),
        chunkIndex: BigInt(rand()),
        shardIndex: trial % 5 === 0 ? 0xffff : rand() % 12,
        version: trial % 7 === 0 ? (1n << 64n) - 1n : BigInt(1 + (rand() % 9)),
      };
      const first = trial % 6 === 0 ? 0xffffffff - Math.max(Math.ceil(len / bb), 1) + 1 : rand() % 1000; // up to the last u32 index
      const data = randomBytes(rand, len);
      const out = Buffer.alloc(Math.ceil(len / bb) * 32);
      hashBlocksInto(out, key, pos, data, bb, first);
      t.true(out.equals(referenceEntries(key, pos, data, bb, first)), `${kernel} bb ${bb} len ${len}`);
    }
  });
});

test.serial('firstBadBlock finds the first corrupt block, wrong position or wrong entry', (t) => {
  forEachKernel((kernel) => {
    const rand = prng(kernel === 'scalar' ? 31 : 32);
    const key = randomKey(rand);
    const pos: BlockPosition = { fileId: 9n, chunkIndex: 4n, shardIndex: 2, version: 3n };
    const bb = 4096;
    const data = randomBytes(rand, bb * 6 + 1000); // 7 blocks, the last short
    const entries = referenceEntries(key, pos, data, bb, 5);
    t.is(firstBadBlock(key, pos, 5, data, entries, bb), -1, `${kernel} all good`);
    t.is(verifyBlockRange(key, pos, 5, data, entries, bb), -1);
    for (const j of [0, 3, 6]) {
      const bad = Buffer.from(data);
      bad[j * bb + (rand() % Math.min(bb, data.length - j * bb))] ^= 1 << rand() % 8;
      t.is(firstBadBlock(key, pos, 5, bad, entries, bb), j, `${kernel} flip in block ${j}`);
      t.is(verifyBlockRange(key, pos, 5, bad, entries, bb), 5 + j, 'absolute index');
    }
    const twoBad = Buffer.from(data);
    twoBad[5 * bb] ^= 1; // blocks 3 and 5: the AVX2 batch hashes (2,3) and (4,5) as pairs
    twoBad[3 * bb + 9] ^= 1;
    t.is(firstBadBlock(key, pos, 5, twoBad, entries, bb), 3, `${kernel} the first of several bad blocks`);
    t.is(firstBadBlock(key, pos, 6, data, entries, bb), 0, 'right data at the wrong block index');
    t.is(firstBadBlock(key, { ...pos, shardIndex: 3 }, 5, data, entries, bb), 0, 'wrong shard');
    t.is(firstBadBlock(key, { ...pos, version: 4n }, 5, data, entries, bb), 0, 'wrong version');
    const badEntry = Buffer.from(entries);
    badEntry[4 * 32 + 31] ^= 0x80;
    t.is(firstBadBlock(key, pos, 5, data, badEntry, bb), 4, 'corrupt entry');
  });
});

test.serial('shard encode and verify agree with highwayhasher and report the bad block', (t) => {
  const payload = randomBytes(prng(41), 16384 * 3 + 5);
  const params = replicaParams({
    bitrotBlockBytes: 16384,
    chunkLogicalLenBytes: BigInt(payload.length),
    contentLenBytes: BigInt(payload.length),
  });
  const pos: BlockPosition = {
    fileId: params.fileId,
    chunkIndex: params.chunkIndex,
    shardIndex: params.shardIndex,
    version: params.version,
  };
  forEachKernel((kernel) => {
    const file = encodeShard(params, payload, BITROT_KEY);
    t.true(file.subarray(4096, 4096 + 4 * 32).equals(referenceEntries(BITROT_KEY, pos, payload, 16384, 0)), kernel);
    t.true(
      hashBlocks(BITROT_KEY, pos, payload, 16384)
        .subarray(0, 128)
        .equals(file.subarray(4096, 4096 + 128)),
    );
    const dataStart = 8192;
    file[dataStart + 2 * 16384 + 7] ^= 1;
    const err = t.throws(() => verifyShardBytes(file, BITROT_KEY), { instanceOf: BitrotError });
    t.is(err?.blockIndex, 2, kernel);
  });
});

test('native argument checks throw instead of reading or writing out of bounds', (t) => {
  const addon = rsNative() as unknown as Record<string, (...args: unknown[]) => unknown>;
  const key = Buffer.alloc(32);
  const data = Buffer.alloc(100);
  const args = (over: Record<number, unknown>): unknown[] => {
    const a: unknown[] = [key, 1n, 2n, 3, 4n, 0, data, 32, Buffer.alloc(4 * 32)];
    for (const [i, v] of Object.entries(over)) a[Number(i)] = v;
    return a;
  };
  t.notThrows(() => addon.hashBlocks(...args({})));
  t.throws(() => addon.hashBlocks(...args({ 8: Buffer.alloc(3 * 32) })), { instanceOf: RangeError }, 'short output');
  t.throws(
    () => addon.verifyBlocks(...args({ 8: Buffer.alloc(3 * 32 + 31) })),
    { instanceOf: RangeError },
    'short entries',
  );
  t.throws(() => addon.hashBlocks(...args({ 0: Buffer.alloc(31) })), { instanceOf: RangeError }, 'short key');
  t.throws(() => addon.hashBlocks(...args({ 1: -1n })), { instanceOf: RangeError }, 'negative file_id');
  t.throws(() => addon.hashBlocks(...args({ 4: 1n << 64n })), { instanceOf: RangeError }, 'version past u64');
  t.throws(() => addon.hashBlocks(...args({ 3: 0x10000 })), { instanceOf: RangeError }, 'shard_index past u16');
  t.throws(() => addon.hashBlocks(...args({ 5: 0xffffffff })), { instanceOf: RangeError }, 'block index past u32');
  t.throws(() => addon.hashBlocks(...args({ 7: 0 })), { instanceOf: RangeError }, 'zero bitrot_block');
  t.throws(
    () => addon.hashBlocks(...args({ 8: data.subarray(0, 4 * 32) })),
    { instanceOf: RangeError },
    'output overlaps data',
  );
  t.throws(() => addon.hash256(key, data, Buffer.alloc(16)), { instanceOf: RangeError }, 'short digest');
  t.throws(() =>
    hashBlocksInto(
      Buffer.alloc(3 * 32),
      BITROT_KEY,
      { fileId: 1n, chunkIndex: 2n, shardIndex: 3, version: 4n },
      data,
      32,
      0,
    ),
  );
});
