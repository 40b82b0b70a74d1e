// What the SQL engines' schemas share (DESIGN §9 "Engines"): the root directory's row and the store
// id's row, in the SQL both speak alike. Each engine's schema.ts gives the rest: its schema.sql and
// migrations, how it lists its tables, and what follows a copy of a table into it.
import type { Db, EngineSchema } from '../sql-engine';
import { insertStoreIdRow, storeIdRow } from './store-id-rows';

/** An engine's own parts of its schema. */
export interface SqlSchemaParts {
  /** Its schema.sql (store/meta/schema-file.ts schemaFileOf). */
  file: string;
  migrations: readonly string[];
  /** Lists the database's base tables, one column `name`, ordered by it. */
  tableNamesSql: string;
  afterCopy(db: Db, table: string): void;
}

const INSERT_ROOT_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent,
  atime_ns, mtime_ns, ctime_ns, birth_ns) VALUES (?, 'dir', ?, 0, 0, 0, 2, ?, ?, ?, ?, ?)`;

/** An SQL engine's schema: its parts and the shared rows. */
export function sqlSchema(parts: SqlSchemaParts): EngineSchema {
  return {
    file: parts.file,
    migrations: parts.migrations,
    insertRoot(db: Db, root: { ino: number; mode: number; tNs: bigint }): void {
      const t = root.tNs;
      db.prepare(INSERT_ROOT_SQL).run(root.ino, root.mode, root.ino, t, t, t, t);
    },
    tableNames(db: Db): string[] {
      return (db.prepare(parts.tableNamesSql).all() as Array<{ name: string }>).map((r) => r.name);
    },
    afterCopy: parts.afterCopy,
    storeId: storeIdRow,
    recordStoreId: insertStoreIdRow,
  };
}
