// Crash at every step of a script of namespace operations under metadata group commits (DESIGN §5
// "Group commit"): create, link, rename (plain, RENAME_NOREPLACE, RENAME_EXCHANGE, of a directory,
// over a file), unlink, mkdir, rmdir, chmod, utimens, setxattr, symlink, truncate and writes of
// small files (needles), an editor's save (a whole chunk in a transaction group, renamed over the
// old file), fsync of a file, of a directory and syncfs, the applier and the reclaimer
// (namespace-script.ts). Groups commit only at the script's timer steps and at full commits (no
// timing). Process kill (what SQLite committed stays, the open group is lost): before every step
// (namespace operations are savepoints of the open group and do no I/O of the store's Io, so their
// crash points are the step boundaries) and at every I/O of the store's Io (needle and shard
// writes, renames, unlinks, the WAL's fdatasync). Power loss (meta.db-wal back to its last
// fdatasync, FaultyIo.restoreExternal): at every device sync, the only calls that change what a
// power loss leaves, and after the last step. After recovery: the tree is one the model went
// through (every operation whole, none without those before it), at or after the last step made
// durable by fsync or syncfs, after a kill also at or after the last committed group; no orphan
// inode is left; every file the tree shows reads whole (no needle or shard lost); after heal every
// live shard verifies, and fsck finds nothing missing, leaked or unaccounted for.
// On PostgreSQL (CHUNKFS_TEST_META=postgres) the kill at every fourth I/O runs: each operation
// commits alone there, so a kill keeps every operation answered (its sent transactions commit,
// DESIGN §9); the step boundaries (SQLite's groups) and the power losses (meta.db-wal) are SQLite's.
import test, { ExecutionContext } from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FaultyIo } from '../../store/io/faulty-io';
import { SqliteDb } from '../../store/meta/sqlite/engine';
import { Store } from '../../store/store';
import { shardsWholeAfterHeal } from '../helpers/shards-whole';
import { openCrashable, reopenAfterCrash } from './crash-harness';
import { copyStoreDir, sqliteOnlyTest, testMetaEngine } from '../helpers/pg-meta';
import { SMALL, memTmpDir } from './helpers';
import { SCRIPT, SETUP, ScriptContext } from './namespace-script';
import { TreeModel, storeTreeText } from './tree-model';

/** Groups this long commit only when the script's timer step or a full commit commits them: no timing. */
const LONG_GROUP_MS = 60_000;
const GROUPED = testMetaEngine() === 'sqlite';
/**
 * The reclaimer deletes shard files with no directory fsync: a kill keeps those deletes, and the crash
 * model keeps them under power loss too (as reclaim-crash.test.ts does), else a shard the committed
 * queue no longer names comes back as a leak for the leak scan, which is not what this sweep judges.
 */
/**
 * On PostgreSQL every crash run makes a database and opens the store twice through the server (about
 * 1 s a run on this machine, 2 s under load): every fourth I/O is a crash point there (a bounded run).
 */
const IO_STRIDE = GROUPED ? 1 : 4;
const OPEN_OPTS = { unlinksDurable: true, ...(GROUPED ? { metaGroupMs: LONG_GROUP_MS } : {}) };

function context(s: Store): ScriptContext & { groupOpen(): boolean } {
  const db = (s as unknown as { db: unknown }).db;
  return {
    s,
    unlinked: null,
    commitGroup: () => (db instanceof SqliteDb ? db.commitGroup() : undefined),
    groupOpen: () => db instanceof SqliteDb && db.native.inTransaction,
  };
}

/** The tree's text after each step of SETUP then SCRIPT: texts[j] after SCRIPT's step j (0: before it). */
function modelTexts(): string[] {
  const m = new TreeModel();
  for (const step of SETUP) step.model?.(m);
  const texts = [m.text()];
  for (const step of SCRIPT) {
    step.model?.(m);
    texts.push(m.text());
  }
  return texts;
}

/** A copy of a closed store, in memory (memTmpDir: the sweep opens hundreds, and FaultyIo models durability). */
function copyStore(dir: string): string {
  const to = path.join(memTmpDir('chunkfs-crash-'), 'store');
  copyStoreDir(dir, to);
  return to;
}

async function pristine(): Promise<string> {
  const dir = path.join(memTmpDir(), 'store');
  const store = await Store.create(dir, { disks: 6, layout: 'replica:3', ...SMALL });
  const c = context(store);
  for (const step of SETUP) await step.run(c);
  await store.sync();
  await store.close();
  return dir;
}

/** How far a run got: steps answered (1-based, 0: none), and the last durable and committed ones. */
interface Reached {
  answered: number;
  /** The step running when the crash came (answered + 1): it may have landed or not. */
  cut: boolean;
  durable: number;
  committed: number;
  /** The first answered step whose chunks still wait in the open transaction group (0: none). */
  chunksWaitFrom: number;
}

