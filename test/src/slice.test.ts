import test from 'ava';
import { SliceError, UnsupportedError } from '../../src/errors';
import { encodeNeedle } from '../../src/needle';
import { ContainerLayout, checkNeedle, planSliceRead } from '../../src/slice';
import { prng, randomBytes } from './fixtures';

const MiB = 1 << 20;
const ec: ContainerLayout = { mode: 'ec', k: 4, m: 2, chunkSizeBytes: 4 * MiB, ecBlockSizeBytes: MiB };
const replica: ContainerLayout = { mode: 'replica', k: 1, m: 0, chunkSizeBytes: 4 * MiB, ecBlockSizeBytes: 0 };

test('replica slice: one piece on the first replica, chunk chosen by offset (spec §11.4)', (t) => {
  const plan = planSliceRead(
    { containerId: 5n, offsetBytes: BigInt(4 * MiB * 2 + 100), lengthBytes: 50, cookie: 1 },
    replica,
  );
  t.deepEqual(plan, [{ chunkIndex: 2n, shardIndex: 0, shardOffsetBytes: 100, lengthBytes: 82 }]);
});

test('EC slice inside a fragment touches one data shard; straddling touches two', (t) => {
  const inside = planSliceRead(
    { containerId: 5n, offsetBytes: BigInt(4 * MiB + MiB + 300000), lengthBytes: 1000, cookie: 1 },
    ec,
  );
  t.deepEqual(inside, [
    { chunkIndex: 1n, shardIndex: 1, shardOffsetBytes: 262144 + 300000 - 262144, lengthBytes: 1032 },
  ]);
  const straddle = planSliceRead(
    { containerId: 5n, offsetBytes: BigInt(2 * 262144 - 16), lengthBytes: 100, cookie: 1 },
    ec,
  );
  t.deepEqual(straddle, [
    { chunkIndex: 0n, shardIndex: 1, shardOffsetBytes: 262144 - 16, lengthBytes: 16 },
    { chunkIndex: 0n, shardIndex: 2, shardOffsetBytes: 0, lengthBytes: 116 },
  ]);
  for (const p of [...inside, ...straddle]) t.true(p.shardIndex < 4, 'never a parity shard');
});

test('EC slice in a short container chunk follows the short-block rule', (t) => {
  const layout = { ...ec, chunkLogicalLenBytes: () => 4000 }; // one short EB: fragments of 1000
  const plan = planSliceRead({ containerId: 5n, offsetBytes: 990n, lengthBytes: 0, cookie: 1 }, layout);
  t.deepEqual(
    plan.map((p) => [p.shardIndex, p.shardOffsetBytes, p.lengthBytes]),
    [
      [0, 990, 10],
      [1, 0, 22],
    ],
  );
  t.is(
    t.throws(() => planSliceRead({ containerId: 5n, offsetBytes: 3990n, lengthBytes: 0, cookie: 1 }, layout), {
      instanceOf: SliceError,
    }).field,
    'offset',
  );
});

test('a slice crossing a container chunk boundary is refused', (t) => {
  const err = t.throws(
    () => planSliceRead({ containerId: 5n, offsetBytes: BigInt(4 * MiB - 40), lengthBytes: 10, cookie: 1 }, replica),
    { instanceOf: SliceError },
  );
  t.is(err.field, 'offset');
});

test('checkNeedle validates magic, file_id, cookie, length and crc', (t) => {
  const data = randomBytes(prng(8), 300);
  const n = encodeNeedle(42n, 0xabcdef01, data);
  const slice = { containerId: 5n, offsetBytes: 0n, lengthBytes: 300, cookie: 0xabcdef01 };
  t.true(checkNeedle(slice, 42n, n).equals(data));
  t.true(checkNeedle(slice, 42n, n.subarray(0, 332)).equals(data), 'pad not needed');
  const field = (fn: () => unknown): string => t.throws(fn, { instanceOf: SliceError }).field;
  t.is(
    field(() => checkNeedle({ ...slice, cookie: 1 }, 42n, n)),
    'cookie',
  );
  t.is(
    field(() => checkNeedle(slice, 43n, n)),
    'file_id',
  );
  t.is(
    field(() => checkNeedle({ ...slice, lengthBytes: 299 }, 42n, n)),
    'length',
  );
  const badMagic = Buffer.from(n);
  badMagic[0] = 0;
  t.is(
    field(() => checkNeedle(slice, 42n, badMagic)),
    'magic',
  );
  const badData = Buffer.from(n);
  badData[40] ^= 1;
  t.is(
    field(() => checkNeedle(slice, 42n, badData)),
    'data_crc32c',
  );
  t.is(
    field(() => checkNeedle(slice, 42n, n.subarray(0, 200))),
    'data',
  );
  const deleted = Buffer.from(n);
  deleted.writeUInt32LE(1, 4);
  t.is(
    field(() => checkNeedle(slice, 42n, deleted)),
    'flags',
  );
  const compressed = Buffer.from(n);
  compressed.writeUInt32LE(2, 4);
  t.throws(() => checkNeedle(slice, 42n, compressed), { instanceOf: UnsupportedError });
});
