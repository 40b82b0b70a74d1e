// boundedAll (store/chunks/bounded.ts): a failure rejects only once every started item settled, and
// starts no new one; callers read into buffers they reuse or give back to a pool.
import test from 'ava';
import { boundedAll } from '../../store/chunks/bounded';

const tick = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('a failure waits for the items in flight and starts no new one', async (t) => {
  const settled: number[] = [];
  const started: number[] = [];
  const err = await t.throwsAsync(
    boundedAll([0, 1, 2, 3, 4, 5], 3, async (i) => {
      started.push(i);
      if (i === 0) throw new Error('piece 0 failed');
      await tick(20 * i);
      settled.push(i);
    }),
  );
  t.is(err?.message, 'piece 0 failed');
  t.deepEqual(settled.sort(), [1, 2], 'the two pieces in flight settled before the rejection');
  t.deepEqual(started.sort(), [0, 1, 2], 'no piece started after the failure');
});

test('every item runs, at most limit at once', async (t) => {
  let inFlight = 0;
  let inFlightMax = 0;
  const done: number[] = [];
  await boundedAll([...Array(10).keys()], 4, async (i) => {
    inFlightMax = Math.max(inFlightMax, ++inFlight);
    await tick(2);
    inFlight--;
    done.push(i);
  });
  t.is(done.length, 10);
  t.is(inFlightMax, 4);
});
