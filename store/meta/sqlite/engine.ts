// The SQLite engine of the metadata interface (store/meta/sql-engine.ts, DESIGN §9): better-sqlite3,
// the embedded default. prepare hands out better-sqlite3's own statements, so a metadata call costs
// what it did before the interface (SQLite no slower). The pragmas of DESIGN §4/§5 (WAL,
// synchronous=NORMAL, ...) are set by database.ts; `native` is the database itself for them
// and for the commit log's total_changes().
import Database from 'better-sqlite3';
import { Db, EngineCaps, SqlStatement } from '../sql-engine';
import { ChunkfsError, assert } from '../../../src/errors';
import { SQLITE_SCHEMA } from './schema';
import { TransactionRunner } from './transaction-runner';

/** An embedded file: no round trips, no cache of its own (SQLite's page cache is the cache), no lease. */
const SQLITE_CAPS: EngineCaps = {
  transactionsCostRoundTrips: false,
  cachesKeyedReads: false,
  intentLogInFile: true,
  leases: false,
  answersOnceSent: false,
};

/** The commit of a group of metadata operations failed: they are lost, and the store takes no more changes. */
export class MetaGroupError extends ChunkfsError {
  constructor(file: string, cause: Error) {
    super(
      `committing the last metadata operations failed (${cause.message}); they are lost: ` +
        'unmount and mount the store again',
      { path: file },
    );
  }
}

export class SqliteDb implements Db {
  readonly engine = 'sqlite' as const;
  readonly schema = SQLITE_SCHEMA;
  readonly caps = SQLITE_CAPS;
  private readonly runner: TransactionRunner;
  constructor(readonly native: Database.Database) {
    this.runner = new TransactionRunner(native);
  }

  prepare(sql: string): SqlStatement {
    return this.native.prepare(sql) as unknown as SqlStatement;
  }
  exec(sql: string): void {
    this.native.exec(sql);
  }
  /** Told how long each outermost transaction took, commit included (wal-warmer.ts); null: untimed. */
  commitObserver: ((elapsedNs: bigint) => void) | null = null;
  /** Group commits (DESIGN §5 "Group commit"): the open group's commit timer, 0 while each commits alone. */
  private groupMs = 0;
  private groupTimer: NodeJS.Timeout | null = null;
  /** Operations' transactions running now (savepoints inside the open group). */
  private depth = 0;
  /** A group that failed to commit: every later transaction and full commit throws it (see commitGroup). */
  private groupFailure: MetaGroupError | null = null;
  private groupsLost = 0;

  transaction<F extends (...args: any[]) => any>(fn: F): (...args: Parameters<F>) => ReturnType<F> {
    const tx = (...args: Parameters<F>): ReturnType<F> => this.runner.run(() => fn(...args) as ReturnType<F>);
    return (...args: Parameters<F>): ReturnType<F> => {
      if (this.groupMs > 0) return this.inGroup(() => tx(...args));
      const observe = this.commitObserver;
      // A nested call is a savepoint: its commit is the outer transaction's.
      if (observe === null || this.native.inTransaction) return tx(...args);
      const startNs = process.hrtime.bigint();
      const result = tx(...args);
      observe(process.hrtime.bigint() - startNs);
      return result;
    };
  }

  /**
   * From now on every transaction is a savepoint of one open transaction, the group, committed at
   * most groupMs after its first change and by commitGroup (DESIGN §5 "Group commit"). A live
   * mount's: one commit (WAL frames, each page once) for all the operations of a few milliseconds.
   */
  groupCommits(groupMs: number): void {
    assert(groupMs > 0, `a group commit delay must be positive, not ${groupMs} ms`);
    this.groupMs = groupMs;
  }

  private inGroup<T>(run: () => T): T {
    if (this.groupFailure !== null) throw this.groupFailure;
    if (!this.native.inTransaction) {
      this.native.exec('BEGIN IMMEDIATE');
      this.groupTimer = setTimeout(() => this.commitGroupOrKeepFailure(), this.groupMs);
    }
    this.depth++;
    try {
      return run();
    } finally {
      this.depth--;
      // SQLite rolls the whole transaction back on some errors (I/O, disk full): the group is lost.
      if (!this.native.inTransaction && this.groupTimer !== null) this.groupLost(new Error('rolled back by SQLite'));
    }
  }

  /**
   * Commit the open group, if any: before a full commit (store/meta/commit-point.ts) and at close.
   * A failed commit is kept: the operations of the group were answered already and the mount's
   * caches show them, so no later change may build on a database without them; every later
   * transaction and full commit fails with it (EIO) until the store is opened again.
   */
  commitGroup(): void {
    if (this.groupFailure !== null) throw this.groupFailure;
    if (this.groupTimer === null) return;
    assert(this.depth === 0, 'a group commits between operations, never inside one');
    clearTimeout(this.groupTimer);
    this.groupTimer = null;
    const startNs = process.hrtime.bigint();
    try {
      this.native.exec('COMMIT');
    } catch (err) {
      this.groupLost(err as Error);
    }
    this.commitObserver?.(process.hrtime.bigint() - startNs);
  }

  private commitGroupOrKeepFailure(): void {
    try {
      this.commitGroup();
    } catch {
      /* kept in groupFailure: the next fsync's full commit reports it */
    }
  }

  private groupLost(cause: Error): never {
    this.groupsLost++;
    if (this.groupTimer !== null) clearTimeout(this.groupTimer);
    this.groupTimer = null;
    try {
      if (this.native.inTransaction) this.native.exec('ROLLBACK');
    } catch {
      /* rolled back already */
    }
    this.groupFailure = new MetaGroupError(this.native.name, cause);
    throw this.groupFailure;
  }

  /**
   * Transactions, savepoints and groups rolled back so far: a copy of rows read inside one may hold
   * what the database no longer does (a kept copy is dropped when this moved).
   */
  get rollbacks(): number {
    return this.runner.rollbacks + this.groupsLost;
  }

  get inTransaction(): boolean {
    return this.groupMs > 0 ? this.depth > 0 : this.native.inTransaction;
  }
  /** The INSERT takes the next number itself (one process, one statement: nothing to save). */
  newIno(): number | null {
    return null;
  }
  /** Every statement runs in the process: nothing is ever sent ahead of its answer. */
  readonly repliesPending = false;
  settle(): Promise<void> {
    return Promise.resolve();
  }
  /** PRAGMA user_version holds the schema version (schema.sql, migrations.ts). */
  schemaVersion(): number {
    return Number(this.native.pragma('user_version', { simple: true }));
  }
  setSchemaVersion(version: number): void {
    this.native.pragma(`user_version = ${Math.trunc(version)}`);
  }
  close(): void {
    try {
      this.commitGroup();
    } catch {
      /* a lost group was reported to the operations and full commits after it (commitGroup) */
    }
    this.native.close();
  }
}
