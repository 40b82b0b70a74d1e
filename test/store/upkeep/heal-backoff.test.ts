// The healer's per-shard backoff (store/upkeep/heal-backoff.ts): exponential up to a cap, logged once,
// per shard, and its success told.
import test from 'ava';
import { HEAL_BACKOFF_BASE_MS, HEAL_BACKOFF_MAX_MS, HealBackoff } from '../../../store/upkeep/heal-backoff';

const E = { ino: 5, chunkIndex: 1, version: 2n, shardIndex: 0 };

test('a failing shard backs off exponentially up to the cap, is logged once, and its success is told', (t) => {
  const lines: string[] = [];
  const b = new HealBackoff((l) => lines.push(l));
  t.true(b.due(E, 0));
  let now = 1_000;
  const waits: number[] = [];
  for (let i = 0; i < 25; i++) {
    b.failed(E, 'file 5 (/f) chunk 1 shard 0', 'EIO', now);
    const next = b.nextTryMs(E)!;
    waits.push(next - now);
    t.false(b.due(E, next - 1));
    t.true(b.due(E, next));
    now = next;
  }
  t.deepEqual(waits.slice(0, 4), [
    HEAL_BACKOFF_BASE_MS,
    2 * HEAL_BACKOFF_BASE_MS,
    4 * HEAL_BACKOFF_BASE_MS,
    8 * HEAL_BACKOFF_BASE_MS,
  ]);
  t.is(waits[24], HEAL_BACKOFF_MAX_MS);
  t.is(lines.length, 1);
  t.regex(
    lines[0],
    /^heal: cannot rebuild file 5 \(\/f\) chunk 1 shard 0: EIO; retrying after 2 s, doubling up to 60 min/,
  );
  t.true(b.due({ ...E, shardIndex: 1 }, now), 'other shards are not held back');
  b.succeeded(E, 'file 5 (/f) chunk 1 shard 0');
  t.is(lines[1], 'heal: rebuilt file 5 (/f) chunk 1 shard 0 after 25 failed attempt(s)');
  t.true(b.due(E, 0));
});
