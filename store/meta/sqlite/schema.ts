// SQLite's schema (DESIGN §9 "Engines"): schema.sql beside this file, the whole current schema a new
// store gets, and migrations.ts, which take a store made by an older build to it.
import type { Db, EngineSchema } from '../sql-engine';
import { schemaFileOf } from '../schema-file';
import { MIGRATIONS } from './migrations';
import { insertStoreIdRow, storeIdRow } from '../sql/store-id-rows';

/** SQL for a new inode number: above every number in use or ever deleted (table ino_high, v4). */
export const NEXT_INO_SQL =
  '(SELECT max(h.ino, coalesce((SELECT max(ino) FROM inodes), 0)) + 1 FROM ino_high h WHERE h.k = 0)';

const TABLE_NAMES_SQL =
  "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name";

const INSERT_ROOT_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent,
  atime_ns, mtime_ns, ctime_ns, birth_ns) VALUES (?, 'dir', ?, 0, 0, 0, 2, ?, ?, ?, ?, ?)`;

export const SQLITE_SCHEMA: EngineSchema = {
  file: schemaFileOf(__dirname),
  migrations: MIGRATIONS,
  insertRoot(db: Db, root: { ino: number; mode: number; tNs: bigint }): void {
    const t = root.tNs;
    db.prepare(INSERT_ROOT_SQL).run(root.ino, root.mode, root.ino, t, t, t, t);
  },
  tableNames(db: Db): string[] {
    return (db.prepare(TABLE_NAMES_SQL).all() as Array<{ name: string }>).map((r) => r.name);
  },
  storeId: storeIdRow,
  recordStoreId: insertStoreIdRow,
  afterCopy(): void {
    /* intent ids are rowids: a new one follows the highest there is */
  },
};
