// Crash at every step of a transaction group (DESIGN §5), through FaultyIo, as a process kill and
// as a power loss: whole-chunk writes (a chunk rewritten, two appended) join a group, and sync
// closes it (flush of every shard file and directory, one commit, one metadata flush), then the
// reclaimer frees the replaced version. After recovery: what sync acknowledged is there; the file
// is its old content or its new one, never a size over bytes that were not stored (prefix rule);
// the rewritten chunk is old or new; every live shard verifies (no shard that a committed group
// names is missing), or its write or flush failed and that commit queued it for heal (the write
// quorum held), and nothing is left that the reclaim queue does not account for. A second sweep
// fails the first flush of two of a chunk's three shards, so it also steps through the close's
// retry of them. The syncfs sweeps flush the group's one file system with one syncfs (DESIGN §5 "One
// syncfs per file system"): a crash before it loses every shard and directory entry, after it none;
// their retry sweep fails that syncfs, so every shard file and directory is flushed on its own.
import test from 'ava';
import { sqliteOnlyTest } from '../helpers/pg-meta';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { shardsWholeAfterHeal } from '../helpers/shards-whole';
import { openCrashable, reopenAfterCrash } from './crash-harness';
import { SMALL, prng, randomBytes, smallStore, copyStore } from './helpers';
import * as path from 'node:path';

const CS = SMALL.chunkSizeBytes;

async function pristine(layout: string): Promise<{ dir: string; ino: number; old: Buffer }> {
  const { store, dir } = await smallStore(layout, 6);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const old = randomBytes(prng(5), 2 * CS);
  await store.write(f.ino, 0, old);
  await store.close();
  return { dir, ino: f.ino, old };
}

/** The shard files of groupWrites' group (3 chunks of 3 shards): syncfs sweeps flush them with one syncfs. */
const GROUP_FILES = 9;

/**
 * The group's writes: chunk 0 rewritten whole, chunks 2 and 3 appended; then sync closes the group.
 * whole: the close flushes the group's file system with one syncfs.
 */
async function groupWrites(s: Store, ino: number, chunk0: Buffer, tail: Buffer, whole: boolean): Promise<void> {
  s.startGroups(whole ? GROUP_FILES : undefined);
  await s.write(ino, 0, chunk0);
  await s.write(ino, 2 * CS, tail);
}

/**
 * The first flush of two of chunk 2's three shards fails (EIO): the close writes them again from the
 * flushed one (DESIGN §5), so the sweep also steps through that retry.
 */
function twoFlushesFail(io: FaultyIo): void {
  const shard = (p: string): boolean => /[/\\]c2[/\\][01]\.shard$/.test(p);
  io.addFault({ op: 'fdatasync', path: shard, error: 'EIO', count: 2 });
}

/** The group's one syncfs fails (EIO) once: the close flushes every shard file and directory on its own. */
function syncfsFails(io: FaultyIo): void {
  io.addFault({ op: 'syncfs', error: 'EIO', count: 1 });
}

