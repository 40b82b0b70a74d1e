// PostgreSQL's spellings of the statements the SQL engines share (store/meta/sql/dialect.ts).
import type { SqlDialect } from '../sql/dialect';
import { NEXT_INO_SQL } from './schema';
import { PREALLOC_SQL } from './prealloc-sql';

export const POSTGRES_DIALECT: SqlDialect = {
  nextInoSql: NEXT_INO_SQL,
  returningSql: (column) => ` RETURNING ${column}`,
  nameStartsSql: 'strpos(d.name, ?) = 1',
  // PostgreSQL types the recursive column from its first row: the parameter needs its type named.
  walkStartSql: 'CAST(@ino AS BIGINT)',
  leastSql: (a, b) => `LEAST(${a}, ${b})`,
  greatestSql: (a, b) => `GREATEST(${a}, ${b})`,
  floatSql: (param) => `CAST(${param} AS float8)`,
  prealloc: PREALLOC_SQL,
};
