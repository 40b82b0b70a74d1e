// DESIGN §5 commit model, counted through the injectable Io: metadata operations issue no
// device flush; a full commit is one WAL fdatasync and concurrent ones share it (group commit); an
// fsync'd 4 KiB in-place write costs one flush for its journaled intent plus one fdatasync per replica
// (issued together) and nothing more at fsync; unlink and truncate delete no shard inline (the
// reclaimer does, and never a live version); power loss keeps namespace changes up to the last full
// commit and loses the later ones whole, and none the process makes after it.
import test from 'ava';
import { sqliteOnlyTest } from '../helpers/pg-meta';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FaultyIo, IoOp } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { ROOT_INO } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { crashTestLog, openCrashable, reopenAfterCrash } from './crash-harness';
import { SMALL, prng, randomBytes, smallStore, tmpDir } from './helpers';

const FLUSH_OPS: IoOp[] = ['fsync', 'fdatasync', 'fsyncDir'];

function counter(io: FaultyIo): () => Record<string, number> {
  const before = new Map(io.calls);
  return () =>
    Object.fromEntries(
      [...FLUSH_OPS, 'unlink' as IoOp].map((op) => [op, (io.calls.get(op) ?? 0) - (before.get(op) ?? 0)]),
    );
}

/** NodeIo that records how many fdatasyncs were in flight at once (always on the pool, never inline). */
class SyncOverlap extends NodeIo {
  inFlight = 0;
  inFlightMax = 0;
  constructor() {
    super({ inlineWhenIdle: false });
  }
  override async open(p: string, mode: Parameters<NodeIo['open']>[1]): ReturnType<NodeIo['open']> {
    const f = await super.open(p, mode);
    const sync = f.fdatasync.bind(f);
    f.fdatasync = async (inlineOk?: boolean) => {
      this.inFlightMax = Math.max(this.inFlightMax, ++this.inFlight);
      try {
        await sync(inlineOk);
      } finally {
        this.inFlight--;
      }
    };
    return f;
  }
}

async function faulty(
  layout = 'replica:3',
  inner: NodeIo = new NodeIo(),
): Promise<{ store: Store; io: FaultyIo; dir: string }> {
  const { store, dir } = await smallStore(layout, 6);
  await store.close();
  const io = new FaultyIo(inner);
  return { store: await Store.open(dir, { io, log: crashTestLog }), io, dir };
}

sqliteOnlyTest(
  'metadata operations issue no device flush; sync issues one, and none when nothing changed',
  async (t) => {
    const { store, io } = await faulty();
    await store.sync();
    const flushes = counter(io);
    const d = store.ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0);
    const f = store.ns.create(d.ino, 'f', 0o644, 0, 0);
    store.ns.create(ROOT_INO, 'g', 0o644, 0, 0);
    store.ns.rename(d.ino, 'f', ROOT_INO, 'f2');
    store.ns.setattr(f.ino, { mode: 0o600, mtimeNs: 5n });
    store.ns.setxattr(f.ino, 'user.k', Buffer.from('v'));
    store.ns.symlink(ROOT_INO, 's', 'f2', 0, 0);
    store.ns.link(f.ino, ROOT_INO, 'hard');
    store.ns.unlink(ROOT_INO, 'g');
    const empty = store.ns.create(ROOT_INO, 'empty', 0o644, 0, 0);
    store.ns.unlink(ROOT_INO, 'empty');
    await store.deleteFile(empty.ino);
    t.deepEqual(
      flushes(),
      { fsync: 0, fdatasync: 0, fsyncDir: 0, unlink: 0 },
      'create/mkdir/rename/setattr/xattr/link/unlink',
    );
    await store.sync();
    t.is(flushes().fdatasync, 1, 'one full commit: the WAL');
    await store.sync();
    t.is(flushes().fdatasync, 1, 'nothing changed since: no flush');
    await store.close();
  },
);

