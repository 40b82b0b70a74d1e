// Transaction groups (DESIGN §5), store level: a group's rows are visible at once and committed at
// its close; the dirty-byte bound (a store tunable) closes groups with no sync.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Store } from '../../store/store';
import { NodeIo, type IoFile, type OpenMode } from '../../store/io/io';
import { FaultyIo } from '../../store/io/faulty-io';
import { SMALL, prng, randomBytes, smallStore, tmpDir } from './helpers';
import { sqliteOnlyTest, testMetaEngine } from '../helpers/pg-meta';

const CS = SMALL.chunkSizeBytes;

async function pristine(layout: string): Promise<{ dir: string; ino: number; old: Buffer }> {
  const { store, dir } = await smallStore(layout, 6);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const old = randomBytes(prng(5), 2 * CS);
  await store.write(f.ino, 0, old);
  await store.close();
  return { dir, ino: f.ino, old };
}

/** An Io whose fdatasyncs of the files `holds` picks wait while held; `waiting` counts those that reached the hold. */
class HeldFlushIo extends NodeIo {
  private held: Promise<void> | null = null;
  private releaseHeld: () => void = () => undefined;
  waiting = 0;
  constructor(private readonly holds: (p: string) => boolean) {
    super();
  }
  hold(): void {
    this.held = new Promise((resolve) => (this.releaseHeld = resolve));
  }
  release(): void {
    this.held = null;
    this.releaseHeld();
  }
  override async open(p: string, mode: OpenMode): Promise<IoFile> {
    const file = await super.open(p, mode);
    const held = this.held;
    if (held === null || !this.holds(p)) return file;
    return new Proxy(file, {
      get: (target, prop) => {
        if (prop === 'fdatasync')
          return async (...args: Parameters<IoFile['fdatasync']>) => {
            this.waiting++;
            await held;
            return target.fdatasync(...args);
          };
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
}

/** Shard files: a group's close stays in its flush until release() (the metadata's WAL flushes pass). */
const heldShardSyncs = (): HeldFlushIo => new HeldFlushIo((p) => p.includes(`${path.sep}.chunks${path.sep}`));
/** meta.db's WAL: a grouped write stays in its reservation's flush until release(). */
const heldWalSyncs = (): HeldFlushIo => new HeldFlushIo((p) => p.endsWith('-wal'));

/** The directories under dir named like a chunk directory of version `version`, chunk `chunkIndex` (spec §7). */
function chunkDirsOf(dir: string, version: number, chunkIndex: number): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const p = path.join(d, e.name);
      if (e.name === `c${chunkIndex}` && d.endsWith(`.v${version}`)) out.push(p);
      else walk(p);
    }
  };
  walk(dir);
  return out;
}

/** Set a store tunable (chunkfs.json defaults). */
function setTunable(dir: string, name: string, value: unknown): void {
  const file = path.join(dir, 'chunkfs.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8')) as { defaults: Record<string, unknown> };
  config.defaults[name] = value;
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
}

/** Set the store config's groupDirtyBytesMax. */
function setBound(dir: string, value: unknown): void {
  setTunable(dir, 'groupDirtyBytesMax', value);
}

test('a group holds its rows in memory until it closes: reads, size and blocks see them at once, the database after sync', async (t) => {
  const { dir, ino, old } = await pristine('replica:3');
  const s = await Store.open(dir);
  try {
    s.startGroups();
    const tail = randomBytes(prng(13), CS);
    await s.write(ino, 2 * CS, tail);
    t.is(s.ns.getattr(ino)!.sizeBytes, 3 * CS, "getattr shows the group's size before it closes");
    t.true((await s.read(ino, 2 * CS, CS)).equals(tail), "reads see the group's chunk before it closes");
    t.is(s.allocatedBytes(ino), 3 * CS, "st_blocks counts the group's chunk");
    // What another opener (or a restart after a process kill) finds: a copy of the store now.
    // On PostgreSQL a read-only opener of the same database (a copy would take the lease: DESIGN §9).
    const committedSize = async (): Promise<number> => {
      if (testMetaEngine() === 'postgres') {
        const reader = await Store.open(dir, { readOnly: true });
        try {
          return reader.ns.getattr(ino)!.sizeBytes;
        } finally {
          await reader.close();
        }
      }
      const to = path.join(tmpDir('chunkfs-group-'), 'store');
      fs.cpSync(dir, to, { recursive: true, filter: (p) => !p.endsWith('-shm') && !p.endsWith('chunkfs.lock') });
      const copy = await Store.open(to);
      try {
        return copy.ns.getattr(ino)!.sizeBytes;
      } finally {
        await copy.close();
      }
    };
    t.is(await committedSize(), old.length, 'not committed before the group closes (data first)');
    await s.sync();
    t.is(await committedSize(), 3 * CS, 'committed by the close');
  } finally {
    await s.close();
  }
});

