// Background tasks of a live mount (healer, compactor) when the metadata database cannot be read for
// a while (the PostgreSQL server restarting, DESIGN §9): each round that fails is tried again later;
// nothing is thrown from a timer (an uncaught exception, or an unhandled rejection that stopped
// compaction for good: both seen in CI's PostgreSQL mount test).
import test from 'ava';
import { smallStore } from './helpers';

const WAIT_STEP_MS = 100;
const WAIT_STEPS_MAX = 100;

async function until(done: () => boolean): Promise<boolean> {
  for (let i = 0; i < WAIT_STEPS_MAX && !done(); i++) await new Promise((r) => setTimeout(r, WAIT_STEP_MS));
  return done();
}

test.serial('a compaction round that fails is tried again, and nothing escapes the timers', async (t) => {
  const { store } = await smallStore('replica:3');
  const escaped: unknown[] = [];
  const onEscape = (err: unknown): void => {
    escaped.push(err);
  };
  process.on('unhandledRejection', onEscape);
  process.on('uncaughtException', onEscape);
  try {
    const containers = store['files'].containers;
    const real = containers.compactable.bind(containers);
    let compactCalls = 0;
    containers.compactable = (...args: Parameters<typeof real>) => {
      compactCalls++;
      if (compactCalls <= 2) throw new Error('PostgreSQL: the connection was lost (test)');
      return real(...args);
    };
    const map = store['env'].map;
    const realLength = map.healQueueLength.bind(map);
    let healChecks = 0;
    map.healQueueLength = () => {
      healChecks++;
      if (healChecks <= 2) throw new Error('PostgreSQL: the connection was lost (test)');
      return realLength();
    };
    store.startBackground();
    store.startHealer();
    t.true(
      await until(() => compactCalls >= 4 && healChecks >= 3),
      `compaction rounds ${compactCalls}, heal checks ${healChecks}`,
    );
    await store.stopHealer();
    t.deepEqual(escaped.map(String), []);
  } finally {
    process.off('unhandledRejection', onEscape);
    process.off('uncaughtException', onEscape);
    await store.close();
  }
});
