// The crash harness's process kill (test/store/crash-harness.ts metaEndsAtCrash): from the crash on,
// the store's metadata connection writes nothing, as a killed process writes nothing, on SQLite and
// on PostgreSQL (CHUNKFS_TEST_META=postgres); the close before the reopen writes again.
import test from 'ava';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { crashTestLog, metaEndsAtCrash } from './crash-harness';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

/** Whether a create commits (an engine's refusal is not always an Error of this realm: SqliteError). */
function creates(s: Store, name: string): boolean {
  try {
    s.ns.create(1, name, 0o644, 0, 0);
    return true;
  } catch {
    return false;
  }
}

test('a process kill ends the metadata writes at the crash; the close before the reopen writes again', async (t) => {
  const { store, dir } = await smallStore('replica:3', 6);
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  await store.close();

  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { io, log: crashTestLog });
  const writeAgain = metaEndsAtCrash(s, io);
  try {
    s.ns.create(1, 'before', 0o644, 0, 0);
    io.crashBeforeMutation(io.mutationCount + 1);
    await t.throwsAsync(s.write(ino, 0, randomBytes(prng(1), SMALL.chunkSizeBytes)), undefined, 'the crash');
    t.true(io.isCrashed);
    t.false(creates(s, 'after'), 'nothing commits after the crash');
    writeAgain();
    s.ns.create(1, 'at-close', 0o644, 0, 0);
  } finally {
    writeAgain();
    await s.close();
  }
  const r = await Store.open(dir);
  try {
    t.not(r.ns.lookup(1, 'before'), null, 'a commit before the crash stays');
    t.is(r.ns.lookup(1, 'after'), null, 'the write after the crash was refused');
    t.not(r.ns.lookup(1, 'at-close'), null, 'the harness gave the writes back for the close');
  } finally {
    await r.close();
  }
});
