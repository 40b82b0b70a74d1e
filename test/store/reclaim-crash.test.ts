// Free last (DESIGN §5): the reclaimer deletes a version's shards only once the commit
// that freed it is durable. The power loss that found it: fsync'd files removed (no fsync), the
// reclaimer ran, then power went. The metadata WAL went back to its last full commit, so the
// unlinks were undone and the files came back, but their shard files were gone for good. Here the
// crash model keeps every shard-file delete (FaultyIo.unlinksDurable, as a journaling filesystem
// may on its own) and cuts meta.db-wal back to its last full commit (restoreExternal).
import test from 'ava';
import { sqliteOnlyTest } from '../helpers/pg-meta';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { ROOT_INO } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { openCrashable, reopenAfterCrash, crashTestLog } from './crash-harness';
import { SMALL, prng, randomBytes, smallStore, copyStore } from './helpers';

const CS = SMALL.chunkSizeBytes;

interface Made {
  name: string;
  ino: number;
  data: Buffer;
}

/** A store holding fsync'd files of one or two chunks (none small enough to be packed as a needle). */
async function pristine(layout: string, count: number): Promise<{ dir: string; files: Made[] }> {
  const { store, dir } = await smallStore(layout, 6);
  const files: Made[] = [];
  for (let i = 0; i < count; i++) {
    const name = `f${i}`;
    const f = store.ns.create(ROOT_INO, name, 0o644, 0, 0);
    const data = randomBytes(prng(100 + i), 70_000 + ((i * 97_001) % (2 * CS - 70_000)));
    await store.write(f.ino, 0, data);
    files.push({ name, ino: f.ino, data });
  }
  await store.sync();
  await store.close();
  return { dir, files };
}

/** rm: unlink, then the inode and its chunks go (the mount does this at the last release). */
async function rm(s: Store, f: Made): Promise<void> {
  s.ns.unlink(ROOT_INO, f.name);
  await s.deleteFile(f.ino);
}

/** A file that is back after the crash reads all its bytes; a file that is gone is gone whole. */
async function backWhole(t: import('ava').ExecutionContext, r: Store, f: Made, what: string): Promise<void> {
  const entry = r.ns.readdir(ROOT_INO).find((e) => e.name === f.name);
  if (entry === undefined) return;
  let got: Buffer | string;
  try {
    got = await r.read(f.ino, 0, f.data.length + 1);
  } catch (err) {
    got = (err as Error).message;
  }
  t.true(
    Buffer.isBuffer(got) && got.equals(f.data),
    `${what}: ${f.name} came back and must read its bytes: ${Buffer.isBuffer(got) ? 'other bytes' : got}`,
  );
}

/** After recovery the store goes on: the queue drains, nothing leaked, every live shard verifies. */
async function clean(t: import('ava').ExecutionContext, r: Store, what: string): Promise<void> {
  await r.reclaimNow();
  const scrub = await r.scrub();
  t.deepEqual(scrub.leaks.paths, [], `${what}: no shard left that nothing accounts for`);
  t.is(scrub.badCount, 0, `${what}: every live shard verifies`);
}

for (const layout of ['replica:3', 'ec:2+1']) {
  sqliteOnlyTest(
    `power loss after the reclaimer ran: unlinked, truncated, rewritten and punched files read their bytes (${layout})`,
    async (t) => {
      const { dir, files } = await pristine(layout, 12);
      const [cow, cut, punched, ...removed] = files;
      const { s, io } = await openCrashable(dir, true, { unlinksDurable: true });
      // Each of these commits without a flush of its own (the writes flush their reservation first).
      const rewrite = randomBytes(prng(7), 5000);
      await s.write(cow.ino, 1000, rewrite); // EC: copy-on-write; replica: an in-place patch
      await s.truncate(cut.ino, 1000); // chunk 0 rewritten shorter, chunk 1 (if any) dropped
      await s.punchHole(punched.ino, 0, CS); // chunk 0 becomes a hole
      for (const f of removed) await rm(s, f);
      const report = await s.reclaimNow();
      t.true(report.versionsDeleted > removed.length, `the reclaimer deleted shards (${JSON.stringify(report)})`);
      io.crash();
      await io.whenRestored();
      const { r } = await reopenAfterCrash(s, dir, true);
      for (const f of removed) await backWhole(t, r, f, 'rm');
      const cowGot = await r.read(cow.ino, 0, cow.data.length);
      const cowNew = Buffer.from(cow.data);
      rewrite.copy(cowNew, 1000);
      t.true(cowGot.equals(cow.data) || cowGot.equals(cowNew), 'rewritten file: old or new bytes');
      const cutSize = r.ns.getattr(cut.ino)!.sizeBytes;
      t.true(cutSize === 1000 || cutSize === cut.data.length, `truncated file: old or new size (${cutSize})`);
      t.true(
        (await r.read(cut.ino, 0, cut.data.length)).equals(cut.data.subarray(0, cutSize)),
        'truncated file: its old bytes up to its size',
      );
      const punchedGot = await r.read(punched.ino, 0, punched.data.length);
      const punchedNew = Buffer.from(punched.data);
      punchedNew.fill(0, 0, CS);
      t.true(punchedGot.equals(punched.data) || punchedGot.equals(punchedNew), 'punched file: old bytes or the hole');
      await clean(t, r, 'after');
      await r.close();
    },
  );
}

