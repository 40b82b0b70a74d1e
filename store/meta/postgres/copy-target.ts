// meta copy into PostgreSQL (DESIGN §9; the shared part: store/meta/copy-target.ts): the database
// must hold no store; schema, rows and comparison in one transaction, flushed by the server before
// the store's config names it.
import { ConfigError } from '../../config';
import type { MetaTarget } from '../../meta-target';
import { redactedUrl } from './target';
import { Db, createSchema } from '../meta';
import { META_TABLES, storeTablesIn } from '../meta-tables';
import { CopyResult, CopyStep, checkCounts } from '../copy-target';
import { connectPg } from './connect';

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
