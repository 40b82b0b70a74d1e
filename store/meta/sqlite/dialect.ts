// SQLite's spellings of the statements the SQL engines share (store/meta/sql/dialect.ts).
import type { SqlDialect } from '../sql/dialect';
import { NEXT_INO_SQL } from './schema';
import { PREALLOC_SQL } from './prealloc-sql';

export const SQLITE_DIALECT: SqlDialect = {
  nextInoSql: NEXT_INO_SQL,
  returningSql: () => '', // better-sqlite3 gives the rowid (lastInsertRowid)
  nameStartsSql: 'instr(d.name, ?) = 1',
  walkStartSql: '@ino',
  leastSql: (a, b) => `min(${a}, ${b})`,
  greatestSql: (a, b) => `max(${a}, ${b})`,
  floatSql: (param) => param,
  prealloc: PREALLOC_SQL,
};
