// SQLite's schema (DESIGN §9 "Engines"): schema.sql beside this file, the whole current schema a new
// store gets, and migrations.ts, which take a store made by an older build to it.
import type { EngineSchema } from '../sql-engine';
import { schemaFileOf } from '../schema-file';
import { MIGRATIONS } from './migrations';
import { sqlSchema } from '../sql/schema';

/** SQL for a new inode number: above every number in use or ever deleted (table ino_high, v4). */
export const NEXT_INO_SQL =
  '(SELECT max(h.ino, coalesce((SELECT max(ino) FROM inodes), 0)) + 1 FROM ino_high h WHERE h.k = 0)';

const TABLE_NAMES_SQL =
  "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name";

export const SQLITE_SCHEMA: EngineSchema = sqlSchema({
  file: schemaFileOf(__dirname),
  migrations: MIGRATIONS,
  tableNamesSql: TABLE_NAMES_SQL,
  ownTables: [], // the schema version is user_version
  bytewiseCollation: 'BINARY',
  afterCopy(): void {
    /* intent ids are rowids: a new one follows the highest there is */
  },
});
