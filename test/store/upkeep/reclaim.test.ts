// The reclaimer (store/upkeep/reclaim.ts, DESIGN §5 "free last"), through its own drain() on a
// store's chunk environment and a FaultyIo: a queued version is deleted only after every commit so
// far is durable, never while the chunk map points at it or while it is being written; a disk
// failing a delete keeps its entry queued for the next round; a metadata flush that fails deletes
// nothing.
import test from 'ava';
import * as fs from 'node:fs';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { Reclaimer } from '../../../store/upkeep/reclaim';
import { testMetaEngine } from '../../helpers/pg-meta';
import { FileFixture, fileFixture } from './fixture';

const CHUNKS = 3;

function reclaimerOf(f: FileFixture): Reclaimer {
  const files = (f.store as unknown as { files: { placement(s: bigint, e: number, c: number, n: number): number[] } })
    .files;
  return new Reclaimer(f.env, (seed, epoch, c, count) => files.placement(seed, epoch, c, count));
}

/** The fixture's file truncated to nothing: its chunk versions queued; their shard paths. */
async function truncated(f: FileFixture): Promise<string[]> {
  const paths = Array.from({ length: CHUNKS }, (_, c) => [0, 1, 2].map((i) => f.env.shards.path(f.ref(c), i))).flat();
  await f.store.truncate(f.ino, 0);
  return paths;
}

test('drain deletes the freed versions after a flush, and leaves one being written', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const f = await fileFixture('replica:3', CHUNKS, io);
  const live = f.ref(0);
  const paths = await truncated(f);
  t.is(f.env.reclaim.length, CHUNKS);
  // A version being written now (queued until its commit, chunk-writer.ts): never taken.
  f.env.reclaim.add(f.ino, 5, 1n, live.fl);
  f.env.inflight.add(f.ino, 5, 1n);
  const syncsBefore = io.syncCount;
  const report = await reclaimerOf(f).drain();
  t.like(report, { versionsDeleted: CHUNKS, failures: 0 });
  if (testMetaEngine() === 'sqlite') t.true(io.syncCount > syncsBefore, 'the commits that freed them flushed first');
  t.deepEqual(
    paths.filter((p) => fs.existsSync(p)),
    [],
    'every shard of the freed versions gone',
  );
  t.true(f.env.reclaim.has(f.ino, 5, 1n), 'the version in flight stays queued');
  f.env.inflight.delete(f.ino, 5, 1n);
  await f.store.close();
});

test('a version the chunk map points at is never deleted: its entry goes, its shards stay', async (t) => {
  const f = await fileFixture('replica:3', CHUNKS);
  const ref = f.ref(1);
  f.env.reclaim.add(f.ino, 1, ref.version, ref.fl);
  const report = await reclaimerOf(f).drain();
  t.like(report, { versionsDeleted: 0, keptLive: 1 });
  t.false(f.env.reclaim.has(f.ino, 1, ref.version));
  t.true((await f.store.read(f.ino, 0, f.data.length)).equals(f.data));
  await f.store.close();
});

test('a disk failing its deletes: the entry stays queued and the next drain finishes it', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const f = await fileFixture('replica:3', CHUNKS, io);
  const failing = f.store.diskPaths().get(f.ref(0).diskIds[0])!;
  const paths = await truncated(f);
  io.addFault({ op: 'unlink', path: failing, error: 'EIO' });
  const first = await reclaimerOf(f).drain();
  t.true(first.failures >= 1);
  t.true(f.env.reclaim.length >= 1, 'kept for a later round');
  t.true(
    paths.filter((p) => fs.existsSync(p)).every((p) => p.startsWith(failing)),
    'the other disks are done',
  );
  io.clearFaults();
  const second = await reclaimerOf(f).drain();
  t.is(second.failures, 0);
  t.is(f.env.reclaim.length, 0);
  t.deepEqual(
    paths.filter((p) => fs.existsSync(p)),
    [],
  );
  await f.store.close();
});

// SQLite: the flush is the WAL's fdatasync through the Io; PostgreSQL commits on the server.
const sqliteOnly = testMetaEngine() === 'sqlite' ? test : test.skip;
sqliteOnly('a metadata flush that fails deletes nothing (the commit that freed them may be lost)', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const f = await fileFixture('replica:3', CHUNKS, io);
  const paths = await truncated(f);
  io.addFault({ op: 'fdatasync', path: 'meta.db-wal', error: 'EIO' });
  const report = await reclaimerOf(f).drain();
  t.like(report, { versionsDeleted: 0, failures: CHUNKS });
  t.deepEqual(
    paths.filter((p) => !fs.existsSync(p)),
    [],
    'every shard still there',
  );
  t.is(f.env.reclaim.length, CHUNKS);
  io.clearFaults();
  t.is((await reclaimerOf(f).drain()).versionsDeleted, CHUNKS);
  await f.store.close();
});
