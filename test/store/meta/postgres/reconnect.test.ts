// The reconnection schedule (store/meta/postgres/reconnect.ts, DESIGN §9 "A broken connection"): tries
// on a timer, spaced by a doubling delay up to RECONNECT_BACKOFF_MAX_MS, until one works; a try whose
// new connection breaks before it ends counts as failed, so a broken connection is never left
// without a next try.
import test from 'ava';
import {
  RECONNECT_BACKOFF_MAX_MS,
  RECONNECT_FIRST_DELAY_MS,
  ReconnectSchedule,
} from '../../../../store/meta/postgres/reconnect';

/** Polls until done (bounded: the delays add up to well under this). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
}

test('tries until one works, the failures named to requests meanwhile', async (t) => {
  let tries = 0;
  const s = new ReconnectSchedule(() => {
    if (++tries < 3) throw new Error(`refused ${tries}`);
  });
  s.broke();
  t.regex(s.status(), /dialling again now/);
  await until(() => tries >= 3);
  t.is(tries, 3);
  s.broke(); // a new outage: tries start again
  await until(() => tries >= 4);
  t.is(tries, 4);
  s.stop();
  t.true(RECONNECT_FIRST_DELAY_MS < RECONNECT_BACKOFF_MAX_MS);
});

test('a try whose new connection broke before it ended is followed by another', async (t) => {
  let tries = 0;
  const s = new ReconnectSchedule(() => {
    if (++tries === 1) s.broke(); // e.g. the lease's re-take found the new connection gone
  });
  s.broke();
  await until(() => tries >= 2);
  t.is(tries, 2);
  t.regex(s.status(), /dialling again/);
  s.stop();
});

test('a stopped schedule tries no more', async (t) => {
  let tries = 0;
  const s = new ReconnectSchedule(() => {
    tries++;
    throw new Error('refused');
  });
  s.broke();
  await until(() => tries >= 1);
  s.stop();
  const seen = tries;
  await new Promise((resolve) => setTimeout(resolve, 3 * RECONNECT_FIRST_DELAY_MS));
  t.is(tries, seen);
});
