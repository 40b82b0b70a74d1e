// The SQLite engine of the metadata interface (store/meta/sql-engine.ts, DESIGN §9): better-sqlite3,
// the embedded default. prepare hands out better-sqlite3's own statements, so a metadata call costs
// what it did before the interface (SQLite no slower). The pragmas of DESIGN §4/§5 (WAL,
// synchronous=NORMAL, ...) are set by store/meta/meta.ts; `native` is the database itself for them
// and for the commit log's total_changes().
import Database from 'better-sqlite3';
import { Db, EngineSql, SqlStatement, sqlFor } from './sql-engine';

export class SqliteDb implements Db {
  readonly engine = 'sqlite' as const;
  constructor(readonly native: Database.Database) {}

  prepare(sql: EngineSql): SqlStatement {
    return this.native.prepare(sqlFor(sql, 'sqlite')) as unknown as SqlStatement;
  }
  exec(sql: EngineSql): void {
    this.native.exec(sqlFor(sql, 'sqlite'));
  }
  /** Told how long each outermost transaction took, commit included (store/meta/wal-warmer.ts); null: untimed. */
  commitObserver: ((elapsedNs: bigint) => void) | null = null;

  transaction<F extends (...args: any[]) => any>(fn: F): (...args: Parameters<F>) => ReturnType<F> {
    const tx = this.native.transaction(fn) as unknown as (...args: Parameters<F>) => ReturnType<F>;
    return (...args: Parameters<F>): ReturnType<F> => {
      const observe = this.commitObserver;
      // A nested call is a savepoint: its commit is the outer transaction's.
      if (observe === null || this.native.inTransaction) return tx(...args);
      const startNs = process.hrtime.bigint();
      const result = tx(...args);
      observe(process.hrtime.bigint() - startNs);
      return result;
    };
  }
  get inTransaction(): boolean {
    return this.native.inTransaction;
  }
  /** The INSERT takes the next number itself (one process, one statement: nothing to save). */
  newIno(): number | null {
    return null;
  }
  /** Nothing is cached: reads are local. */
  prefetch(): void {}
  /** PRAGMA user_version holds the schema version (store/meta/meta.ts MIGRATIONS). */
  schemaVersion(): number {
    return Number(this.native.pragma('user_version', { simple: true }));
  }
  setSchemaVersion(version: number): void {
    this.native.pragma(`user_version = ${Math.trunc(version)}`);
  }
  close(): void {
    this.native.close();
  }
}
