// The store-level suites on PostgreSQL (issue 22): with CHUNKFS_TEST_META=postgres, every store a
// test file makes with Store.create gets its metadata in a fresh database of one throwaway cluster
// per test process (test/helpers/pg-cluster.ts), stopped and deleted when the file ends, pass or
// fail. Without it (the default) stores use SQLite, as users' do.
import test from 'ava';
import { Store, StoreCreateOptions } from '../../store/store';
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

/** A new empty database on this process's test cluster (started on first use); its URI. */
export function testDatabase(): string {
  cluster ??= startPgCluster(); // stopped by the hook below, or at process exit (pg-cluster.ts)
  return cluster.createDatabase(`store${++databases}`);
}

let patched = false;

/** With CHUNKFS_TEST_META=postgres: Store.create without `meta` puts the metadata on the test cluster. */
export function routeNewStoresToTestEngine(): void {
  if (patched || testMetaEngine() !== 'postgres') return;
  const reason = pgUnavailableReason();
  if (reason !== null) throw new Error(`CHUNKFS_TEST_META=postgres, but ${reason}`);
  patched = true;
  // Registered now (at load): ava takes hooks only before the tests start.
  test.after.always(() => { cluster?.stop(); cluster = null; });
  const create = Store.create.bind(Store);
  Store.create = (dir: string, opts: StoreCreateOptions = {}) => create(dir, { ...opts, meta: opts.meta ?? testDatabase() });
}
