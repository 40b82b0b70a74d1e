// What the SQL engines' schemas share (DESIGN §9 "Engines"): running schema.sql and the migration
// steps (texts of the engine's folder), the root directory's row, the store id's row and whole
// tables for `meta copy`, in the SQL both speak alike. Each engine's schema.ts gives the rest: its
// schema.sql and migrations, how it lists its tables, its bytewise collation, and what follows a copy
// of a table into it.
import type { Db, EngineSchema } from '../sql-engine';
import { schemaSql } from '../schema-file';
import { insertStoreIdRow, storeIdRow } from './store-id-rows';
import { sqlWholeTables } from './whole-tables';

/** An engine's own parts of its schema. */
export interface SqlSchemaParts {
  /** Its schema.sql (store/meta/schema-file.ts schemaFileOf). */
  file: string;
  /** migrations[v] takes metadata of schema version v to v + 1. */
  migrations: readonly string[];
  /** Lists the database's base tables, one column `name`, ordered by it. */
  tableNamesSql: string;
  /** Its own tables, not the store's metadata (meta copy neither copies nor expects them). */
  ownTables: readonly string[];
  /** The collation that orders text bytewise, as COLLATE names it (row order of meta copy). */
  bytewiseCollation: string;
  afterCopy(db: Db, table: string): void;
}

const INSERT_ROOT_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent,
  atime_ns, mtime_ns, ctime_ns, birth_ns) VALUES (?, 'dir', ?, 0, 0, 0, 2, ?, ?, ?, ?, ?)`;

/** An SQL engine's schema: its parts and the shared rows. */
export function sqlSchema(parts: SqlSchemaParts): EngineSchema {
  return {
    file: parts.file,
    create(db: Db): void {
      db.exec(schemaSql(parts.file));
    },
    migrationSteps: parts.migrations.length,
    migrateStep(db: Db, from: number): void {
      db.exec(parts.migrations[from]);
    },
    insertRoot(db: Db, root: { ino: number; mode: number; tNs: bigint }): void {
      const t = root.tNs;
      db.prepare(INSERT_ROOT_SQL).run(root.ino, root.mode, root.ino, t, t, t, t);
    },
    storeTables(db: Db): string[] {
      const names = (db.prepare(parts.tableNamesSql).all() as Array<{ name: string }>).map((r) => r.name);
      return names.filter((n) => !parts.ownTables.includes(n));
    },
    tables: sqlWholeTables(parts.bytewiseCollation),
    afterCopy: parts.afterCopy,
    storeId: storeIdRow,
    recordStoreId: insertStoreIdRow,
  };
}
