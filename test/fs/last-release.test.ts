// The last release of a file while another flush of it is queued (its timer, memory pressure, the
// whole-chunk stream, a rename): the file's state must still be forgotten, so an unlink that comes
// meanwhile or later deletes its data. Before the fix the state stayed without handles, the unlink
// only marked it, and the file's chunks stayed on the disks until the next mount.
import test from 'ava';
import { ROOT_INO } from '../../store/meta/meta';
import { FsCore } from '../../fs/core';
import { RwLock } from '../../fs/rwlock';
import { create, fsync, release, write } from '../../fs/ops-file';
import { unlink } from '../../fs/ops-names';
import { SMALL, smallStore } from '../store/helpers';

const O_WRONLY = 1;
const CALLER = { uid: 0, gid: 0, pid: 1, umask: 0o022 };

test('whenIdle: at once on an idle lock; else once the holder and every waiter are done', async (t) => {
  const lock = new RwLock();
  await lock.whenIdle();
  let openGate!: () => void;
  const gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
  const order: string[] = [];
  const first = lock.exclusive(async () => {
    await gate;
    order.push('first');
  });
  const second = lock.exclusive(async () => {
    order.push('second');
  });
  const idle = lock.whenIdle().then(() => order.push('idle'));
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(order, []);
  openGate();
  await Promise.all([first, second, idle]);
  t.deepEqual(order, ['first', 'second', 'idle']);
  t.true(lock.idle);
});

for (const when of ['while the queued flush runs', 'after the release']) {
  test(`a file released while another flush of it is queued, unlinked ${when}: its data is deleted`, async (t) => {
    const { store } = await smallStore('replica:3');
    t.teardown(() => store.close());
    const core = new FsCore(store, { bufferBytesMax: 1 << 20, flushDelayMs: 60_000, log: () => undefined });
    const { stat, fh } = create(core, ROOT_INO, 'f', 0o644, O_WRONLY, CALLER);
    const data = Buffer.alloc(SMALL.chunkSizeBytes, 7); // a whole chunk: shard files of its own
    await write(core, fh, data, data.length, 0);
    await fsync(core, fh);
    t.true(store.allocatedBytes(stat.ino) > 0, 'stored');
    const file = core.handles.fileOf(fh);
    const releasing = release(core, fh); // its flush holds the file's lock from here
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const queued = file.lock.exclusive(async () => {
      started();
      await gate;
    }); // as a pressure flush would
    await running;
    if (when === 'after the release') {
      openGate();
      await Promise.all([queued, releasing]);
      t.is(core.handles.file(stat.ino), undefined, 'the state is forgotten once the queued flush ended');
      await unlink(core, ROOT_INO, 'f');
    } else {
      await unlink(core, ROOT_INO, 'f');
      openGate();
      await Promise.all([queued, releasing]);
    }
    t.is(core.handles.file(stat.ino), undefined);
    t.is(
      store.ns.getattr(stat.ino),
      null,
      'the inode and its chunks are gone (queued for reclaim), not left as an orphan',
    );
    t.deepEqual(store.ns.orphans(), []);
  });
}
