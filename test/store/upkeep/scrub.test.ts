// The scrub pass (store/upkeep/scrub.ts): its progress in shard bytes up to the total, one disk
// when asked, and a cancel that stops it; scrubChunks itself over a FaultyIo finds every shard of a
// failing disk.
import test from 'ava';
import { FileIo } from '../../../store/file-io';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { Healer } from '../../../store/upkeep/heal';
import { scrubChunks } from '../../../store/upkeep/scrub';
import { smallStore, prng, randomBytes } from '../helpers';
import { fileFixture } from './fixture';

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

test('scrubChunks: a disk failing its reads is found on every chunk placed on it; once it reads again, nothing to rebuild', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const f = await fileFixture('replica:3', 3, io);
  const healer = new Healer(f.env, (f.store as unknown as { files: FileIo }).files);
  const failing = f.ref(0).diskIds[1];
  const root = f.store.diskPaths().get(failing)!;
  const onFailing = [0, 1, 2].filter((c) => f.ref(c).diskIds.includes(failing)).length;
  io.addFault({ op: 'pread', path: root, error: 'EIO' });
  f.env.shards.forgetAll();
  const look = await scrubChunks(f.env, healer);
  t.is(look.examined, 9);
  t.is(look.badCount, onFailing, 'one bad shard per chunk placed on the failing disk');
  t.true(look.bad.every((b) => f.ref(b.chunkIndex).diskIds[b.shardIndex] === failing));
  t.is(look.healed, 0, 'verify-only');
  io.clearFaults();
  f.env.shards.forgetAll();
  const again = await scrubChunks(f.env, healer, { repair: true });
  t.like(again, { examined: 9, badCount: 0, healed: 0 }, 'the disk reads again: nothing to rebuild');
  await f.store.close();
});
