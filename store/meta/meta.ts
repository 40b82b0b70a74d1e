// Metadata database (DESIGN §4): better-sqlite3 in WAL mode with synchronous=NORMAL (DESIGN §5):
// a commit is atomic and survives a process kill at once (it is in the WAL file; a live mount's
// operations commit in groups, store/meta/sqlite/engine.ts, DESIGN §5 "Group commit"), but is not
// flushed to the device; store/meta/commit-log.ts makes every commit so far durable at fsync, syncfs,
// unmount and from a timer. The schema: each engine's schema.sql and migrations (DESIGN §9 "Schema").
import Database from 'better-sqlite3';
import { assert } from '../../src/errors';
import { Db } from './sql-engine';
import { SqliteDb } from './sqlite/engine';
import { MetaPlace, checkStoreIdentity, recordStoreId } from './store-identity';
import { schemaSql } from './schema-file';

export type { Db } from './sql-engine';

const S_IFDIR = 0o040000;
export const ROOT_INO = 1;

/**
 * This build's schema version: the version each engine's schema.sql sets, and how many migrations
 * each engine has (store/meta/sqlite/migrations.ts, store/meta/postgres/migrations.ts; DESIGN §9 "Schema").
 */
export const SCHEMA_VERSION = 10;
/** The first schema version that names its store (table store_id, DESIGN §4 "Identity"). */
export const STORE_ID_VERSION = 9;

/** SQL for a new inode number: above every number in use or ever deleted (see ino_high, v4). */
export const NEXT_INO_SQL = {
  sqlite: '(SELECT max(h.ino, coalesce((SELECT max(ino) FROM inodes), 0)) + 1 FROM ino_high h WHERE h.k = 0)',
  postgres: '(SELECT GREATEST(h.ino, coalesce((SELECT max(ino) FROM inodes), 0)) + 1 FROM ino_high h WHERE h.k = 0)',
} as const;

const NS_PER_MS = 1_000_000n;
const epochNs = BigInt(Date.now()) * NS_PER_MS;
const hrStart = process.hrtime.bigint();

/** Wall-clock nanoseconds since the epoch, monotonic within the process. */
export function nowNs(): bigint {
  return epochNs + (process.hrtime.bigint() - hrStart);
}

/** u64 <-> SQLite's signed i64 (placement_seed may use all 64 bits). */
export function u64ToDb(v: bigint): bigint {
  return BigInt.asIntN(64, v);
}
export function dbToU64(v: bigint | number): bigint {
  return BigInt.asUintN(64, BigInt(v));
}

/**
 * How long an open waits for meta.db held by another connection: a writer holds it until it closes
 * (locking_mode EXCLUSIVE), so a reader does not wait long; a writer waits out a reader's short look.
 */
const READER_BUSY_WAIT_MS = 500;
const WRITER_BUSY_WAIT_MS = 5000;

/**
 * Open meta.db as it is: no schema is made or changed here (DESIGN §4 "Identity"). check: run on the
 * first access, before the open sets WAL mode (which writes meta.db's header when it is not a WAL
 * database, e.g. an empty file): store/meta/sqlite/open.ts checks that it is this store's metadata.
 */
export function openDb(file: string, readOnly = false, check?: (db: SqliteDb) => void): SqliteDb {
  return openSqlite(file, readOnly, true, check);
}

function openSqlite(file: string, readOnly: boolean, mustExist: boolean, check?: (db: SqliteDb) => void): SqliteDb {
  const timeout = readOnly ? READER_BUSY_WAIT_MS : WRITER_BUSY_WAIT_MS;
  const native = new Database(file, { readonly: readOnly, fileMustExist: mustExist, timeout });
  const db = new SqliteDb(native);
  try {
    setUp(native, readOnly, () => check?.(db));
  } catch (err) {
    db.close(); // a failed open leaves nothing open (store/meta/sqlite/open.ts may retry)
    throw err;
  }
  return db;
}

