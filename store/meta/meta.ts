// The metadata every engine shares (DESIGN §4, §9): the root inode, inode numbers and times, and the
// schema's version, made whole from the engine's schema.sql (createSchema) or reached by its
// migrations (migrate); the engines: store/meta/sqlite/, store/meta/postgres/ (DESIGN §9 "Engines").
import { assert } from '../../src/errors';
import { Db } from './sql-engine';
import { MetaPlace, checkStoreIdentity, recordStoreId } from './store-identity';

export type { Db } from './sql-engine';

const S_IFDIR = 0o040000;
export const ROOT_INO = 1;

/**
 * This build's schema version: the version each engine's schema.sql sets, and how many migrations
 * each engine has (store/meta/sqlite/migrations.ts, store/meta/postgres/migrations.ts; DESIGN §9 "Engines").
 */
export const SCHEMA_VERSION = 11;
/** The first schema version that names its store (table store_id, DESIGN §4 "Identity"). */
export const STORE_ID_VERSION = 9;

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
 * schema.sql, DESIGN §9 "Engines"), the root directory and the store's id, in one transaction.
 */
export function createSchema(db: Db, storeUuid: string): void {
  const version = db.schemaVersion();
  assert(version === 0, `a new store's metadata must start empty, found schema version ${version}`);
  db.transaction(() => {
    db.schema.create(db);
    const made = db.schemaVersion();
    assert(made === SCHEMA_VERSION, `${db.schema.file} sets schema version ${made}, this build's is ${SCHEMA_VERSION}`);
    createRoot(db);
    recordStoreId(db, storeUuid);
  })();
}

/**
 * The migrations a store made by an older build lacks (the engine's, DESIGN §9 "Engines"), each in
 * its own transaction with its version. storeUuid: recorded when table store_id is made (the first
 * read-write open of a store made before ids, whose metadata names none: checkStoreDb).
 */
export function migrate(db: Db, storeUuid: string): void {
  const version = db.schemaVersion();
  const steps = db.schema.migrationSteps;
  assert(steps === SCHEMA_VERSION, `${steps} migrations for schema version ${SCHEMA_VERSION}`);
  assert(version >= 1, `metadata without a schema is made by createSchema, not migrated`);
  assert(version <= SCHEMA_VERSION, `meta.db schema version ${version} is newer than this build (${SCHEMA_VERSION})`);
  for (let v = version; v < SCHEMA_VERSION; v++) {
    db.transaction(() => {
      db.schema.migrateStep(db, v);
      if (v + 1 === STORE_ID_VERSION) recordStoreId(db, storeUuid);
      db.setSchemaVersion(v + 1);
    })();
  }
}

/** The root directory of a new store (createSchema; v1 as the first builds made it: tests). */
export function createRoot(db: Db): void {
  db.schema.insertRoot(db, { ino: ROOT_INO, mode: S_IFDIR | 0o755, tNs: nowNs() });
}
