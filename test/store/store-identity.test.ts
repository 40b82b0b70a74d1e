// A store opened on metadata that is not its own (DESIGN §4 "Identity"; store/meta/store-identity.ts), on
// the engine of CHUNKFS_TEST_META: empty metadata (an empty meta.db; a database made again or mistyped)
// and another store's are refused by every opener (read-write, read-only, follower, meta copy) before
// anything changes, naming the ids and what to check; an older copy of its own metadata (a restore)
// opens, and scrub --repair reports what differs and removes nothing. Every shard file stays. The leak
// scan's quarantine is emptied past its grace period (store tunable quarantineGraceDays).
import test from 'ava';
import * as fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { Store } from '../../store/store';
import { moveStoreMeta } from '../../store/meta-move';
import { connectPg } from '../../store/meta/postgres/connect';
import { storeTablesIn } from '../../store/meta/meta-tables';
import { Db, STORE_ID_VERSION } from '../../store/meta/meta';
import { openDb } from '../../store/meta/sqlite/database';
import { metaStoreId } from '../../store/meta/store-identity';
import { QUARANTINE_DIR, quarantineStamp } from '../../store/upkeep/quarantine';
import { shardRelPath } from '../../src/path';
import { copyStoreDir, forgetStoreId, openStoreMetaOf, storeUuidOf, testMetaEngine } from '../helpers/pg-meta';
import { RECONNECT_INTERVAL_MS } from '../../store/meta/postgres/engine';
import { configOf, shardFiles, useMetaOf, writeConfig } from '../helpers/meta-swap';
import { SMALL, prng, randomBytes, smallStore, tmpDir } from './helpers';

/** What the metadata holds now: an empty meta.db, or every table's rows (meta.db or the database). */
function metaState(dir: string): string {
  const config = configOf(dir);
  if (config.meta === undefined && fs.statSync(path.join(dir, 'meta.db')).size === 0) return 'an empty meta.db';
  const db = config.meta === undefined ? openDb(path.join(dir, 'meta.db'), true) : connectPg(config.meta.url);
  try {
    const tables = storeTablesIn(db);
    const rows = tables.map(
      (n) =>
        `${n}: ${JSON.stringify(db.prepare(`SELECT * FROM ${n} ORDER BY 1`).all(), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`,
    );
    return `schema ${db.schemaVersion()}\n${rows.join('\n')}`;
  } finally {
    db.close();
  }
}

async function populated(seed: number): Promise<{ dir: string; data: Buffer; ino: number }> {
  const { store, dir } = await smallStore('replica:2', 3);
  const data = randomBytes(prng(seed), 2 * SMALL.chunkSizeBytes + 777);
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  await store.write(ino, 0, data);
  const g = store.ns.create(1, 'g', 0o644, 0, 0).ino;
  await store.write(g, 0, randomBytes(prng(seed + 1), SMALL.chunkSizeBytes));
  await store.close();
  return { dir, data, ino };
}

/** Every opener refuses the store in dir with a message matching re; metadata and shards stay as they were. */
async function refusedByEveryOpener(t: import('ava').ExecutionContext, dir: string, re: RegExp): Promise<void> {
  const shards = shardFiles(dir);
  const meta = metaState(dir);
  await t.throwsAsync(Store.open(dir), { message: re }, 'read-write');
  await t.throwsAsync(Store.open(dir, { readOnly: true }), { message: re }, 'read-only');
  const ro = await Store.open(dir, { readOnly: true }).catch((err: Error) => err.message);
  t.notRegex(String(ro), /read-write once/, 'read-only never asks for the harmful read-write open');
  if (configOf(dir).meta !== undefined)
    await t.throwsAsync(Store.open(dir, { readOnly: true, follow: true }), { message: re }, 'follower');
  const to = configOf(dir).meta === undefined ? 'postgresql:///nowhere?host=/nonexistent' : 'sqlite';
  t.throws(() => moveStoreMeta(dir, to), { message: re }, 'meta copy');
  t.deepEqual(shardFiles(dir), shards, 'every shard file is still there');
  t.is(metaState(dir), meta, 'the metadata is as it was');
  t.false(fs.existsSync(path.join(dir, 'meta.db.copy')), 'meta copy began nothing');
}

test('empty metadata (an empty meta.db, a database made again): refused by every opener, nothing changes', async (t) => {
  const { dir, data, ino } = await populated(1);
  const original = path.join(tmpDir(), 'original');
  copyStoreDir(dir, original);
  const uuid = storeUuidOf(dir);
  useMetaOf(dir, 'empty');
  const re = new RegExp(
    `holds no chunkfs metadata \\(no schema\\), so it is not this store's \\(store ${uuid}\\).*check `,
  );
  await refusedByEveryOpener(t, dir, re);
  useMetaOf(dir, original); // its own metadata back: the store is whole
  const s = await Store.open(dir);
  t.true((await s.read(ino, 0, data.length)).equals(data));
  await s.close();
});

