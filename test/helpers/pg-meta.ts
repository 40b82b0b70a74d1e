// The store-level suites on PostgreSQL (DESIGN §9): with CHUNKFS_TEST_META=postgres, every store a
// test file makes with Store.create gets its metadata in a fresh database of the run's shared
// cluster (npm test), else of a throwaway cluster of this test process (test/helpers/pg-cluster.ts
// startPgCluster), dropped or deleted when the file ends, pass or fail. Without it (the default)
// stores use SQLite, as users' do.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Store, StoreCreateOptions } from '../../store/store';
import { STORE_ID_VERSION } from '../../store/meta/meta';
import { openDb } from '../../store/meta/sqlite/database';
import { openPgMeta } from '../../store/meta/postgres/open';
import type { Db } from '../../store/meta/sql-engine';
import type { MetaTarget } from '../../store/meta-target';
import { PgCluster, pgUnavailableReason, startPgCluster } from './pg-cluster';

export type TestMetaEngine = 'sqlite' | 'postgres';

/** The engine new test stores use (CHUNKFS_TEST_META). */
export function testMetaEngine(): TestMetaEngine {
  const v = process.env.CHUNKFS_TEST_META ?? 'sqlite';
  if (v !== 'sqlite' && v !== 'postgres') throw new Error(`CHUNKFS_TEST_META=${v}: expected sqlite or postgres`);
  return v;
}

let cluster: PgCluster | null = null;
let databases = 0;

/** A new empty database on this process's test cluster (taken on first use); its URI. */
export function testDatabase(): string {
  cluster ??= startPgCluster(); // stopped by the hook below, or at process exit (pg-cluster.ts)
  return cluster.createDatabase(`store${++databases}`);
}

/**
 * A store directory copied as a crash test copies it (the disks, and meta.db on SQLite): on
 * PostgreSQL the copy gets its own copy of the database too, named in its chunkfs.json, so the copy
 * and the original never share metadata. The original must be closed (no connection to its database).
 */
export function copyStoreDir(from: string, to: string, filter?: (p: string) => boolean): void {
  fs.cpSync(from, to, { recursive: true, ...(filter === undefined ? {} : { filter }) });
  const configFile = path.join(to, 'chunkfs.json');
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as { meta?: { engine: string; url: string } };
  if (config.meta === undefined) return;
  if (cluster === null) throw new Error(`${from}: its metadata is on a PostgreSQL cluster this process did not start`);
  const source = new URL(config.meta.url).pathname.replace(/^\//, '');
  config.meta.url = cluster.copyDatabase(source, `store${++databases}`);
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
}

/**
 * A test of SQLite itself (meta.db and its WAL file, its device flushes, a power loss that takes the
 * WAL back to its last fdatasync): skipped when CHUNKFS_TEST_META=postgres, where the metadata is
 * the server's and no file of the store holds it. test/store/meta/postgres/meta.test.ts tests PostgreSQL's
 * commit point instead.
 */
export const sqliteOnlyTest = testMetaEngine() === 'postgres' ? test.skip : test;

/**
 * The metadata of a closed store, opened as its config says (meta.db, or its PostgreSQL database),
 * for tests that read or plant rows directly.
 */
export function openStoreMetaOf(dir: string, readOnly = false): Db {
  const config = JSON.parse(fs.readFileSync(path.join(dir, 'chunkfs.json'), 'utf8')) as { meta?: MetaTarget };
  return config.meta === undefined
    ? openDb(path.join(dir, 'meta.db'), readOnly)
    : openPgMeta(config.meta.url, readOnly, false, storeUuidOf(dir));
}

/** The store id chunkfs.json of the store in dir names (DESIGN §4 "Identity"). */
export function storeUuidOf(dir: string): string {
  return (JSON.parse(fs.readFileSync(path.join(dir, 'chunkfs.json'), 'utf8')) as { storeUuid: string }).storeUuid;
}

/**
 * Make the metadata of the closed store in dir as a build before store ids left it (DESIGN §4
 * "Identity"): no table store_id, nor what later migrations added (the sealed-spans flag of
 * intents, DESIGN §10), schema version one below the one that made it.
 */
export function forgetStoreId(dir: string): void {
  const db = openStoreMetaOf(dir);
  try {
    db.transaction(() => {
      db.exec('ALTER TABLE intents DROP COLUMN span_sealed');
      db.exec('DROP TABLE store_id');
      db.setSchemaVersion(STORE_ID_VERSION - 1);
    })();
  } finally {
    db.close();
  }
}

let patched = false;

/** With CHUNKFS_TEST_META=postgres: Store.create without `meta` puts the metadata on the test cluster. */
export function routeNewStoresToTestEngine(): void {
  if (patched || testMetaEngine() !== 'postgres') return;
  const reason = pgUnavailableReason();
  if (reason !== null) throw new Error(`CHUNKFS_TEST_META=postgres, but ${reason}`);
  patched = true;
  // Registered now (at load): ava takes hooks only before the tests start.
  test.after.always(() => {
    cluster?.stop();
    cluster = null;
  });
  const create = Store.create.bind(Store);
  Store.create = (dir: string, opts: StoreCreateOptions = {}) =>
    create(dir, { ...opts, meta: opts.meta ?? testDatabase() });
}