for (const whole of [false, true])
  for (const layout of ['replica:3', 'ec:2+1'])
    for (const power of [false, true])
      for (const retry of [false, true]) {
        const again = whole ? ' that fails, then file by file' : ' that writes two failed shards again';
        const how = `${whole ? ' by one syncfs' : ''}${retry ? again : ''} (${power ? 'power loss' : 'process kill'})`;
        const faults = (io: FaultyIo): void => {
          if (retry) (whole ? syncfsFails : twoFlushesFail)(io);
        };
        (power ? sqliteOnlyTest : test)(`crash at every step of a group close${how}, ${layout}`, async (t) => {
          const { dir, ino, old } = await pristine(layout);
          const chunk0 = randomBytes(prng(11), CS);
          const tail = randomBytes(prng(12), 2 * CS);
          const expectedNew = Buffer.concat([chunk0, old.subarray(CS), tail]);
          // Count the mutating calls of the uninterrupted run: the writes, the close, the reclaim.
          const countIo = new FaultyIo(new NodeIo());
          faults(countIo);
          const counting = await Store.open(copyStore(dir), { io: countIo });
          const base = countIo.mutationCount;
          await groupWrites(counting, ino, chunk0, tail, whole);
          const beforeSync = countIo.mutationCount;
          await counting.sync();
          const syncSteps = countIo.mutationCount - beforeSync;
          await counting.reclaimNow();
          const steps = countIo.mutationCount - base;
          t.is(
            (await counting.read(ino, 0, expectedNew.length)).compare(expectedNew),
            0,
            'the uncrashed run reads the new content',
          );
          await counting.close();
          // The close flushes the group's shard files and directories: more than a handful of syncs.
          t.true(syncSteps > (whole ? 0 : 6), `the group's close has steps (${syncSteps})`);
          t.is(countIo.calls.get('syncfs') ?? 0, whole ? 1 : 0, 'one syncfs, or none below the file count');

          for (let n = 1; n <= steps + 1; n++) {
            const copy0 = copyStore(dir);
            const { s, io } = await openCrashable(copy0, power);
            faults(io);
            // The last run is the one without a crash: armed, its crash would hit the close's WAL flush
            // (after the reclaimer's queue commit) and undo unlinks that the kept database says were done.
            if (n <= steps) io.crashBeforeMutation(io.mutationCount + n, { torn: n % 2 === 0, seed: n });
            let acknowledged = true;
            try {
              await groupWrites(s, ino, chunk0, tail, whole);
              await s.sync(); // fsync: acknowledged means durable, under power loss too
            } catch {
              acknowledged = false;
            }
            await s.reclaimNow().catch(() => undefined);
            if (n > steps) t.true(acknowledged, 'the run without a crash is acknowledged');
            await io.whenRestored();
            const { r } = await reopenAfterCrash(s, copy0, power);
            try {
              const size = r.ns.getattr(ino)!.sizeBytes;
              t.true(
                size === old.length || size === expectedNew.length,
                `step ${n}: size old or new, never a prefix over unstored bytes (${size})`,
              );
              const got = await r.read(ino, 0, size);
              if (acknowledged) t.true(got.equals(expectedNew), `step ${n}: acknowledged writes intact`);
              const first = got.subarray(0, CS);
              t.true(
                first.equals(old.subarray(0, CS)) || first.equals(chunk0),
                `step ${n}: the rewritten chunk is old or new`,
              );
              t.true(got.subarray(CS, 2 * CS).equals(old.subarray(CS)), `step ${n}: the untouched chunk is unchanged`);
              if (size === expectedNew.length)
                t.true(got.subarray(2 * CS).equals(tail), `step ${n}: the appended chunks are whole`);
              await r.reclaimNow();
              await shardsWholeAfterHeal(t, r, n);
            } finally {
              await r.close();
            }
          }
        });
      }

test('a group whose shard flushes fail: its chunks are not committed, the file ends before them, sync reports EIO', async (t) => {
  const { dir, ino, old } = await pristine('replica:3');
  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { io });
  try {
    s.startGroups();
    await s.write(ino, 2 * CS, randomBytes(prng(14), 2 * CS)); // stored in the page cache: no flush yet
    io.addFault({ op: 'fdatasync', path: `${path.sep}disks${path.sep}`, error: 'EIO' });
    const err = await t.throwsAsync(s.sync());
    t.regex(err!.message, /required shards flushed/);
    io.clearFaults();
    t.is(
      s.ns.getattr(ino)!.sizeBytes,
      old.length,
      'the size stops before the chunks that are not durable (prefix rule)',
    );
    t.true((await s.read(ino, 0, 4 * CS)).equals(old), 'the file reads its old bytes');
  } finally {
    await s.close();
  }
  const again = await Store.open(dir);
  try {
    t.is(again.ns.getattr(ino)!.sizeBytes, old.length, 'nothing of the failed group was committed');
    await again.reclaimNow();
    const scrub = await again.scrub();
    t.is(scrub.badCount, 0, 'every live shard verifies');
    t.deepEqual(scrub.leaks.paths, [], "the failed group's shards were reclaimed");
  } finally {
    await again.close();
  }
});
