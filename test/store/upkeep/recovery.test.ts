// Recovery at open (store/upkeep/recovery.ts, DESIGN §5): its work is what was in flight. recover()
// itself on a store's chunk environment: an orphaned inode is deleted with its chunks queued for
// reclaim, chunk bytes stored past a file's committed size are trimmed (prefix rule). The intents of
// a killed writer, through the next open: applied into every replica; one that cannot be applied
// then (a disk failing, FaultyIo) stays in the log, reported, and a later open applies it.
import test from 'ava';
import { Applier } from '../../../store/chunks/applier';
import { FileIo } from '../../../store/file-io';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { Store } from '../../../store/store';
import { recover } from '../../../store/upkeep/recovery';
import { SMALL, prng, randomBytes } from '../helpers';
import { FileFixture, fileFixture, internals } from './fixture';

const CS = SMALL.chunkSizeBytes;

function parts(f: FileFixture): { files: FileIo; applier: Applier } {
  const s = f.store as unknown as { files: FileIo; applier: Applier };
  return { files: s.files, applier: s.applier };
}

/** The store abandoned as by a kill: no close, its lock let go. */
function abandon(store: Store): void {
  (store as unknown as { db: { close(): void } }).db.close();
  (store as unknown as { lock: { release(): void } }).lock.release();
}

test('recover() deletes an orphan, queueing its chunks, and trims chunk bytes past a committed size', async (t) => {
  const f = await fileFixture('replica:3', 1);
  const { files, applier } = parts(f);
  const orphan = f.store.ns.create(1, 'o', 0o644, 0, 0).ino;
  await f.store.write(orphan, 0, randomBytes(prng(9), 2 * CS));
  f.store.ns.unlink(1, 'o'); // open when the process died: kept until its last close, which never came
  const past = f.store.ns.create(1, 'p', 0o644, 0, 0).ino;
  await f.store.write(past, 0, randomBytes(prng(10), 2 * CS), 1000); // committed size 1000, 2 chunks stored
  const queuedBefore = f.env.reclaim.length;
  const report = await recover(f.env, files, applier, [orphan]);
  t.like(report, { intentsResolved: 0, orphansDeleted: 1, filesTrimmed: 1, errors: [] });
  t.is(f.store.ns.getattr(orphan), null, 'the orphan is gone');
  t.true(f.env.reclaim.length >= queuedBefore + 2 + 1, "its chunks and the trimmed file's queued");
  t.is(f.env.map.live(past).length, 1, 'one chunk left under the committed size');
  t.is(f.env.map.get(past, 0)!.logicalLenBytes, 1000);
  t.true((await f.store.read(f.ino, 0, CS)).equals(f.data), 'other files untouched');
  await f.store.close();
});

test("an fsync'd intent left by a kill is applied into every replica by the next open's recovery", async (t) => {
  const f = await fileFixture('replica:3', 1);
  parts(f).applier.held = true;
  const update = randomBytes(prng(8), 3000);
  await f.store.write(f.ino, 5000, update);
  await f.store.sync();
  update.copy(f.data, 5000);
  const ref = f.ref(0);
  abandon(f.store);
  const again = await Store.open(f.dir, { applier: false });
  t.like(again.recoveryReport, { intentsResolved: 1, intentsKeptOpen: 0, errors: [] });
  const { env } = internals(again);
  for (const i of [0, 1, 2]) t.true((await env.shards.readWhole(ref, i)).equals(f.data), `replica ${i}`);
  await again.close();
});

test('an intent whose replicas cannot be written at open stays in the log, reported; a later open applies it', async (t) => {
  const f = await fileFixture('replica:3', 1);
  parts(f).applier.held = true;
  await f.store.write(f.ino, 10, Buffer.from('logged'));
  await f.store.sync();
  abandon(f.store);
  const io = new FaultyIo(new NodeIo());
  io.addFault({ op: 'pwrite', path: '.shard', error: 'EIO' });
  const failing = await Store.open(f.dir, { io, log: () => undefined });
  t.is(failing.recoveryReport.intentsKeptOpen, 1);
  t.regex(failing.recoveryReport.errors.join('\n'), /1 intent\(s\) could not be applied now .*kept in the log/);
  t.deepEqual(await failing.read(f.ino, 10, 6), Buffer.from('logged'), 'reads show it meanwhile');
  abandon(failing);
  const again = await Store.open(f.dir);
  t.like(again.recoveryReport, { intentsResolved: 1, intentsKeptOpen: 0 });
  t.deepEqual(await again.read(f.ino, 10, 6), Buffer.from('logged'));
  await again.close();
});
