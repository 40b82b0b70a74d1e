// SQLite's spellings of the statements the SQL engines share (store/meta/sql/dialect.ts).
import type { SqlDialect } from '../sql/dialect';
import { NEXT_INO_SQL } from './schema';
import { SqliteFileRows } from './file-rows';
import { PREALLOC_SQL } from './prealloc-sql';

export const SQLITE_DIALECT: SqlDialect = {
  nextInoSql: NEXT_INO_SQL,
  returningSql: () => '', // better-sqlite3 gives the rowid (lastInsertRowid)
  nameStartsSql: 'instr(d.name, ?) = 1',
  walkStartSql: '@ino',
  leastSql: (a, b) => `min(${a}, ${b})`,
  floatSql: (param) => param,
  prealloc: PREALLOC_SQL,
  fileRows: (db) => new SqliteFileRows(db),
};
