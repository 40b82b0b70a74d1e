// The metadata engine's database as store/meta/ asks for it (DESIGN §9 "Engines"): transactions, the
// schema version, new inode numbers, replies not yet read, its schema's operations (EngineSchema:
// making it, migrating it, whole tables for meta copy) and what it can do (EngineCaps). Two engines
// implement it: SQLite (store/meta/sqlite/engine.ts, the embedded default) and PostgreSQL
// (store/meta/postgres/engine.ts). prepare and exec are the SQL engines' own, called only in their
// folders and sql/: the subset of better-sqlite3's synchronous API they use (the store and fs/ are
// written around synchronous metadata calls; DESIGN §9), so the SQLite engine hands out
// better-sqlite3's own statements: no cost on the hot path.
//
// Integers come out as BigInt on both engines (better-sqlite3's safe integers), NULL as null, blobs
// as Buffers. Placeholders are `?` (positional) or `@name` (bound from one object), on both engines.

import type { MetaTable } from './meta-tables';

export type SqlParam = bigint | number | string | Buffer | Uint8Array | null;

export interface RunInfo {
  changes: number;
  /** SQLite: the rowid of an INSERT; PostgreSQL: the first column of the row its RETURNING gave (0 when none). */
  lastInsertRowid: number | bigint;
}

/* Bind parameters (any): positional values, or one object of named ones. */
export interface SqlStatement {
  run(...params: any[]): RunInfo;
  /** The first row (an object, or an array in raw mode), undefined when none. */
  get(...params: any[]): unknown;
  all(...params: any[]): unknown[];
  iterate(...params: any[]): IterableIterator<unknown>;
  /** Rows as arrays of column values in select order instead of objects (the hot getattr path). */
  raw(toggle?: boolean): this;
}

/** A row as an engine hands it out: column name to value (integers BigInt, blobs Buffers, NULL null). */
export type TableRow = Record<string, unknown>;

/**
 * Whole tables by name (DESIGN §9 "Moving between engines"): what `meta copy` reads, writes and
 * compares, every table of store/meta/meta-tables.ts alike. Any engine can give it: a count, a scan
 * in key order from a key, puts, a clear.
 */
export interface WholeTables {
  /** The rows table holds. */
  count(db: Db, table: string): number;
  /**
   * At most limit rows of t in key order (t.key, text keys ordered bytewise on every engine, so two
   * engines' rows pair up): from the first, or after the row whose key values are `after`.
   */
  batch(db: Db, t: MetaTable, after: readonly unknown[] | undefined, limit: number): TableRow[];
  /** Adds rows to table, each with the same columns. */
  insert(db: Db, table: string, rows: readonly TableRow[]): void;
  /** Removes every row of table. */
  clear(db: Db, table: string): void;
}

/**
 * An engine's schema (DESIGN §9 "Engines"): the whole current one, the migrations to it, and the
 * rows every store's schema starts with. Each operation runs inside the caller's transaction.
 */
export interface EngineSchema {
  /** Where its whole current schema is written (its schema.sql, store/meta/schema-file.ts): messages name it. */
  readonly file: string;
  /** Makes this build's whole schema in an empty database, setting this build's schema version. */
  create(db: Db): void;
  /** How many migration steps it has: this build's schema version. */
  readonly migrationSteps: number;
  /** Runs the step that takes metadata of schema version `from` to from + 1 (the caller then sets it). */
  migrateStep(db: Db, from: number): void;
  /** The root directory's row: a directory that is its own parent, its four times tNs (store/meta/meta.ts). */
  insertRoot(db: Db, root: { ino: number; mode: number; tNs: bigint }): void;
  /** The store's tables the database holds, by name: its own tables (schema version, lease...) left out. */
  storeTables(db: Db): string[];
  /** Whole tables by name (`meta copy`). */
  readonly tables: WholeTables;
  /** After `meta copy` put table's rows in: its key generator continues past the copied keys (if it has one). */
  afterCopy(db: Db, table: string): void;
  /** The store id table store_id holds, undefined for none (store/meta/store-identity.ts, DESIGN §4 "Identity"). */
  storeId(db: Db): string | undefined;
  /** Records the store's id, once: mkfs, or the migration that made table store_id. */
  recordStoreId(db: Db, storeUuid: string): void;
}

/**
 * What an engine can do or what it costs, named for what callers decide by: no code outside an
 * engine's folder branches on the engine's name (DESIGN §9 "Engines").
 */
export interface EngineCaps {
  /**
   * A transaction costs a round trip to a server: callers fold work into fewer transactions (deletes
   * batched; a container's slices committed in the transaction that logs its intents).
   */
  readonly transactionsCostRoundTrips: boolean;
  /** Keyed reads of one row are answered from the engine's cache: two of them beat one join it cannot cache. */
  readonly cachesKeyedReads: boolean;
  /** The intent log is a file of its own beside the store (DESIGN §5), not rows of the engine. */
  readonly intentLogInFile: boolean;
  /** A read-write opener takes a lease in the database (DESIGN §9 "Lease and fencing"). */
  readonly leases: boolean;
  /**
   * The lease holder's operations are answered once their statements are sent, before the server ran
   * them (DESIGN §9 "Operations answered once sent"): a read may then wait for the server.
   */
  readonly answersOnceSent: boolean;
}

export interface Db {
  /** Its name, as chunkfs.json and `chunkfs status` show it (no code outside its folder compares it). */
  readonly engine: string;
  readonly schema: EngineSchema;
  readonly caps: EngineCaps;
  /**
   * sql in this engine's spelling: statements are each engine's folder's, or sql/'s where both
   * engines spell them alike (DESIGN §9 "Operations").
   */
  prepare(sql: string): SqlStatement;
  /** Run one or more statements without parameters (migrations). */
  exec(sql: string): void;
  /**
   * fn in one transaction: committed when it returns, rolled back when it throws; a call inside
   * another transaction is a savepoint (better-sqlite3's semantics, kept by both engines).
   */
  transaction<F extends (...args: any[]) => any>(fn: F): (...args: Parameters<F>) => ReturnType<F>;
  readonly inTransaction: boolean;
  /**
   * A number for a new inode chosen by this side (above every number used or deleted), or null: the
   * INSERT takes the next one itself (the engine's NEXT_INO_SQL, its schema.ts). PostgreSQL, while it holds the lease: saves the
   * round trip that reads the number back. directory: the new inode is a directory (it has no entries).
   */
  newIno(directory: boolean): number | null;
  /**
   * Statements were sent whose replies are not read yet (operations answered once sent, DESIGN §9
   * "PostgreSQL round trips"): a read now would wait for all of them, the server's lock waits
   * included. Always false on an engine that answers nothing early.
   */
  readonly repliesPending: boolean;
  /** Resolves once every reply to what was sent before the call is read (at once when none is pending). */
  settle(): Promise<void>;
  /** The schema version the database holds (0: empty), and setting it within a migration. */
  schemaVersion(): number;
  setSchemaVersion(version: number): void;
  close(): void;
}