/**
 * Run SCRIPT until the Io crashes (a step that ends after the crash is not answered: the process
 * died in it). crashBefore: crash the Io just before that step (SCRIPT.length + 1: after the last).
 */
async function runScript(
  c: ScriptContext,
  io: FaultyIo,
  crashBefore = 0,
  onStep?: (i: number) => Promise<void>,
): Promise<Reached> {
  const r: Reached = { answered: 0, cut: false, durable: 0, committed: 0, chunksWaitFrom: 0 };
  for (let i = 1; i <= SCRIPT.length + 1; i++) {
    if (i === crashBefore) io.crash({ torn: i % 2 === 0, seed: i });
    if (io.isCrashed || i > SCRIPT.length) return r;
    const step = SCRIPT[i - 1];
    let error: unknown = null;
    try {
      await step.run(c);
    } catch (err) {
      error = err;
    }
    if (io.isCrashed || (error !== null && (error as { code?: string }).code !== step.fails))
      return { ...r, cut: true };
    if ((error === null) !== (step.fails === undefined))
      throw new Error(
        `step ${i} (${step.what}): ${error === null ? `did not fail with ${step.fails}` : String(error)}`,
      );
    r.answered = i;
    if (step.durable === true) r.durable = i;
    if (step.durable === true || step.committed === true) r.committed = i;
    if (step.durable === true || step.closesGroup === true) r.chunksWaitFrom = 0;
    if (step.chunksWait === true && r.chunksWaitFrom === 0) r.chunksWaitFrom = i;
    await onStep?.(i);
  }
  return r;
}

/** The first line where two tree texts differ, for the failure message. */
function firstDifference(got: string, want: string): string {
  const [g, w] = [got.split('\n'), want.split('\n')];
  for (let i = 0; i < Math.max(g.length, w.length); i++)
    if (g[i] !== w[i]) return `got "${g[i] ?? '(end)'}", want "${w[i] ?? '(end)'}"`;
  return 'same';
}

/**
 * After the crash of run `label`: the recovered tree is a state the model went through between the
 * floor (the last durable step; after a kill, the last committed one) and the step the crash cut,
 * and the store is whole.
 */
async function checkRecovered(
  t: ExecutionContext,
  label: string,
  texts: string[],
  reached: Reached,
  r: Store,
  power: boolean,
): Promise<void> {
  // Without groups (PostgreSQL) each operation commits alone, and a kill keeps every one answered;
  // whole chunks in a transaction group not yet closed are not (their file ends before them).
  const kept = GROUPED ? reached.committed : reached.answered;
  const floor = power
    ? reached.durable
    : reached.chunksWaitFrom > 0
      ? Math.min(kept, reached.chunksWaitFrom - 1)
      : kept;
  const top = reached.answered + (reached.cut ? 1 : 0);
  const got = await storeTreeText(r);
  const at = texts.findIndex((text, j) => j >= floor && j <= top && text === got);
  t.true(
    at >= 0,
    `${label}: the tree is a state of steps ${floor}..${top} (${firstDifference(got, texts[floor])} against step ${floor}; ` +
      `matches steps [${texts.flatMap((text, j) => (text === got ? [j] : [])).join(', ')}])`,
  );
  t.deepEqual(r.ns.orphans(), [], `${label}: recovery left no orphan inode`);
  await r.reclaimNow();
  await shardsWholeAfterHeal(t, r, label);
  const f = await r.fsck();
  t.is(f.missing + f.badHeaders + f.ioErrors, 0, `${label}: fsck finds every shard (${JSON.stringify(f.problems)})`);
  t.deepEqual(f.leaks.paths, [], `${label}: fsck finds nothing leaked`);
  t.deepEqual(f.unaccountedInodes, [], `${label}: every inode is named, an orphan or a container`);
  t.deepEqual(f.containerRowsWithoutInode, [], `${label}: every container row has its inode`);
  t.is(f.orphanInodes, 0, `${label}: no orphan inode`);
}

/** One crash run: open a copy of the pristine store, arm the crash, run the script, reopen, check. */
async function crashRun(
  t: ExecutionContext,
  dir: string,
  texts: string[],
  power: boolean,
  label: string,
  arm: (io: FaultyIo, c: ReturnType<typeof context>) => number,
): Promise<void> {
  const base = copyStore(dir);
  const { s, io } = await openCrashable(base, power, OPEN_OPTS);
  s.startGroups(); // whole chunks in transaction groups, as a live mount's
  const c = context(s);
  const reached = await runScript(c, io, arm(io, c));
  await io.whenRestored();
  const { r, dir: copy } = await reopenAfterCrash(s, base, power, GROUPED);
  try {
    await checkRecovered(t, `${label} (${reached.answered} steps answered)`, texts, reached, r, power);
  } finally {
    await r.close();
    fs.rmSync(path.dirname(copy), { recursive: true, force: true });
    if (copy !== base) fs.rmSync(path.dirname(base), { recursive: true, force: true });
  }
}

