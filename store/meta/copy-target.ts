// The target side of `chunkfs meta copy` (DESIGN §9; store/meta-move.ts runs the whole move): the
// copy's database gets this build's schema, every row and the row-for-row comparison in ONE
// transaction (store/meta/table-copy.ts), so that a kill or an error before its commit leaves it as
// it was: empty.
import { ChunkfsError } from '../../src/errors';
import { ConfigError } from '../config';
import { MetaTarget, redactedUrl } from '../meta-target';
import { Db, createDb, createSchema } from './meta';
import { connectPg } from './postgres/open';
import { META_TABLES, storeTablesIn } from './meta-tables';
import { MetaCopyError, TableRows } from './table-copy';

export interface CopyResult {
  tables: TableRows[];
  rows: number;
}
/** Copy and verify into target (inside the transaction this file opens). */
export type CopyStep = (target: Db) => CopyResult;

/** A PostgreSQL target must hold no store: connected, or a message naming it. */
function openPgTarget(meta: MetaTarget): Db {
  const db = connectPg(meta.url);
  const version = db.schemaVersion();
  const known = new Set(META_TABLES.map((t) => t.name));
  const present = storeTablesIn(db).filter((n) => known.has(n));
  if (version > 0 || present.length > 0) {
    db.close();
    const holds =
      version > 0
        ? `chunkfs metadata (schema version ${version}: another store's, or a copy made already)`
        : `chunkfs tables (${present.join(', ')})`;
    throw new ConfigError(
      redactedUrl(meta.url),
      `the database already holds ${holds}; meta copy needs an empty database: ` +
        'name a new one (createdb), or empty this one (DROP SCHEMA public CASCADE; CREATE SCHEMA public) if nothing needs it; nothing was changed',
    );
  }
  return db;
}

/** After the commit, seen again: the target's row counts are those copied. */
function checkCounts(db: Db, tables: TableRows[]): void {
  for (const t of tables) {
    const n = Number((db.prepare(`SELECT count(*) AS n FROM ${t.name}`).get() as { n: bigint }).n);
    if (n !== t.rows) throw new MetaCopyError(t.name, `${n} rows after the commit, ${t.rows} copied`);
  }
}

/**
 * PostgreSQL: schema (naming storeUuid, DESIGN §4), rows and comparison in one transaction, committed
 * to the server's disk.
 */
export function copyIntoPg(meta: MetaTarget, step: CopyStep, storeUuid: string): CopyResult {
  const db = openPgTarget(meta);
  try {
    const result = db.transaction(() => {
      db.exec('SET LOCAL synchronous_commit = on'); // flushed by the server before the config names it
      createSchema(db, storeUuid);
      return step(db);
    })();
    checkCounts(db, result.tables);
    return result;
  } finally {
    db.close();
  }
}

/**
 * SQLite: into file, a new empty file (the caller made it, 0600). Committed with a device flush,
 * then out of WAL mode: every page in the file itself, no -wal beside it to lose when it is linked.
 */
export function copyIntoSqlite(file: string, step: CopyStep, storeUuid: string): CopyResult {
  const db = createDb(file, storeUuid); // this build's schema
  try {
    db.native.pragma('synchronous = FULL');
    const result = db.transaction(() => step(db))();
    const mode = String(db.native.pragma('journal_mode = DELETE', { simple: true }));
    if (mode !== 'delete')
      throw new ChunkfsError(`${file}: could not leave WAL mode (journal_mode ${mode})`, { path: file });
    return result;
  } finally {
    db.close();
  }
}
