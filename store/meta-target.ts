// Where a store keeps its metadata (DESIGN §9): SQLite in meta.db in the store directory (the
// default: a config without `meta`), or the engine chunkfs.json names under `meta` with its
// connection string, recorded at mkfs. The string never holds a password: the config is a plain
// file that backups and bug reports copy. Each engine parses and checks its own strings
// (store/meta/postgres/target.ts); store/meta/engine-open.ts picks the engine.

/** What chunkfs.json records under `meta`. */
export interface MetaTarget {
  /** The engine's name, as engine-open.ts knows it. */
  engine: string;
  /** The engine's connection string (PostgreSQL: a libpq URI or keyword=value pairs), without a password. */
  url: string;
}
