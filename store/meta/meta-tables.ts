// Every table of the store's metadata schema (each engine's schema.sql) with its primary key: what
// `chunkfs meta copy` copies and verifies (DESIGN §9). Not store metadata, never copied: an engine's
// own tables (its schema version, a lease, a commit point row; EngineSchema.storeTables leaves them out).
import { Db } from './sql-engine';

export interface MetaTable {
  name: string;
  /** Primary key columns, in order: rows are copied and compared in this order. */
  key: readonly string[];
  /** Text key columns: ordered bytewise on both engines (SQLite BINARY, PostgreSQL "C"). */
  textKey?: string;
}

export const META_TABLES: readonly MetaTable[] = [
  { name: 'inodes', key: ['ino'] },
  { name: 'dirents', key: ['parent', 'name'], textKey: 'name' },
  { name: 'xattrs', key: ['ino', 'name'], textKey: 'name' },
  { name: 'chunks', key: ['ino', 'chunk_index'] },
  // An engine that generates intent ids moves its generator past the copied ones (EngineSchema.afterCopy).
  { name: 'intents', key: ['id'] },
  { name: 'heal_queue', key: ['ino', 'chunk_index', 'version', 'shard_index'] },
  { name: 'counters', key: ['name'], textKey: 'name' },
  { name: 'orphans', key: ['ino'] },
  { name: 'reclaim', key: ['ino', 'chunk_index', 'version'] },
  { name: 'past_size', key: ['ino'] },
  { name: 'containers', key: ['id'] },
  { name: 'ino_high', key: ['k'] },
  { name: 'prealloc', key: ['ino', 'chunk_index'] },
  // The store's id (DESIGN §4 "Identity"): the copy names the same store.
  { name: 'store_id', key: ['k'] },
];

/** The store tables the database holds (the engine's own left out: EngineSchema.storeTables). */
export function storeTablesIn(db: Db): string[] {
  return db.schema.storeTables(db);
}

/** Tables of db that META_TABLES does not name: a copy would leave them behind. */
export function unknownTables(db: Db): string[] {
  const known = new Set(META_TABLES.map((t) => t.name));
  return storeTablesIn(db).filter((n) => !known.has(n));
}
