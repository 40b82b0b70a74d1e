// Recovery at open (store/upkeep/recovery.ts, DESIGN §5), called on a store's chunk environment the
// way Store.open calls it: its work is what was in flight. Intents in the log are applied (or, their
// chunk rewritten since, released); an orphaned inode is deleted with its chunks queued for
// reclaim; chunk bytes stored past a file's committed size are trimmed (prefix rule); an intent that
// cannot be applied now (a disk failing, FaultyIo) stays in the log and is reported.
import test from 'ava';
import { Applier } from '../../../store/chunks/applier';
import { FileIo } from '../../../store/file-io';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { Store } from '../../../store/store';
import { recover } from '../../../store/upkeep/recovery';
import { SMALL, prng, randomBytes } from '../helpers';
import { FileFixture, fileFixture } from './fixture';

const CS = SMALL.chunkSizeBytes;

function parts(f: FileFixture): { files: FileIo; applier: Applier } {
  const s = f.store as unknown as { files: FileIo; applier: Applier };
  return { files: s.files, applier: s.applier };
}

test('pending intents are applied; an orphan is deleted and its chunks queued; bytes past the size are trimmed', async (t) => {
  const f = await fileFixture('replica:3', 2);
  const { files, applier } = parts(f);
  applier.held = true; // the intents wait for recovery, as after a crash
  const update = randomBytes(prng(8), 3000);
  await f.store.write(f.ino, 5000, update);
  await f.store.sync();
  update.copy(f.data, 5000);
  const orphan = f.store.ns.create(1, 'o', 0o644, 0, 0).ino;
  await f.store.write(orphan, 0, randomBytes(prng(9), 2 * CS));
  f.store.ns.unlink(1, 'o'); // open when the process died: kept until its last close, which never came
  const past = f.store.ns.create(1, 'p', 0o644, 0, 0).ino;
  await f.store.write(past, 0, randomBytes(prng(10), 2 * CS), 1000); // committed size 1000, 2 chunks stored
  const queuedBefore = f.env.reclaim.length;
  const report = await recover(f.env, files, applier, [orphan]);
  t.like(report, { intentsResolved: 1, intentsKeptOpen: 0, orphansDeleted: 1, filesTrimmed: 1, errors: [] });
  t.is(f.env.backlog.lengthIntents, 0);
  t.true((await f.env.shards.readWhole(f.ref(0), 1)).equals(f.data.subarray(0, CS)), 'in every replica');
  t.is(f.store.ns.getattr(orphan), null, 'the orphan is gone');
  t.true(f.env.reclaim.length >= queuedBefore + 2 + 1, "its chunks and the trimmed file's queued");
  t.is(f.env.map.live(past).length, 1, 'one chunk left under the committed size');
  t.is(f.env.map.get(past, 0)!.logicalLenBytes, 1000);
  await f.store.close();
});

test('an intent whose replica cannot be written stays in the log, reported; the next recovery applies it', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const f = await fileFixture('replica:3', 1, io);
  const { files, applier } = parts(f);
  applier.held = true;
  await f.store.write(f.ino, 10, Buffer.from('logged'));
  await f.store.sync();
  io.addFault({ op: 'pwrite', path: '.shard', error: 'EIO' });
  const first = await recover(f.env, files, applier, []);
  t.is(first.intentsKeptOpen, 1);
  t.regex(first.errors.join('\n'), /1 intent\(s\) could not be applied now .*kept in the log/);
  t.is(f.env.backlog.lengthIntents, 1);
  // Abandoned (a kill): the next open's recovery applies it.
  (f.store as unknown as { db: { close(): void } }).db.close();
  (f.store as unknown as { lock: { release(): void } }).lock.release();
  const again = await Store.open(f.dir);
  t.is(again.recoveryReport.intentsResolved, 1);
  t.is(again.recoveryReport.intentsKeptOpen, 0);
  t.deepEqual(await again.read(f.ino, 10, 6), Buffer.from('logged'));
  await again.close();
});
