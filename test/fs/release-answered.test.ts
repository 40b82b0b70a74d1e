// The last release of a file in a close batch is answered once the file joined the batch, not once
// the batch is stored (DESIGN §5 "How data is written"): the kernel keeps at most max_background
// RELEASEs in flight, so releases that waited for their batch held every batch to that many files.
// The file's open state stays until its batch is stored; releasesEnded (unmount) waits for that.
import test from 'ava';
import { ROOT_INO } from '../../store/meta/meta';
import { FsCore } from '../../fs/core';
import { create, release, write } from '../../fs/ops-file';
import { smallStore } from '../store/helpers';

const O_WRONLY = 1;
const CALLER = { uid: 0, gid: 0, pid: 1, umask: 0o022 };
/** More files than the kernel's RELEASEs in flight (fs/fuse/fuse3.ts MAX_BACKGROUND). */
const FILES = 100;

test('last releases of files in a close batch are answered before it is stored; their state goes after', async (t) => {
  const { store } = await smallStore('replica:3');
  t.teardown(() => store.close());
  const core = new FsCore(store, { bufferBytesMax: 1 << 20, flushDelayMs: 60_000, log: (m) => t.log(m) });
  const made = Array.from({ length: FILES }, (_, i) => create(core, ROOT_INO, `f${i}`, 0o644, O_WRONLY, CALLER));
  for (const [i, { fh }] of made.entries()) {
    const data = Buffer.from(`bytes of file ${i}`);
    await write(core, fh, data, data.length, 0);
  }
  // As the binding does after a clean close: no FLUSH, the release puts the file in the batch.
  for (const { fh } of made) await release(core, fh);
  for (const { stat } of made) {
    t.not(core.handles.file(stat.ino), undefined, `file ${stat.ino} keeps its state until its batch is stored`);
    t.is(store.ns.getattr(stat.ino)?.sizeBytes, 0, `file ${stat.ino}'s bytes not stored yet`);
  }
  await core.releasesEnded();
  for (const [i, { stat }] of made.entries()) {
    t.is(core.handles.file(stat.ino), undefined, `file ${stat.ino}'s state is forgotten`);
    t.deepEqual(await store.read(stat.ino, 0, 100), Buffer.from(`bytes of file ${i}`));
  }
});
