// store/upkeep/pace.ts: a background pass's byte-rate limit (scrub --rate). Counted on a fake clock
// (no timed assertion): a pass ahead of its rate sleeps until the bytes fit, in slices of at most
// PACE_SLICE_MS; no rate, a rate at or under 0, or a cancelled pass never sleeps.
import test from 'ava';
import { PACE_SLICE_MS, Pacer } from '../../../store/upkeep/pace';

/** Date.now and setTimeout replaced by a clock that a sleep moves forward at once. */
function fakeClock(t: { teardown(fn: () => void): void }): { sleeps: number[] } {
  const realNow = Date.now;
  const realTimeout = globalThis.setTimeout;
  let now = 1_000_000;
  const sleeps: number[] = [];
  Date.now = () => now;
  globalThis.setTimeout = ((fn: () => void, ms: number) => {
    sleeps.push(ms);
    now += ms;
    return realTimeout(fn, 0);
  }) as typeof setTimeout;
  t.teardown(() => {
    Date.now = realNow;
    globalThis.setTimeout = realTimeout;
  });
  return { sleeps };
}

test.serial('a pass ahead of its rate sleeps until its bytes fit, in short slices', async (t) => {
  const clock = fakeClock(t);
  const p = new Pacer(1000); // bytes per second
  await p.pace(0);
  t.deepEqual(clock.sleeps, [], 'nothing done yet: no wait');
  await p.pace(1000); // one second of bytes at once
  t.is(
    clock.sleeps.reduce((a, b) => a + b, 0),
    1000,
  );
  t.true(clock.sleeps.every((ms) => ms <= PACE_SLICE_MS));
  clock.sleeps.length = 0;
  await p.pace(1000);
  t.deepEqual(clock.sleeps, [], 'the clock caught up: no more wait');
});

test.serial('no rate, a rate of 0, or a cancelled pass: no wait', async (t) => {
  const clock = fakeClock(t);
  await new Pacer(undefined).pace(1 << 30);
  await new Pacer(0).pace(1 << 30);
  const abort = new AbortController();
  abort.abort();
  await new Pacer(10).pace(1 << 30, abort.signal);
  t.deepEqual(clock.sleeps, []);
});
