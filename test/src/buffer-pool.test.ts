// src/buffer-pool.ts: pooled buffers come back to the next taker; larger ones and a full pool are not kept.
import test from 'ava';
import { BufferPool } from '../../src/buffer-pool';

test('a given buffer is the next one taken; a take larger than the pooled size gets its own', (t) => {
  const pool = new BufferPool(4096, 2);
  const a = pool.take(100);
  t.is(a.length, 4096);
  pool.give(a);
  t.is(pool.take(4096), a, 'reused, not allocated again');
  const big = pool.take(4097);
  t.is(big.length, 4097);
  pool.give(big);
  t.is(pool.keptCount, 0, 'a buffer of another size is not kept');
});

test('at most keptMax buffers are kept', (t) => {
  const pool = new BufferPool(1024, 2);
  const bufs = [pool.take(1), pool.take(1), pool.take(1)];
  t.is(new Set(bufs).size, 3);
  for (const b of bufs) pool.give(b);
  t.is(pool.keptCount, 2);
  t.throws(() => new BufferPool(0, 1), { message: /buffer pool: 1 buffers of 0 bytes/ });
});
