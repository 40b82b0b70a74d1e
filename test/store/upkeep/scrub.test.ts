// The scrub pass (store/upkeep/scrub.ts): its progress in shard bytes up to the total, one disk
// when asked, and a cancel that stops it.
import test from 'ava';
import { smallStore, prng, randomBytes } from '../helpers';

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
