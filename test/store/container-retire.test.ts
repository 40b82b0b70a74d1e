// An open small-file container that is mostly dead is retired, sealed and compacted without waiting
// to fill (issue 15 item 10): before, its dead needles held their space until it reached capacity.
import test from 'ava';
import { smallStore } from './helpers';

const FILE_BYTES = 8 * 1024;
const FILES = 100;
const DELETED = 70;

test('a mostly dead open container is retired and compacted by a compaction round; the live files read back', async (t) => {
  const { store } = await smallStore('replica:3', 6, {
    smallFileMaxBytes: FILE_BYTES,
    containerCapacityBytes: 1 << 20,
  });
  t.teardown(() => store.close());
  const inos: number[] = [];
  for (let i = 0; i < FILES; i++) {
    const a = store.ns.create(1, `f${i}`, 0o644, 0, 0);
    await store.write(a.ino, 0, Buffer.alloc(FILE_BYTES, i));
    inos.push(a.ino);
  }
  for (let i = 0; i < DELETED; i++) {
    store.ns.unlink(1, `f${i}`);
    await store.deleteFile(inos[i]);
  }
  const before = (await store.status()).containers;
  t.is(before.open, 1);
  t.true(before.deadBytes >= DELETED * FILE_BYTES, `dead ${before.deadBytes}`);
  t.is(before.compactionBacklog, 1);
  const r = await store.compact();
  t.is(r.compacted, 1, JSON.stringify(r));
  t.is(r.needlesMoved, FILES - DELETED);
  const after = (await store.status()).containers;
  t.is(after.deadBytes, 0);
  t.is(after.liveBytes, (FILES - DELETED) * FILE_BYTES);
  for (let i = DELETED; i < FILES; i++)
    t.true((await store.read(inos[i], 0, FILE_BYTES)).equals(Buffer.alloc(FILE_BYTES, i)), `file ${i}`);
  const reclaimed = await store.reclaimNow();
  t.true(reclaimed.versionsDeleted > 0, "the old container's chunks are reclaimed");
});
