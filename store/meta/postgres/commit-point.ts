// PostgreSQL's full commit (DESIGN §5, §9; store/meta/commit-point.ts). Metadata transactions commit
// with synchronous_commit = off (connect.ts): a commit is in the server's WAL when it
// returns, so it survives a kill of the mount at once, and the server flushes it within a fraction
// of a second. A full commit point (fsync, syncfs, unmount, the 5 s timer, before shards are touched
// under an intent) is one transaction with synchronous_commit = on that writes one row: PostgreSQL
// flushes its WAL up to that commit record before answering, and every earlier commit of any
// session lies before it in the WAL. So an intent is durable before fsync returns, as on SQLite,
// with one WAL flush per group of fsyncs (commit-log.ts shares flushes between concurrent callers).
//
// Chosen over synchronous_commit = on for every transaction: that costs a WAL flush per metadata
// operation, which DESIGN §5 rules out (SQLite runs synchronous=NORMAL for the same reason).
// The commit point runs on a second connection of its own, asynchronously (libpq's send and read):
// while the server flushes, the thread serves requests, as SQLite's WAL fdatasync runs on the pool,
// and the metadata connection stays free for them (it is synchronous, DESIGN §9).
//
// Operations are answered once their statements are sent (DESIGN §9 "PostgreSQL round trips"): a
// full commit point first waits for every reply to what was sent (PgDb.settle), so the barrier is
// every reply plus one synchronous commit.
//
// It vouches only for commits made on its own server instance (instance.ts): after a
// crash or a fail-over of the server, commits made on the old one and not flushed yet may be gone,
// and the commit point says so (EIO at the fsync) instead of answering for them (DESIGN §9 "A
// broken connection"). With a synchronous standby (synchronous_standby_names), its synchronous
// commit returns once the standby has flushed it too: a promoted standby holds every fsync'd change.
import type { CommitPoint } from '../commit-point';
import type { PgDb } from './engine';
import type { LibpqConnection } from './libpq';
import { connectPg } from './connect';
import { finishLibpq } from './engine';
import { CommitsUnconfirmedError, SERVER_INSTANCE_SQL } from './instance';

/** The row a full commit writes (made by a read-write open, open.ts; no part of the shared schema). */
export const COMMIT_POINT_TABLE_SQL =
  'CREATE TABLE IF NOT EXISTS chunkfs_commit_point(k INT PRIMARY KEY CHECK (k = 0), n BIGINT NOT NULL)';
/** One autocommit statement on the commit point's connection, whose session commits synchronously; its instance. */
const BUMP_SQL =
  'INSERT INTO chunkfs_commit_point(k, n) VALUES (0, 1) ON CONFLICT (k) DO UPDATE SET n = chunkfs_commit_point.n + 1 ' +
  `RETURNING (${SERVER_INSTANCE_SQL})`;

export class PgCommitPoint implements CommitPoint {
  private flushConn: LibpqConnection | null = null;

  constructor(private readonly db: PgDb) {}

  mark(): bigint {
    return this.db.commits;
  }

  async makeDurable(): Promise<void> {
    const upTo = this.db.commits; // what the caller's mark covers: the commits made before this call
    const reconnects = this.db.reconnects;
    // Transactions answered before their replies (DESIGN §9): the server has run each one before
    // the synchronous commit below flushes the WAL; a failure among them fails this (spans.confirm).
    await this.db.settle();
    // A connection the server dropped (a restart) is found by using it: one more try on a new one.
    // Trying again is harmless: any synchronous commit that succeeds flushes everything before it.
    for (let attempt = 1; ; attempt++) {
      let instance: string | null;
      try {
        instance = await runAsync(this.connection(), BUMP_SQL);
      } catch (err) {
        this.close();
        if (attempt >= COMMIT_POINT_TRIES_MAX)
          throw new Error(`durable commit on ${this.db.target} failed: ${(err as Error).message}`);
        continue;
      }
      if (instance === null) throw new Error(`durable commit on ${this.db.target}: no server instance in its answer`);
      let lost: string | null;
      try {
        lost = this.db.spans.confirm(upTo, instance, this.db.target);
      } catch (err) {
        // The metadata connection still on another instance: it finds out at its next statement.
        if (err instanceof CommitsUnconfirmedError) this.db.probe();
        throw err;
      }
      // Commits that may be lost: told to a caller in flight across the reconnection; those that
      // came after it were not (the reconnection told every file open then: store/store.ts).
      if (lost !== null && this.db.reconnects !== reconnects)
        throw new CommitsUnconfirmedError(this.db.target, true, lost);
      return;
    }
  }

  private connection(): LibpqConnection {
    if (this.flushConn !== null) return this.flushConn;
    const second = connectPg(this.db.url);
    second.exec('SET synchronous_commit = on');
    this.flushConn = second.detach();
    return this.flushConn;
  }

  close(): void {
    const conn = this.flushConn;
    this.flushConn = null;
    if (conn !== null) finishLibpq(conn);
  }
}

/**
 * One statement sent and its results read as the socket turns readable (the first value of its
 * first row, or null); rejects with the server's
 * message, or when no answer came within COMMIT_POINT_ANSWER_MS (the caller then hangs this
 * connection up and tries a new one). Unbounded, one lost answer held every later fsync of the mount
 * behind it (commit-log.ts shares flushes): seen once in CI after a server restart, never since.
 */
function runAsync(conn: LibpqConnection, sql: string): Promise<string | null> {
  return new Promise((resolve, reject) => {
    if (!conn.sendQuery(sql)) {
      reject(new Error(conn.errorMessage()));
      return;
    }
    let failure: string | null = null;
    let results = 0;
    let value: string | null = null;
    const timer = setTimeout(() => {
      failure ??= `no answer within ${COMMIT_POINT_ANSWER_MS} ms`;
      finish();
    }, COMMIT_POINT_ANSWER_MS);
    const onReadable = (): void => {
      if (!conn.consumeInput()) failure ??= conn.errorMessage();
      // Read what has arrived; wait for the socket again while libpq would block (isBusy).
      while (failure === null && !conn.isBusy()) {
        if (!conn.getResult()) return finish();
        const status = conn.resultStatus();
        if (status !== 'PGRES_COMMAND_OK' && status !== 'PGRES_TUPLES_OK')
          failure = conn.resultErrorMessage() || status;
        else if (value === null && conn.ntuples() > 0 && conn.nfields() > 0) value = conn.getvalue(0, 0);
        if (++results > RESULTS_MAX) failure ??= `more than ${RESULTS_MAX} results`;
      }
      if (failure !== null) finish();
    };
    const finish = (): void => {
      clearTimeout(timer);
      conn.stopReader();
      conn.removeListener('readable', onReadable);
      if (failure === null) resolve(value);
      else reject(new Error(failure.trim()));
    };
    conn.on('readable', onReadable);
    conn.startReader();
  });
}

/**
 * How long a durable commit may wait for the server's answer. It is one WAL flush (milliseconds; a
 * few seconds on a device shared with heavy writers): past this, the connection is taken for dead.
 */
const COMMIT_POINT_ANSWER_MS = 20_000;
/** Connections one commit point tries (the kept one, then a new one). */
const COMMIT_POINT_TRIES_MAX = 2;
/** Results one statement may give (one, plus libpq's end marker). */
const RESULTS_MAX = 16;
