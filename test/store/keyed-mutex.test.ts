// KeyedMutex.runIfFree (the read pipeline's lock, store/file-io.ts): a result at once takes no lock
// entry; a promise holds the key until it settles, so run() calls queued meanwhile wait for it, and
// the caller sees the result only once the key is free again.
import test from 'ava';
import { KeyedMutex } from '../../store/chunks/keyed-mutex';

test('runIfFree: at once needs no lock; a promise holds the key until it settles', async (t) => {
  const m = new KeyedMutex();
  t.is(
    m.runIfFree(1, () => 5),
    5,
  );
  t.false(m.busy(1), 'a result at once leaves no entry');
  let finish!: (v: number) => void;
  const held = m.runIfFree(
    1,
    () =>
      new Promise<number>((resolve) => {
        finish = resolve;
      }),
  );
  t.true(held instanceof Promise);
  t.true(m.busy(1));
  t.is(
    m.runIfFree(1, () => 6),
    null,
    'a busy key: the caller must queue',
  );
  const order: string[] = [];
  const queued = m.run(1, async () => {
    order.push('queued');
  });
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(order, [], 'run() waits for the held promise');
  finish(7);
  t.is(await held, 7);
  await queued;
  t.deepEqual(order, ['queued']);
  t.false(m.busy(1));
});

test('runIfFree: a rejection releases the key too', async (t) => {
  const m = new KeyedMutex();
  const failing = m.runIfFree(2, () => Promise.reject(new Error('shard gone')));
  await t.throwsAsync(async () => failing, { message: 'shard gone' });
  t.false(m.busy(2), 'free once the caller sees the rejection');
  t.is(
    m.runIfFree(2, () => 1),
    1,
  );
});
