// RwLock.sharedIfIdle (the write-back buffer's read side, fs/write-buffer.ts readInto): at once on an
// idle lock with no hold; a promise holds the shared lock so a flush (exclusive) waits for it.
import test from 'ava';
import { RwLock } from '../../fs/rwlock';

test('sharedIfIdle: at once without a hold; a promise blocks exclusive until it settles; busy: null', async (t) => {
  const lock = new RwLock();
  t.is(
    lock.sharedIfIdle(() => 3),
    3,
  );
  t.true(lock.idle);
  let finish!: () => void;
  const reading = lock.sharedIfIdle(
    () =>
      new Promise<number>((resolve) => {
        finish = () => resolve(4);
      }),
  );
  t.true(reading instanceof Promise);
  t.false(lock.idle);
  const order: string[] = [];
  const flushing = lock.exclusive(async () => {
    order.push('flush');
  });
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(order, [], 'the flush waits for the read');
  t.is(
    lock.sharedIfIdle(() => 5),
    null,
    'not idle: the caller queues',
  );
  finish();
  t.is(await reading, 4);
  await flushing;
  t.deepEqual(order, ['flush']);
  t.true(lock.idle);
});
