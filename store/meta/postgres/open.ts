// Opening a store's metadata on PostgreSQL (DESIGN §9): connect (connect.ts), check that the
// database holds this store's metadata (DESIGN §4 "Identity") before anything changes, then migrate
// (read-write) or check the schema (read-only). Only mkfs and meta copy make a schema
// (createPgSchema). Every failure is a ConfigError naming the connection string (password hidden)
// and what to do.
import { ConfigError } from '../../config';
import { checkStoreDb, createSchema, migrate } from '../meta';
import { MetaIdentityError } from '../store-identity';
import { PgDb } from './engine';
import { redactedUrl } from './target';
import { connectPg, pgPlace } from './connect';
import { COMMIT_POINT_TABLE_SQL } from './commit-point';
import { CHANGE_NOTIFY_SQL } from './change-notify';

/**
 * Open the store's metadata on PostgreSQL: checked to be this store's (storeUuid: the config's) before
 * anything changes, and read-only: at this build's schema. A read-only open may still take the lease
 * (meta copy's source); a follower's (DESIGN §9) refuses every write. A read-write opener then calls
 * upgradePgMeta.
 */
export function openPgMeta(url: string, readOnly: boolean, follower: boolean, storeUuid: string | undefined): PgDb {
  const db = connectPg(url, follower, storeUuid);
  try {
    checkStoreDb(db, pgPlace(url), storeUuid, readOnly);
  } catch (err) {
    db.close();
    if (err instanceof MetaIdentityError) throw err;
    throw new ConfigError(redactedUrl(url), `cannot open metadata database: ${(err as Error).message}`);
  }
  return db;
}

/** A read-write open of this store's metadata (checked by openPgMeta): migrations, and the engine's own tables. */
export function upgradePgMeta(db: PgDb, storeUuid: string): void {
  try {
    migrate(db, storeUuid);
    db.exec(COMMIT_POINT_TABLE_SQL);
    db.exec(CHANGE_NOTIFY_SQL); // the writer tells read-only followers what it changed (DESIGN §9)
  } catch (err) {
    throw new ConfigError(db.target, `cannot upgrade metadata database: ${(err as Error).message}`);
  }
}

/**
 * mkfs: this build's schema naming storeUuid on an empty database (checkNewMeta found it so), in ONE
 * transaction flushed by the server before the store's config names the database: a failure leaves
 * the database as mkfs found it, empty, for the next try (docs/design.md §4 "mkfs").
 */
export function createPgSchema(url: string, storeUuid: string): void {
  const db = connectPg(url);
  try {
    db.transaction(() => {
      db.exec('SET LOCAL synchronous_commit = on');
      createSchema(db, storeUuid);
      upgradePgMeta(db, storeUuid);
    })();
  } finally {
    db.close();
  }
}
