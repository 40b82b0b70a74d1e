// PostgreSQL's schema (DESIGN §9 "Engines"): schema.sql beside this file, the whole current schema a new
// store gets, and migrations.ts, which take a store made by an older build to it.
import type { Db, EngineSchema } from '../sql-engine';
import { schemaFileOf } from '../schema-file';
import { MIGRATIONS } from './migrations';
import { sqlSchema } from '../sql/schema';

/** SQL for a new inode number: above every number in use or ever deleted (table ino_high, v4). */
export const NEXT_INO_SQL =
  '(SELECT GREATEST(h.ino, coalesce((SELECT max(ino) FROM inodes), 0)) + 1 FROM ino_high h WHERE h.k = 0)';

const TABLE_NAMES_SQL =
  'SELECT table_name AS name FROM information_schema.tables ' +
  "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name";
/** Intent ids are generated (v1): the generator continues after the highest copied id. */
const INTENT_IDS_AFTER_COPY_SQL =
  "SELECT setval(pg_get_serial_sequence('intents', 'id'), coalesce(max(id), 0) + 1, false) FROM intents";

export const POSTGRES_SCHEMA: EngineSchema = sqlSchema({
  file: schemaFileOf(__dirname),
  migrations: MIGRATIONS,
  tableNamesSql: TABLE_NAMES_SQL,
  ownTables: ['chunkfs_schema', 'chunkfs_lease', 'chunkfs_commit_point'], // the version; lease.ts, commit-point.ts
  bytewiseCollation: '"C"',
  afterCopy(db: Db, table: string): void {
    if (table === 'intents') db.prepare(INTENT_IDS_AFTER_COPY_SQL).get();
  },
});