/** Removing two files and running the reclaimer: the protocol whose every step is a crash point. */
async function rmAndReclaim(s: Store, files: Made[]): Promise<void> {
  for (const f of files) await rm(s, f);
  await s.reclaimNow();
}

sqliteOnlyTest(
  'power loss at every step of rm + reclaim (shard deletes durable at once): files that come back read their bytes',
  async (t) => {
    const { dir, files } = await pristine('replica:3', 2);
    const countIo = new FaultyIo(new NodeIo());
    const counting = await Store.open(copyStore(dir), { io: countIo });
    const base = countIo.mutationCount;
    await rmAndReclaim(counting, files);
    const steps = countIo.mutationCount - base;
    await counting.close();
    t.true(steps > 6, `protocol has steps (${steps})`);
    for (let n = 1; n <= steps + 1; n++) {
      const baseDir = copyStore(dir);
      const { s, io } = await openCrashable(baseDir, true, { unlinksDurable: true });
      io.crashBeforeMutation(io.mutationCount + n, { torn: n % 2 === 0, seed: n });
      await rmAndReclaim(s, files).catch(() => undefined);
      io.crash(); // the run without a crash point: power goes after it
      await io.whenRestored();
      const { r, dir: copy } = await reopenAfterCrash(s, baseDir, true);
      for (const f of files) await backWhole(t, r, f, `step ${n}`);
      await clean(t, r, `step ${n}`);
      await r.close();
      fs.rmSync(path.dirname(copy), { recursive: true, force: true });
      fs.rmSync(path.dirname(baseDir), { recursive: true, force: true });
    }
  },
);

sqliteOnlyTest('rm of many files costs no flush per unlink; the reclaimer pays one flush per round', async (t) => {
  const { dir, files } = await pristine('replica:3', 40);
  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { io, log: crashTestLog });
  const before = io.calls.get('fdatasync') ?? 0;
  for (const f of files) await rm(s, f);
  t.is((io.calls.get('fdatasync') ?? 0) - before, 0, 'the unlinks issue no flush');
  const report = await s.reclaimNow();
  t.true(report.versionsDeleted >= files.length, JSON.stringify(report));
  const flushes = (io.calls.get('fdatasync') ?? 0) - before;
  // RECLAIM_BATCH_MAX (32) versions a round: the versions of 40 files take a few rounds.
  t.true(
    flushes >= 1 && flushes <= Math.ceil(report.versionsDeleted / 32) + 1,
    `${flushes} flushes for ${report.versionsDeleted} versions`,
  );
  await s.close();
});

sqliteOnlyTest(
  'a failing metadata flush: the reclaimer deletes nothing, and everything stays queued for a later round',
  async (t) => {
    const { dir, files } = await pristine('replica:3', 2);
    const io = new FaultyIo(new NodeIo());
    const s = await Store.open(dir, { io, log: crashTestLog });
    for (const f of files) await rm(s, f);
    io.addFault({ op: 'fdatasync', path: 'meta.db-wal', error: 'EIO' });
    const unlinksBefore = io.calls.get('unlink') ?? 0;
    const failed = await s.reclaimNow();
    t.is(failed.versionsDeleted, 0, JSON.stringify(failed));
    t.true(failed.failures > 0);
    t.is((io.calls.get('unlink') ?? 0) - unlinksBefore, 0, 'no shard deleted while its unlink may not be durable');
    t.is((await s.status()).reclaimBacklog, files.length);
    io.clearFaults();
    const report = await s.reclaimNow();
    t.is(report.versionsDeleted, files.length);
    t.is((await s.status()).reclaimBacklog, 0);
    await s.close();
  },
);
