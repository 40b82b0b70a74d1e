// The healer's per-shard backoff (store/upkeep/heal-backoff.ts) and the scrub pass's progress and cancel
// (store/upkeep/scrub.ts), at the store level.
import test from 'ava';
import { HEAL_BACKOFF_BASE_MS, HEAL_BACKOFF_MAX_MS, HealBackoff } from '../../store/upkeep/heal-backoff';
import { smallStore, prng, randomBytes } from './helpers';

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

test('scrub reports progress in shard bytes up to the total, only one disk when asked, and stops when cancelled', async (t) => {
  const { store } = await smallStore('replica:3');
  try {
    const a = store.ns.create(1, 'f', 0o644, 0, 0);
    await store.write(a.ino, 0, randomBytes(prng(3), 256 * 1024 * 3 + 1000)); // 4 chunks of 256 KiB
    const seen: number[] = [];
    const r = await store.scrub({
      onProgress: (p) => {
        seen.push(p.doneBytes);
        t.is(p.totalBytes, (256 * 1024 * 3 + 1000) * 3);
      },
    });
    t.is(r.examined, 12);
    t.is(seen[0], 0);
    t.is(seen[seen.length - 1], (256 * 1024 * 3 + 1000) * 3);
    const disk = [...store.diskPaths().keys()][0];
    const one = await store.scrub({ onlyDisk: disk });
    t.true(one.examined < 12, 'only the shards on one disk');
    const abort = new AbortController();
    const cut = await store.scrub({
      signal: abort.signal,
      onProgress: (p) => {
        if (p.doneItems === 1) abort.abort();
      },
    });
    t.true(cut.cancelled);
    t.is(cut.examined, 3, 'stopped after the first chunk');
  } finally {
    await store.close();
  }
});
