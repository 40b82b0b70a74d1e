// The store id's row (DESIGN §4 "Identity"), in the SQL both engines speak alike: read by every open
// before anything changes, written once by mkfs or by the migration that made table store_id.
// Prepared when asked (once per open). Part of each engine's schema (EngineSchema), not of its data
// operations: the check runs inside the opening and migrating code (meta.ts, store-identity.ts).
import type { Db } from '../sql-engine';

/** The store id table store_id holds, undefined for none. */
export function storeIdRow(db: Db): string | undefined {
  const r = db.prepare('SELECT uuid FROM store_id WHERE k = 0').get() as { uuid: string } | undefined;
  return r?.uuid;
}

/** Records the store's id (the one row of table store_id). */
export function insertStoreIdRow(db: Db, storeUuid: string): void {
  db.prepare('INSERT INTO store_id(k, uuid) VALUES (0, ?)').run(storeUuid);
}