test('the dirty-byte bound (groupDirtyBytesMax) closes groups with no sync; a bad bound or interval is refused in one line', async (t) => {
  const { dir, ino } = await pristine('replica:3');
  setBound(dir, 3 * 2 * CS); // two chunks of three replicas
  const s = await Store.open(dir);
  const data = randomBytes(prng(21), 8 * CS);
  try {
    s.startGroups(); // no timer: only the bound closes a group here
    for (let c = 0; c < 8; c++) await s.write(ino, 2 * CS + c * CS, data.subarray(c * CS, (c + 1) * CS));
    t.true((await s.status()).groupsClosed >= 2, 'groups closed at the bound, before any sync');
    await s.sync();
  } finally {
    await s.close();
  }
  const again = await Store.open(dir);
  try {
    t.true((await again.read(ino, 2 * CS, 8 * CS)).equals(data), 'every chunk committed');
  } finally {
    await again.close();
  }
  setBound(dir, -1);
  const err = await t.throwsAsync(Store.open(dir));
  t.regex(err!.message, /groupDirtyBytesMax -1 must be a positive integer/);
  t.false(err!.message.includes('\n'), 'one line');
  setBound(dir, 3 * 2 * CS);
  setTunable(dir, 'groupIntervalMs', 0);
  const interval = await t.throwsAsync(Store.open(dir));
  t.regex(interval!.message, /groupIntervalMs 0 must be a positive integer \(milliseconds\)/);
});

test('a group waiting for the close before it stays visible: size and SEEK_HOLE do not change when it commits', async (t) => {
  // DESIGN §5 one view: a group handed to close while an earlier one still flushes waits in the
  // chain; its rows must answer all that time, as they did while open and will once committed.
  const { store, dir } = await smallStore('replica:3', 6);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const g = store.ns.create(1, 'g', 0o644, 0, 0);
  await store.write(f.ino, 0, randomBytes(prng(31), CS - 1)); // committed: chunk 0 ends one byte short
  await store.close();
  const io = heldShardSyncs();
  const s = await Store.open(dir, { io });
  try {
    s.startGroups();
    await s.write(g.ino, 0, randomBytes(prng(32), CS)); // group A
    io.hold();
    const closeA = s.sync(); // A flushes, held
    const whole = randomBytes(prng(33), CS);
    await s.write(f.ino, 0, whole); // group B: chunk 0 whole, one byte longer
    const shows = (): unknown => ({
      size: s.ns.getattr(f.ino)!.sizeBytes,
      hole: s.seekData(f.ino, CS - 1, CS, 'hole'),
      data: s.seekData(f.ino, CS - 1, CS, 'data'),
      blocks: s.allocatedBytes(f.ino),
    });
    const open = shows();
    t.deepEqual(open, { size: CS, hole: CS, data: CS - 1, blocks: CS }, 'the open group shows its row');
    const closeB = s.sync(); // B waits for A's close
    t.deepEqual(shows(), open, 'B, waiting for A, shows what it showed while open');
    t.true((await s.read(f.ino, 0, CS)).equals(whole), "reads see B's chunk while it waits");
    io.release();
    await Promise.all([closeA, closeB]);
    t.deepEqual(shows(), open, 'and what B committed');
  } finally {
    io.release();
    await s.close();
  }
});

test("st_blocks of fallocate'd space a group writes into: the same before and after the group commits", async (t) => {
  // DESIGN §5 one view: an allocated chunk holds [its start, max(stored, allocated)); a group's row
  // there must not count on top of the allocation while the group is open.
  const { dir, ino } = await pristine('replica:3'); // chunks 0 and 1 stored
  const s = await Store.open(dir);
  try {
    s.startGroups();
    await s.truncate(ino, 4 * CS); // chunks 2 and 3: holes
    s.preallocate(ino, 2 * CS, CS); // chunk 2 allocated whole
    t.is(s.allocatedBytes(ino), 3 * CS, 'the allocated chunk counts');
    await s.write(ino, 2 * CS, randomBytes(prng(41), CS / 2)); // its first half written, in the group
    t.is(s.allocatedBytes(ino), 3 * CS, 'the write into allocated space adds nothing while the group is open');
    await s.sync();
    t.is(s.allocatedBytes(ino), 3 * CS, 'nor once the group committed');
  } finally {
    await s.close();
  }
});

