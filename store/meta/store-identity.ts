// The store's identity in its metadata (DESIGN §4 "Identity"): mkfs makes a random store id and records
// it in chunkfs.json, in every disk's marker (store/disk-identity.ts) and here, in table store_id. Every
// opener compares the config's id with this one before it changes anything (no migration, recovery or
// lease first), and refuses metadata that is empty (no schema: a mistyped database name, a database
// dropped and made again, an empty meta.db) or another store's: opened as if it were this store's, it
// would show an empty or foreign tree over this store's shards, and scrub would call them leaked.
// Only mkfs and `chunkfs meta copy` make a schema (createSchema); an open never does.
import { ConfigError } from '../config';
import { Db } from './sql-engine';

/** Metadata that does not belong to the store opening it, or holds none: names both and what to check. */
export class MetaIdentityError extends ConfigError {
  constructor(
    readonly where: string,
    problem: string,
  ) {
    super(where, problem);
  }
}

/** Where the metadata is, for messages, and what an operator checks when it is not this store's. */
export interface MetaPlace {
  /** meta.db's path, or the connection string with its password hidden. */
  where: string;
  /** The thing to check: the URL and database (PostgreSQL) or meta.db (SQLite). */
  check: string;
}

/** The store id recorded in db, or null when its schema predates store ids (storeIdVersion). */
export function metaStoreId(db: Db, storeIdVersion: number): string | null {
  if (db.schemaVersion() < storeIdVersion) return null;
  return db.schema.storeId(db) ?? '';
}

/** Within the migration that made table store_id (or mkfs): record the store's id, once. */
export function recordStoreId(db: Db, storeUuid: string): void {
  db.schema.recordStoreId(db, storeUuid);
}

/**
 * Is db this store's metadata? Throws MetaIdentityError unless it holds a schema and names configUuid
 * (the config's storeUuid; undefined in a store made before ids, whose metadata must name none either).
 * Returns true when the metadata predates store ids (schema below storeIdVersion): a read-write open
 * records the config's id in its upgrade (DESIGN §4), the only time an id is written into existing metadata.
 */
export function checkStoreIdentity(
  db: Db,
  place: MetaPlace,
  configUuid: string | undefined,
  storeIdVersion: number,
): boolean {
  const version = db.schemaVersion();
  const own = configUuid ?? 'without an id';
  if (version === 0) {
    throw new MetaIdentityError(
      place.where,
      `holds no chunkfs metadata (no schema), so it is not this store's (store ${own}); ` +
        `refusing to open it: ${place.check}. Only chunkfs mkfs and chunkfs meta copy make metadata; nothing was changed`,
    );
  }
  const recorded = metaStoreId(db, storeIdVersion);
  if (recorded === null) return true;
  if (recorded === '') {
    throw new MetaIdentityError(
      place.where,
      `its table store_id names no store (damaged metadata?), so it cannot be shown ` +
        `to be store ${own}'s; refusing to open it: ${place.check}; nothing was changed`,
    );
  }
  if (recorded !== configUuid) {
    throw new MetaIdentityError(
      place.where,
      `holds the metadata of store ${recorded}, and chunkfs.json names store ` +
        `${configUuid ?? '(none)'}; refusing to open another store's metadata: ${place.check}; nothing was changed`,
    );
  }
  return false;
}