test('group commit: concurrent syncs share flushes', async (t) => {
  const { store, io } = await faulty();
  await store.sync();
  const flushes = counter(io);
  io.latencyMs = 5; // a flush takes a while, as on a real device
  const syncs: Array<Promise<void>> = [];
  for (let i = 0; i < 8; i++) {
    store.ns.create(ROOT_INO, `f${i}`, 0o644, 0, 0);
    syncs.push(store.sync());
  }
  await Promise.all(syncs);
  t.true(flushes().fdatasync <= 2, `8 concurrent syncs, ${flushes().fdatasync} flushes`);
  await store.close();
});

test('group commit: syncs asked in one turn of the event loop (one batch of requests) share one flush', async (t) => {
  // Counted as full commits (status), which are WAL fdatasyncs on SQLite and synchronous commits on PostgreSQL.
  const { store } = await faulty();
  await store.sync();
  const before = (await store.status()).metadataFlushes;
  const syncs: Array<Promise<void>> = [];
  for (let i = 0; i < 4; i++) {
    store.ns.create(ROOT_INO, `f${i}`, 0o644, 0, 0);
    syncs.push(store.sync()); // the first starts a flush; the rest, in the same turn, join it
  }
  await Promise.all(syncs);
  t.is((await store.status()).metadataFlushes - before, 1, 'one flush for four syncs of one turn');
  await store.sync();
  t.is((await store.status()).metadataFlushes - before, 1, 'and it covered the last of them: nothing left to flush');
  await store.close();
});

sqliteOnlyTest(
  "an fsync'd 4 KiB in-place write: one flush of the intent log and none at fsync; the applier then syncs one replica, then the others together",
  async (t) => {
    const overlap = new SyncOverlap();
    const { store, io } = await faulty('replica:3', overlap);
    const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
    const old = randomBytes(prng(1), SMALL.chunkSizeBytes);
    await store.write(f.ino, 0, old);
    await store.sync();
    // The log's first commit grows its new file by a step of zeros (store/chunks/intent-log.ts); later ones stay inside.
    await store.write(f.ino, 40_000, Buffer.alloc(10, 3));
    old.fill(3, 40_000, 40_010);
    await store.applyNow();
    const flushes = counter(io);
    overlap.inFlightMax = 0;
    const before = await store.status();
    await store.write(f.ino, 5000, Buffer.alloc(4096, 7));
    await store.sync();
    t.deepEqual(flushes(), { fsync: 0, fdatasync: 1, fsyncDir: 0, unlink: 0 }, 'durable in the intent log: one flush');
    const after = await store.status();
    t.is(after.intentBacklog.logFlushes - before.intentBacklog.logFlushes, 1, "the flush is the log file's");
    t.is(after.metadataFlushes, before.metadataFlushes, 'none of the metadata WAL: the log holds the times it stamped');
    t.is(
      after.intentBacklog.logBytesWritten - before.intentBacklog.logBytesWritten,
      8192,
      'a record of the 4 KiB written, in whole 4 KiB blocks',
    );
    old.fill(7, 5000, 9096);
    t.true(
      (await store.read(f.ino, 0, old.length)).equals(old),
      'read back before it is applied: the log over the shards',
    );
    await store.applyNow();
    t.deepEqual(flushes(), { fsync: 0, fdatasync: 4, fsyncDir: 0, unlink: 0 }, 'applied: one fdatasync per replica');
    // The log holds only the bytes written, so one replica is old or new whole at every instant.
    t.is(overlap.inFlightMax, 2, 'the first replica alone, then the other two together');
    t.true((await store.read(f.ino, 0, old.length)).equals(old));
    t.is((await store.status()).openIntents, 0);
    await store.close();
  },
);