/** mkfs and meta copy: a new SQLite database at file (empty or missing) with this build's schema naming storeUuid. */
export function createDb(file: string, storeUuid: string): SqliteDb {
  const db = openSqlite(file, false, false);
  try {
    createSchema(db, storeUuid);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** WAL pages past which a commit checkpoints (see setUp). */
const WAL_CHECKPOINT_PAGES = 4096;

function setUp(db: Database.Database, readOnly: boolean, firstAccess: () => void): void {
  db.defaultSafeIntegers(true);
  if (readOnly) firstAccess();
  else {
    // Before the first access: the writer holds meta.db's lock for as long as it has it
    // open, so a transaction takes no file locks (SQLite took and released ~20 fcntl locks each), and
    // WAL mode keeps its index in this process's memory, never in meta.db-shm. A read-write open holds
    // the store lock, so nothing else writes; readers (chunkfs inspect, status) of a mounted store go
    // through the mount's control socket (cli/control), and an offline reader makes this open wait.
    db.pragma('locking_mode = EXCLUSIVE');
    firstAccess();
    db.pragma('journal_mode = WAL');
    // DESIGN §5: no device flush per metadata operation; store/meta/commit-log.ts flushes the WAL.
    db.pragma('synchronous = NORMAL');
    // A checkpoint costs two device flushes (the WAL before, meta.db after). At SQLite's default of
    // 1,000 pages (4 MiB) a small-file workload without any fsync checkpointed every ~250 namespace
    // operations: 300 files created, written, renamed and unlinked cost 13 of the mount's 35 flushes
    // (scripts/bench/bench-small-flushes.sh). 4,096 pages (16 MiB of WAL) checkpoint four times less often.
    db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    db.pragma('foreign_keys = OFF');
    // SQLite's page cache stays better-sqlite3's 16 MiB: at 4 MiB (less RSS after fsync'd writes,
    // whose intent pages filled it) small-file extract ran 0.91x and cold reads 0.92x (5 Dec, 3 rounds).
  }
}

/** A read-only open cannot migrate: the schema must be this build's already. */
export function checkReadable(db: Db): void {
  const version = db.schemaVersion();
  if (version < SCHEMA_VERSION) {
    throw new Error(
      `schema version ${version} is older than this build's (${SCHEMA_VERSION}); ` +
        'open the store read-write once (chunkfs mount or chunkfs scrub) to upgrade it',
    );
  }
}

/**
 * An opener's check before anything changes (DESIGN §4 "Identity"): db holds this store's metadata
 * (store/meta/store-identity.ts), and a read-only open finds this build's schema. True: it predates
 * store ids, and a read-write open's migrate records configUuid.
 */
export function checkStoreDb(db: Db, place: MetaPlace, configUuid: string | undefined, readOnly: boolean): boolean {
  const legacy = checkStoreIdentity(db, place, configUuid, STORE_ID_VERSION);
  const version = db.schemaVersion();
  if (version > SCHEMA_VERSION) {
    throw new Error(
      `schema version ${version} is newer than this build's (${SCHEMA_VERSION}): open it with the newer build`,
    );
  }
  if (readOnly) checkReadable(db);
  return legacy;
}

/**
 * mkfs and meta copy, on an empty database: this build's whole schema at once (the engine's
 * schema.sql, DESIGN §9 "Schema"), the root directory and the store's id, in one transaction.
 */
export function createSchema(db: Db, storeUuid: string): void {
  const version = db.schemaVersion();
  assert(version === 0, `a new store's metadata must start empty, found schema version ${version}`);
  db.transaction(() => {
    db.exec(schemaSql(db.schema.file));
    const made = db.schemaVersion();
    assert(made === SCHEMA_VERSION, `${db.schema.file} sets schema version ${made}, this build's is ${SCHEMA_VERSION}`);
    createRoot(db);
    recordStoreId(db, storeUuid);
  })();
}

/**
 * The migrations a store made by an older build lacks (the engine's, DESIGN §9 "Schema"), each in
 * its own transaction with its version. storeUuid: recorded when table store_id is made (the first
 * read-write open of a store made before ids, whose metadata names none: checkStoreDb).
 */
export function migrate(db: Db, storeUuid: string): void {
  const version = db.schemaVersion();
  const steps = db.schema.migrations;
  assert(steps.length === SCHEMA_VERSION, `${steps.length} migrations for schema version ${SCHEMA_VERSION}`);
  assert(version >= 1, `metadata without a schema is made by createSchema, not migrated`);
  assert(version <= SCHEMA_VERSION, `meta.db schema version ${version} is newer than this build (${SCHEMA_VERSION})`);
  for (let v = version; v < SCHEMA_VERSION; v++) {
    db.transaction(() => {
      db.exec(steps[v]);
      if (v + 1 === STORE_ID_VERSION) recordStoreId(db, storeUuid);
      db.setSchemaVersion(v + 1);
    })();
  }
}

/** The root directory of a new store (createSchema; v1 as the first builds made it: tests). */
export function createRoot(db: Db): void {
  const t = nowNs();
  db.prepare(
    `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns)
              VALUES (?, 'dir', ?, 0, 0, 0, 2, ?, ?, ?, ?, ?)`,
  ).run(ROOT_INO, S_IFDIR | 0o755, ROOT_INO, t, t, t, t);
}
