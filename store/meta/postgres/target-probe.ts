// What a PostgreSQL target holds where a new store's tables would go (mkfs's check that it is empty,
// store/meta/engine-open.ts checkNewMeta), read before anything is written.
import { connectPg } from './connect';

/** Where a new store's tables would go: the database and the first schema of the search path. */
const TARGET_SCHEMA_SQL = 'SELECT current_database() AS db, current_schema() AS schema';
/** Everything there whose name a table of ours could take: tables, views, sequences, foreign tables. */
const SCHEMA_RELATIONS_SQL = `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') ORDER BY c.relname`;

export interface TargetContents {
  db: string;
  /** null: no schema in the search path to create tables in. */
  schema: string | null;
  /** The relations in that schema, by name. */
  names: string[];
  /** The chunkfs schema version it holds (0: none). */
  version: number;
}

export function probeTarget(url: string): TargetContents {
  const probe = connectPg(url);
  try {
    const where = probe.prepare(TARGET_SCHEMA_SQL).get() as { db: string; schema: string | null };
    const names = (probe.prepare(SCHEMA_RELATIONS_SQL).all() as Array<{ name: string }>).map((r) => r.name);
    const version = names.includes('chunkfs_schema') ? probe.schemaVersion() : 0;
    return { ...where, names, version };
  } finally {
    probe.close();
  }
}