sqliteOnlyTest("fsync'd writes to four files in one turn share one intent log commit (group commit)", async (t) => {
  const { store, io } = await faulty('replica:3');
  const inos = [0, 1, 2, 3].map((i) => store.ns.create(ROOT_INO, `f${i}`, 0o644, 0, 0).ino);
  for (const ino of inos) await store.write(ino, 0, randomBytes(prng(ino), SMALL.chunkSizeBytes));
  await store.sync();
  const flushes = counter(io);
  await Promise.all(
    inos.map(async (ino) => {
      await store.write(ino, 8192, Buffer.alloc(4096, ino));
      await store.sync();
    }),
  );
  t.deepEqual(flushes(), { fsync: 0, fdatasync: 1, fsyncDir: 0, unlink: 0 }, 'four fsyncs, one device flush');
  for (const ino of inos) t.true((await store.read(ino, 8192, 4096)).equals(Buffer.alloc(4096, ino)));
  await store.close();
});

test('unlink and truncate delete no shard inline; the reclaimer does, never a live version', async (t) => {
  const { store, io, dir } = await faulty();
  const a = store.ns.create(ROOT_INO, 'a', 0o644, 0, 0);
  const b = store.ns.create(ROOT_INO, 'b', 0o644, 0, 0);
  await store.write(a.ino, 0, randomBytes(prng(2), 3 * SMALL.chunkSizeBytes));
  const bData = randomBytes(prng(3), 2 * SMALL.chunkSizeBytes + 10);
  await store.write(b.ino, 0, bData);
  await store.write(b.ino, 5, Buffer.from('xyz')); // in place: no version to reclaim
  const flushes = counter(io);
  store.ns.unlink(ROOT_INO, 'a');
  await store.deleteFile(a.ino);
  await store.truncate(b.ino, SMALL.chunkSizeBytes + 100); // drops chunk 2, rewrites chunk 1 shorter
  t.is(flushes().unlink, 0, 'no shard deleted inline');
  t.is((await store.status()).reclaimBacklog, 3 + 2, "a's 3 chunks, b's dropped chunk and old tail");
  const report = await store.reclaimNow();
  t.is(report.versionsDeleted, 5);
  t.is(flushes().unlink, 5 * 3);
  t.is((await store.status()).reclaimBacklog, 0);
  bData.write('xyz', 5);
  t.true(
    (await store.read(b.ino, 0, SMALL.chunkSizeBytes + 100)).equals(bData.subarray(0, SMALL.chunkSizeBytes + 100)),
  );
  const scrub = await store.scrub();
  t.is(scrub.badCount, 0);
  t.deepEqual(scrub.leaks.paths, []);
  t.is(countShards(dir), 2 * 3, "only b's two chunks remain");
  await store.close();
});

test('the reclaimer never deletes a version the chunk map points at', async (t) => {
  const { store } = await faulty();
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(4), SMALL.chunkSizeBytes);
  await store.write(f.ino, 0, data);
  // A queue entry naming the live version (as a crash between reserve and commit can leave,
  // with the commit landing after all) is dropped without deleting anything.
  const db = (store as unknown as { db: import('../../store/meta/sql-engine').Db }).db;
  const row = db.prepare('SELECT version FROM chunks WHERE ino = ? AND chunk_index = 0').get(f.ino) as {
    version: bigint;
  };
  db.prepare(
    `INSERT INTO reclaim SELECT ino, chunk_index, version, layout, placement_seed, cluster_map_epoch, 0 FROM chunks
              JOIN inodes USING (ino) WHERE ino = ? AND chunk_index = 0`,
  ).run(f.ino);
  t.is(row.version, 1n);
  const report = await store.reclaimNow();
  t.deepEqual(report, { versionsDeleted: 0, keptLive: 1, failures: 0 });
  t.true((await store.read(f.ino, 0, data.length)).equals(data));
  await store.close();
});

function countShards(dir: string): number {
  return (fs.readdirSync(path.join(dir, 'disks'), { recursive: true }) as string[]).filter((p) => p.endsWith('.shard'))
    .length;
}

/**
 * Power loss of the metadata: meta.db-wal goes back to its content at the last full commit (FaultyIo
 * restoreExternal; SQLite's own checkpoints are off so it never syncs the WAL behind the Io's back).
 * The store is reopened from a copy, as after a reboot.
 */
