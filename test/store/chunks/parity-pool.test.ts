// Parity shards of whole-chunk EC writes come from a bounded pool that keeps what it made
// (store/chunks/parity-pool.ts, DESIGN §5 "Write-back pieces"): a steady sequential write reuses the
// same memory and leaves none to the garbage collector, and the pool never makes more than its bound.
import test from 'ava';
import { ParityPool } from '../../../store/chunks/parity-pool';
import { HUGE_PAGE_BYTES, directWritable } from '../../../src/huge-buffer';
import { SMALL, prng, randomBytes, smallStore } from '../helpers';

const MIB = 1 << 20;
const CS = SMALL.chunkSizeBytes;

test('the pool makes at most its bound, reuses what it made, and hands out page-aligned pieces', (t) => {
  const pool = new ParityPool(4 * MIB);
  const taken = Array.from({ length: 6 }, () => pool.take(MIB));
  t.is(pool.allocatedBytes, 4 * MIB, 'two huge blocks of two 1 MiB pieces each: the bound');
  t.is(pool.unpooledTakes, 2, 'the takes past the bound got fresh memory');
  t.true(
    taken.slice(0, 4).every((b) => directWritable(b)),
    'pooled pieces may be written past the page cache',
  );
  t.true(
    taken[0].buffer === taken[1].buffer && taken[0].byteOffset + MIB === taken[1].byteOffset,
    'one block, two pieces',
  );
  for (const b of taken) pool.give(b);
  t.is(pool.takenCount, 0);
  const again = Array.from({ length: 4 }, () => pool.take(MIB));
  t.is(pool.allocatedBytes, 4 * MIB, 'no new memory: the pieces given back are reused');
  t.is(pool.unpooledTakes, 2);
  t.true(
    again.every((b) => taken.includes(b)),
    'the same pieces',
  );
  for (const b of again) pool.give(b);
  t.throws(() => pool.give(again[0]), { message: /given back more often than taken/ });
});

test('whole-chunk ec:4+2 writes take their parity from the store pool, give it back, and a second round makes no memory', async (t) => {
  const { store } = await smallStore('ec:4+2');
  const parity = (store as unknown as { env: { shards: { parity: ParityPool } } }).env.shards.parity;
  const files = Array.from({ length: 16 }, (_, i) => store.ns.create(1, `f${i}`, 0o644, 0, 0).ino);
  const r = prng(7);
  const round = async (): Promise<Buffer[]> => {
    const datas = files.map(() => randomBytes(r, 2 * CS));
    await Promise.all(files.map((ino, i) => store.write(ino, 0, datas[i])));
    return datas;
  };
  const first = await round();
  t.true(parity.allocatedBytes > 0, 'parity came from the pool');
  t.is(parity.allocatedBytes % HUGE_PAGE_BYTES, 0);
  t.is(parity.takenCount, 0, 'every parity piece given back once its shard writes settled');
  const made = parity.allocatedBytes;
  const second = await round();
  t.is(parity.allocatedBytes, made, 'the second round reused the first round memory');
  t.is(parity.unpooledTakes, 0);
  t.is(parity.takenCount, 0);
  for (const [i, ino] of files.entries()) {
    t.true((await store.read(ino, 0, 2 * CS)).equals(second[i]), `file ${i} reads back its last write`);
    t.false(first[i].equals(second[i]));
  }
  await store.close();
});