test("another store's metadata: refused by every opener, naming both ids; nothing changes in either store", async (t) => {
  const a = await populated(2);
  const b = await populated(3);
  const [ua, ub] = [storeUuidOf(a.dir), storeUuidOf(b.dir)];
  const own = path.join(tmpDir(), 'own');
  copyStoreDir(a.dir, own);
  useMetaOf(a.dir, b.dir);
  const bShards = shardFiles(b.dir);
  await refusedByEveryOpener(
    t,
    a.dir,
    new RegExp(`holds the metadata of store ${ub}, and chunkfs.json names store ${ua}.*check `),
  );
  t.deepEqual(shardFiles(b.dir), bShards);
  const sb = await Store.open(b.dir);
  t.true((await sb.read(b.ino, 0, b.data.length)).equals(b.data), 'the other store is untouched');
  await sb.close();
  useMetaOf(a.dir, own);
  const sa = await Store.open(a.dir);
  t.true((await sa.read(a.ino, 0, a.data.length)).equals(a.data));
  await sa.close();
});

test('an older copy of its own metadata (a restore) opens; scrub --repair reports what differs and removes nothing', async (t) => {
  const { dir, data, ino } = await populated(4);
  const backup = path.join(tmpDir(), 'backup');
  copyStoreDir(dir, backup);
  // After the backup: a new file (an inode number the copy never handed out) and f rewritten (versions it never saw).
  const s = await Store.open(dir);
  const h = s.ns.create(1, 'h', 0o644, 0, 0).ino;
  await s.write(h, 0, randomBytes(prng(5), SMALL.chunkSizeBytes));
  await s.write(ino, 0, randomBytes(prng(6), data.length));
  await s.sync();
  await s.reclaimNow(); // f's old versions are gone from the disks
  await s.close();
  useMetaOf(dir, backup);
  const shards = shardFiles(dir);
  const restored = await Store.open(dir);
  try {
    const report = await restored.scrub({ repair: true, force: true });
    t.true(
      report.leaks.unknown >= 3,
      `h's and f's new shards are unknown to the copy: ${JSON.stringify(report.leaks)}`,
    );
    t.is(report.leaks.leakedShards + report.leaks.leakedTemps, 0, 'nothing is proven freed');
    t.is(report.leaks.removed, 0);
    t.true(report.failed.length > 0, "f's chunks as the copy knows them are gone: reported unrecoverable");
    t.deepEqual(shardFiles(dir), shards, 'every shard file is still there');
    for (const disk of fs.readdirSync(path.join(dir, 'disks')))
      t.false(fs.existsSync(path.join(dir, 'disks', disk, QUARANTINE_DIR)));
  } finally {
    await restored.close();
  }
});