/**
 * The uncrashed run: the store's tree follows the model at every step; the Io's mutations and syncs it
 * made (opened as for a power loss where there is one: SQLite's checkpoints off, as in those runs).
 */
async function countingRun(
  t: ExecutionContext,
  dir: string,
  texts: string[],
): Promise<{ mutations: number; syncs: number }> {
  const { s, io } = await openCrashable(copyStore(dir), GROUPED, OPEN_OPTS);
  s.startGroups();
  const [mutations0, syncs0] = [io.mutationCount, io.syncCount];
  try {
    t.is(await storeTreeText(s), texts[0], 'the pristine store is the model before the script');
    const reached = await runScript(context(s), io, 0, async (i) => {
      t.is(await storeTreeText(s), texts[i], `uncrashed: the tree after step ${i} (${SCRIPT[i - 1].what})`);
    });
    t.is(reached.answered, SCRIPT.length, 'every step answered without a crash');
    return { mutations: io.mutationCount - mutations0, syncs: io.syncCount - syncs0 };
  } finally {
    await s.close();
  }
}

const stepName = (i: number): string =>
  i > SCRIPT.length ? 'after the last step' : `before step ${i} (${SCRIPT[i - 1].what})`;

// The steps between two I/O calls only change the open group: a kill there keeps the groups committed
// before it. PostgreSQL has no groups (each operation commits alone): its kills are the I/O sweep's.
sqliteOnlyTest('namespace operations in metadata groups, process kill before every step', async (t) => {
  const dir = await pristine();
  const texts = modelTexts();
  await countingRun(t, dir, texts);
  for (let i = 1; i <= SCRIPT.length + 1; i++) await crashRun(t, dir, texts, false, stepName(i), () => i);
});

test('namespace operations, process kill at every I/O', async (t) => {
  const dir = await pristine();
  const texts = modelTexts();
  const { mutations } = await countingRun(t, dir, texts);
  t.true(mutations > SCRIPT.length, `the script does I/O (${mutations} mutating calls)`);
  t.log(
    `${Math.ceil(mutations / IO_STRIDE)} crash points: every ${IO_STRIDE > 1 ? `${IO_STRIDE}th ` : ''}mutating call of the Io`,
  );
  for (let n = 1; n <= mutations; n += IO_STRIDE)
    await crashRun(t, dir, texts, false, `I/O ${n} of ${mutations}`, (io) => {
      io.crashBeforeMutation(io.mutationCount + n, { torn: n % 2 === 0, seed: n });
      return 0;
    });
});

/** The script leaves a group open at 19-21 of its I/O calls: a sweep that commits none tests nothing. */
const GROUP_OPEN_POINTS_MIN = 10;

// The group's timer may fire at any await of an operation, not only between operations: here it
// commits the open group right before the crash, at every I/O (the crash cuts its operation there).
sqliteOnlyTest('namespace operations, process kill at every I/O, the group committed just before it', async (t) => {
  const dir = await pristine();
  const texts = modelTexts();
  const { mutations } = await countingRun(t, dir, texts);
  let groupsCommitted = 0;
  for (let n = 1; n <= mutations; n++)
    await crashRun(t, dir, texts, false, `I/O ${n} of ${mutations}, the group committed`, (io, c) => {
      const ends = io.onCrash; // metaEndsAtCrash's: the process writes nothing more
      io.onCrash = () => {
        if (c.groupOpen()) groupsCommitted++;
        c.commitGroup();
        ends();
      };
      io.crashBeforeMutation(io.mutationCount + n, { torn: n % 2 === 1, seed: n });
      return 0;
    });
  t.log(`${mutations} crash points, ${groupsCommitted} with a group open`);
  t.true(groupsCommitted >= GROUP_OPEN_POINTS_MIN, `a group was open at ${groupsCommitted} crash points`);
});

// A power loss leaves what the last device sync made durable: the crash points are every sync, and
// the end of the script (its last operations in no sync at all).
sqliteOnlyTest('namespace operations, power loss at every device sync and after the last step', async (t) => {
  const dir = await pristine();
  const texts = modelTexts();
  const { syncs } = await countingRun(t, dir, texts);
  t.true(syncs > 3, `the script syncs (${syncs} device syncs)`);
  t.log(`${syncs + 1} crash points: every device sync, and after the last step`);
  for (let n = 1; n <= syncs + 1; n++)
    await crashRun(t, dir, texts, true, n > syncs ? stepName(SCRIPT.length + 1) : `sync ${n} of ${syncs}`, (io) => {
      if (n > syncs) return SCRIPT.length + 1;
      io.crashBeforeSync(io.syncCount + n, { torn: n % 2 === 0, seed: n });
      return 0;
    });
});
