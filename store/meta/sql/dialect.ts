// What the SQL engines spell differently in the statements they otherwise share (store/meta/sql/,
// DESIGN §9 "Operations"): each engine's folder gives its own (sqlite/dialect.ts, postgres/dialect.ts).
import type { PreallocSql } from './prealloc-rows';

export interface SqlDialect {
  /** The expression of the next inode number (the engine's schema.ts). */
  readonly nextInoSql: string;
  /** What ends an INSERT that gives its generated key `column` back ('' where the driver tells it: SQLite's rowid). */
  returningSql(column: string): string;
  /**
   * "name starts with the parameter" on d.name, bytewise: instr/strpos, not LIKE (LIKE treats '_',
   * as in '.fuse_hidden', as a wildcard, and SQLite's folds ASCII case).
   */
  readonly nameStartsSql: string;
  /** The first row of the walk up to the root: PostgreSQL types the recursive column from it, so it names the type. */
  readonly walkStartSql: string;
  /** The smaller of two numbers (SQLite's two-argument min). */
  leastSql(a: string, b: string): string;
  /** The larger of two numbers (SQLite's two-argument max). */
  greatestSql(a: string, b: string): string;
  /** A parameter read as a float (PostgreSQL reads an untyped one next to a BIGINT as a BIGINT). */
  floatSql(param: string): string;
  /** Its prealloc statements that take max/min of two values. */
  readonly prealloc: PreallocSql;
}