sqliteOnlyTest(
  'a grouped write makes its chunk directories while its reservation is flushed, and no shard file before it is durable',
  async (t) => {
    // DESIGN §5: the marker check and the mkdir of each shard's chunk directory run beside the
    // reservation's flush, so the shard writes start with their open; a shard file only after it.
    const { dir, ino } = await pristine('replica:3');
    const io = heldWalSyncs();
    const s = await Store.open(dir, { io });
    try {
      s.startGroups();
      const tail = randomBytes(prng(41), CS);
      io.hold();
      const writing = s.write(ino, 2 * CS, tail);
      for (let i = 0; i < 100_000 && (io.waiting === 0 || chunkDirsOf(dir, 1, 2).length < 3); i++)
        await new Promise((resolve) => setImmediate(resolve));
      t.true(io.waiting > 0, "the write waits in its reservation's flush");
      const dirs = chunkDirsOf(dir, 1, 2);
      t.is(dirs.length, 3, 'the chunk directory of each replica is made meanwhile');
      t.deepEqual(
        dirs.flatMap((d) => fs.readdirSync(d)),
        [],
        'no shard file (nor temp file) before the reservation is durable',
      );
      io.release();
      await writing;
      await s.sync();
      t.true((await s.read(ino, 2 * CS, CS)).equals(tail), 'the chunk is stored and committed');
    } finally {
      io.release();
      await s.close();
    }
  },
);

test('a group with syncfsFilesMin shard files on one file system flushes it by one syncfs; a smaller one file by file', async (t) => {
  const { dir, ino } = await pristine('replica:3');
  const flushes = async (syncfsFilesMin: number): Promise<Record<string, number>> => {
    const io = new FaultyIo(new NodeIo());
    const s = await Store.open(dir, { io });
    try {
      s.startGroups(syncfsFilesMin);
      await s.write(ino, 2 * CS, randomBytes(prng(syncfsFilesMin), 2 * CS)); // 2 chunks: 6 shard files
      const before = new Map(io.calls);
      await s.sync();
      const n = (op: 'syncfs' | 'fsyncDir' | 'fdatasync'): number => (io.calls.get(op) ?? 0) - (before.get(op) ?? 0);
      return { syncfs: n('syncfs'), fsyncDir: n('fsyncDir'), fdatasync: n('fdatasync') };
    } finally {
      await s.close();
    }
  };
  const whole = await flushes(6);
  // The one fdatasync left on SQLite is the metadata commit's (meta.db's WAL), after the syncfs.
  const metaFlushes = testMetaEngine() === 'postgres' ? 0 : 1;
  const expected = { syncfs: 1, fsyncDir: 0, fdatasync: metaFlushes };
  t.deepEqual(whole, expected, 'one syncfs: no shard file or directory flushed alone');
  const each = await flushes(7);
  t.is(each.syncfs, 0, 'below the file count: no syncfs');
  t.true(
    each.fdatasync >= 6 + metaFlushes && each.fsyncDir >= 6,
    `each shard file and directory flushed (${JSON.stringify(each)})`,
  );
});

test('NodeIo.syncfs flushes the file system of a path; a path that is not there fails with its errno name', async (t) => {
  const dir = tmpDir('chunkfs-syncfs-');
  const io = new NodeIo();
  try {
    await io.syncfs([dir]);
    // The path now names another directory (as a device mounted there): the kept descriptor is not used.
    fs.renameSync(dir, `${dir}.old`);
    fs.mkdirSync(dir);
    await io.syncfs([dir]);
    const held = fs.readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        return [fs.readlinkSync(`/proc/self/fd/${fd}`, { encoding: 'utf8' })];
      } catch {
        return []; // closed meanwhile (the readdir's own descriptor)
      }
    });
    t.true(held.includes(fs.realpathSync(dir)), 'a descriptor of what the path names now is held');
    fs.rmSync(`${dir}.old`, { recursive: true });
    await t.throwsAsync(io.syncfs([path.join(dir, 'missing')]), { code: 'ENOENT' });
  } finally {
    io.closeAll();
  }
});