test("metadata made before store ids gets the config's id at its first read-write open, and only then", async (t) => {
  const { dir, data, ino } = await populated(7);
  const uuid = storeUuidOf(dir);
  forgetStoreId(dir);
  await t.throwsAsync(Store.open(dir, { readOnly: true }), { message: /older than this build's/ });
  const s = await Store.open(dir);
  t.true((await s.read(ino, 0, data.length)).equals(data));
  await s.close();
  const db = openStoreMetaOf(dir, true);
  t.is(metaStoreId(db, STORE_ID_VERSION), uuid);
  db.close();
});

test('the quarantine: freed shards are moved there, and a run folder is deleted once past quarantineGraceDays', async (t) => {
  const { store, dir } = await smallStore('replica:2', 3);
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  await store.write(ino, 0, randomBytes(prng(8), SMALL.chunkSizeBytes));
  const gone = store.ns.create(1, 'gone', 0o644, 0, 0).ino;
  await store.write(gone, 0, randomBytes(prng(9), SMALL.chunkSizeBytes));
  // A shard of `gone` that escaped the reclaim queue: kept aside, put back after its unlink was reclaimed.
  const escaped = (await store.shardPath(gone, 0, 0))!;
  const bytes = fs.readFileSync(escaped);
  store.ns.unlink(1, 'gone');
  await store.deleteFile(gone);
  await store.sync();
  await store.reclaimNow();
  t.false(fs.existsSync(escaped));
  fs.mkdirSync(path.dirname(escaped), { recursive: true });
  fs.writeFileSync(escaped, bytes);
  const disk = [...store.diskPaths().values()].find((d) => escaped.startsWith(d + '/'))!;
  const old = path.join(disk, QUARANTINE_DIR, '20200101T000000Z', '.chunks', 'x');
  fs.mkdirSync(path.dirname(old), { recursive: true });
  fs.writeFileSync(old, 'an old run');
  const notOurs = path.join(disk, QUARANTINE_DIR, 'keep-me');
  fs.writeFileSync(notOurs, '');
  const report = await store.scrub({ repair: true, force: true }); // 1 of 3 shard files: past the 5% share
  t.is(report.leaks.removed, 1);
  t.is(report.leaks.quarantineEmptied, 1, 'the 2020 run is past the default 7 days');
  t.false(fs.existsSync(path.dirname(path.dirname(old))));
  t.true(fs.existsSync(notOurs), "a name that is not a run's is left alone");
  const kept = path.join(disk, report.leaks.quarantine!, path.relative(disk, escaped));
  t.true(
    fs.readFileSync(kept).equals(bytes),
    'the removed shard is in the quarantine, keeping its path below the disk',
  );
  t.false(fs.existsSync(escaped));
  await store.close();
  // Undone as docs/operations.md "Quarantine" says: the run's .chunks tree copied back into its disk.
  const q = path.join(disk, report.leaks.quarantine!);
  execFileSync('bash', ['-c', `cp -a --no-clobber --link "${q}/.chunks/." "${disk}/.chunks/"`]);
  t.true(fs.readFileSync(escaped).equals(bytes), 'put back where it was');
  fs.rmSync(escaped);
  // quarantineGraceDays 0: the next repair run empties it.
  const config = configOf(dir);
  config.defaults.quarantineGraceDays = 0;
  writeConfig(dir, config);
  const again = await Store.open(dir);
  const next = await again.scrub({ repair: true });
  t.is(next.leaks.quarantineEmptied, 1);
  t.false(fs.existsSync(kept));
  await again.close();
});

test('a live mount (background work) empties quarantine folders past their grace period when it starts', async (t) => {
  const { store, dir } = await smallStore('replica:2', 3);
  const disk = [...store.diskPaths().values()][1];
  await store.close();
  const expired = path.join(disk, QUARANTINE_DIR, '20200101T000000Z', '.chunks', 'x');
  const fresh = path.join(disk, QUARANTINE_DIR, quarantineStamp(Date.now()), '.chunks', 'y');
  for (const f of [expired, fresh]) {
    fs.mkdirSync(path.dirname(f), { recursive: true });
    fs.writeFileSync(f, 'quarantined');
  }
  const live = await Store.open(dir, { background: true });
  await live.close(); // waits for the sweep its start began
  t.false(fs.existsSync(path.dirname(path.dirname(expired))), 'past the 7 days: deleted');
  t.true(fs.existsSync(fresh), 'within them: kept');
});

test('a share of freed shards past 5% is refused without force, naming it; nothing moves', async (t) => {
  const { store } = await smallStore('replica:2', 3);
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  await store.write(ino, 0, randomBytes(prng(10), SMALL.chunkSizeBytes));
  const gone = store.ns.create(1, 'gone', 0o644, 0, 0).ino;
  const disk = [...store.diskPaths().values()][0];
  const freed = path.join(disk, shardRelPath(BigInt(gone), 1n, 0n, 0));
  store.ns.unlink(1, 'gone');
  await store.deleteFile(gone);
  fs.mkdirSync(path.dirname(freed), { recursive: true });
  fs.writeFileSync(freed, 'a freed shard');
  const report = await store.scrub({ repair: true });
  t.regex(
    report.leaks.refused ?? '',
    /would remove 1 of 3 shard files \(33\.3%\), more than 5%: check that the metadata is this store's.*--force/,
  );
  t.is(report.leaks.removed, 0);
  t.true(fs.existsSync(freed));
  t.false(fs.existsSync(path.join(disk, QUARANTINE_DIR)));
  await store.close();
});

/** A test of PostgreSQL's connection handling: skipped on SQLite metadata. Dials tried at most (one per interval). */
const DIAL_TRIES_MAX = 10;
const pgOnlyTest = testMetaEngine() === 'postgres' ? test : test.skip;

pgOnlyTest(
  "a lost connection is dialled again only to this store's metadata: another store's id there fails each request, its own serves again",
  async (t) => {
    const { store, dir } = await smallStore('replica:2', 3);
    const url = configOf(dir).meta!.url;
    const other = connectPg(url);
    // The swap stands for another database, not a writer of this one: past the lease's fence (triggers off).
    other.exec('SET session_replication_role = replica');
    try {
      const swapId = (uuid: string): void => {
        other.prepare('UPDATE store_id SET uuid = ? WHERE k = 0').run(uuid);
      };
      const foreign = '00000000-0000-4000-8000-000000000000';
      swapId(foreign); // as if the name now led to another store's database
      other
        .prepare(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
        )
        .all();
      // A statement finds the connection lost; it is dialled again on a timer (store/meta/postgres/reconnect.ts).
      const db = (store as unknown as { db: Db }).db;
      const read = (): unknown => db.prepare('SELECT count(*) AS n FROM inodes').get();
      const failures: string[] = [];
      for (let i = 0; i < DIAL_TRIES_MAX && failures.every((m) => !/dialling again failed/.test(m)); i++) {
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_INTERVAL_MS));
        try {
          read();
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
      t.regex(
        failures.at(-1) ?? '',
        new RegExp(
          `dialling again failed: .*holds the metadata of store ${foreign}, and chunkfs.json names store ${storeUuidOf(dir)}`,
        ),
      );
      swapId(storeUuidOf(dir));
      let served = false;
      for (let i = 0; i < DIAL_TRIES_MAX && !served; i++) {
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_INTERVAL_MS));
        try {
          read();
          served = true;
        } catch {
          /* the next try of the backoff has not come yet */
        }
      }
      t.true(served, 'its own metadata: served again');
      t.notThrows(() => store.ns.create(1, 'back', 0o644, 0, 0));
    } finally {
      other.close();
      await store.close().catch(() => undefined);
    }
  },
);