sqliteOnlyTest(
  'power loss keeps namespace changes up to the last full commit and loses later ones whole',
  async (t) => {
    const { store, dir } = await smallStore('replica:3', 6);
    await store.close();
    const io = new FaultyIo(new NodeIo());
    io.restoreExternal = true;
    const s = await Store.open(dir, { io, log: crashTestLog });
    (s as unknown as { db: import('../../store/meta/sqlite/engine').SqliteDb }).db.native.pragma(
      'wal_autocheckpoint = 0',
    );
    const kept = s.ns.create(ROOT_INO, 'kept', 0o644, 0, 0);
    const data = randomBytes(prng(5), SMALL.chunkSizeBytes + 7);
    await s.write(kept.ino, 0, data);
    await s.sync();
    const late = s.ns.create(ROOT_INO, 'late', 0o644, 0, 0);
    await s.write(late.ino, 0, data); // its reservation flush makes 'late' durable; its chunk commit is not
    s.ns.create(ROOT_INO, 'lost', 0o644, 0, 0);
    s.ns.rename(ROOT_INO, 'kept', ROOT_INO, 'renamed');
    io.crash();
    await io.whenRestored();
    const copy = path.join(tmpDir(), 'after');
    fs.cpSync(dir, copy, { recursive: true, filter: (p) => !p.endsWith('-shm') && !p.endsWith('chunkfs.lock') });
    const r = await Store.open(copy);
    t.deepEqual(
      r.ns
        .readdir(ROOT_INO)
        .map((e) => e.name)
        .sort(),
      ['kept', 'late'],
      "no 'lost', no rename",
    );
    t.true((await r.read(kept.ino, 0, data.length)).equals(data), 'fsynced data intact');
    t.is(r.ns.getattr(late.ino)!.sizeBytes, 0, "late's chunk commit was lost whole: an empty file, never a hole");
    t.true((await r.status()).reclaimBacklog > 0, "the lost file's reserved versions are queued");
    await r.reclaimNow();
    const scrub = await r.scrub();
    t.deepEqual(scrub.leaks.paths, [], 'nothing leaked');
    t.is(scrub.badCount, 0);
    t.is(countShards(copy), 2 * 3);
    await r.close();
  },
);

// The process goes on after a simulated power loss: a write whose refused shard was its last one
// commits degraded (seen once as a live shard failing scrub after the crash sweep of
// log-ec-transformed.test.ts). Such commits land after the WAL put back, never in the store reopened.
sqliteOnlyTest('a commit the process makes after the power loss is not in the store reopened after it', async (t) => {
  const { store, dir } = await smallStore('replica:3', 6);
  await store.close();
  const { s, io } = await openCrashable(dir, true);
  s.ns.create(ROOT_INO, 'kept', 0o644, 0, 0);
  await s.sync();
  io.crash();
  await io.whenRestored();
  s.ns.create(ROOT_INO, 'after', 0o644, 0, 0); // appended right after the WAL's durable end
  const { r } = await reopenAfterCrash(s, dir, true);
  t.deepEqual(
    r.ns.readdir(ROOT_INO).map((e) => e.name),
    ['kept'],
    "no 'after'",
  );
  await r.close();
});

sqliteOnlyTest('the background timer makes a change durable without any fsync', async (t) => {
  const { store, io } = await faulty();
  await store.sync();
  const flushes = counter(io);
  const env = (store as unknown as { env: { commits: import('../../store/meta/commit-log').CommitLog } }).env;
  // A slow device: the timer's ticks (every 100 ms here) come while its flush runs, and must not queue another.
  io.latencyMs = 150;
  env.commits.start(100); // the mount uses FLUSH_DELAY_MS (5 s); a short delay keeps the test quick
  store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  t.true(env.commits.dirty);
  for (let i = 0; i < 200 && env.commits.dirty; i++) await new Promise((r) => setTimeout(r, 50));
  t.false(env.commits.dirty, 'flushed by the timer');
  await env.commits.stop(); // and any flush queued behind it
  t.is(flushes().fdatasync, 1, 'one flush, none queued for nothing');
  await store.close();
});
