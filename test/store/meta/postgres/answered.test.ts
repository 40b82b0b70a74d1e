// Operations answered once their statements are sent (DESIGN §9 "PostgreSQL round trips";
// store/meta/postgres/replies.ts): the lease holder's transaction returns before the server has run
// it (shown by a table lock another session holds), a full commit point waits for every reply, the
// replies unread are bounded, and a failure after the answer is a crash of the metadata: counted,
// the transactions answered after it never commit (the server holds a prefix), the barrier fails,
// the connection is dialled again and says so. On a real throwaway cluster.
import test from 'ava';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { connectPg } from '../../../../store/meta/postgres/connect';
import { PgDb, PgError } from '../../../../store/meta/postgres/engine';
import { COMMIT_POINT_TABLE_SQL, PgCommitPoint } from '../../../../store/meta/postgres/commit-point';
import { UNANSWERED_TRANSACTIONS_MAX } from '../../../../store/meta/postgres/replies';
import type { Reconnection } from '../../../../store/meta/postgres/reconnect';
import { PG_BIN_DIR, pgTestFile } from '../../../helpers/pg-cluster';

const { pgTest, freshDb } = pgTestFile(test, 'answered');

/** Polls for a lock or a reconnection, this far apart, at most this many times. */
const POLL_MS = 20;
const POLLS_MAX = 3000;
/** pg_terminate_backend waits this long for the session's process to end. */
const TERMINATE_WAIT_MS = 30_000;
/** How long the lock held by psql lasts (the transaction past the bound waits for it). */
const PSQL_LOCK_S = 2;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, fn: () => boolean): Promise<void> {
  for (let i = 0; i < POLLS_MAX; i++) {
    if (fn()) return;
    await sleep(POLL_MS);
  }
  throw new Error(`waited in vain for ${what}`);
}

/** A connection writing as the lease holder would (its rows trusted): its transactions are answered early. */
function holder(url: string): PgDb {
  const db = connectPg(url);
  db.exec('CREATE TABLE IF NOT EXISTS kv(k BIGINT PRIMARY KEY, v TEXT NOT NULL)');
  db.exec(COMMIT_POINT_TABLE_SQL);
  db.holdLease('SELECT 1'); // no lease table here: the session's setting is what marks the holder
  db.trustRows(Date.now() + 3_600_000);
  return db;
}

function keys(other: PgDb): number[] {
  return (other.prepare('SELECT k FROM kv ORDER BY k').all() as Array<{ k: bigint }>).map((r) => Number(r.k));
}

/** Another session holds kv's write lock: nothing of the holder's can run on the server meanwhile. */
function lockKv(url: string): PgDb {
  const blocker = connectPg(url);
  blocker.exec('BEGIN');
  blocker.exec('LOCK TABLE kv IN EXCLUSIVE MODE');
  return blocker;
}

pgTest('an operation is answered once sent, before the server ran it; the barrier waits for every reply', async (t) => {
  const url = freshDb();
  const db = holder(url);
  const other = connectPg(url);
  const point = new PgCommitPoint(db);
  try {
    const put = db.prepare('INSERT INTO kv(k, v) VALUES (?, ?)');
    db.transaction(() => put.run(0, 'prepared'))(); // statements prepared: no round trip of their own later
    await db.settle();
    const blocker = lockKv(url);
    const waited = db.roundTrips - db.answeredTrips;
    const sent = db.statementsSent;
    db.transaction(() => put.run(1, 'a'))();
    db.transaction(() => {
      put.run(2, 'b');
      put.run(3, 'c');
    })();
    t.is(db.roundTrips - db.answeredTrips - waited, 0, 'nothing waited for a reply');
    t.is(db.unanswered, 2, 'both answered, neither run yet (the table is locked)');
    t.is(db.statementsSent - sent, 2 + 3, 'each with its chain step');
    let durable = false;
    const barrier = point.makeDurable().then(() => {
      durable = true;
    });
    await sleep(200);
    t.false(durable, 'the barrier waits for the replies (the server cannot have run them)');
    blocker.exec('COMMIT');
    blocker.close();
    await barrier;
    t.is(db.unanswered, 0);
    t.deepEqual(keys(other), [0, 1, 2, 3]);
    t.is(db.metaCrashes, 0);
  } finally {
    point.close();
    db.close();
    other.close();
  }
});

pgTest(
  'a failure after the answer is a crash of the metadata: a prefix commits, counted once, the barrier fails, dialled again',
  async (t) => {
    const url = freshDb();
    const db = holder(url);
    const other = connectPg(url);
    const point = new PgCommitPoint(db);
    const heard: Reconnection[] = [];
    db.onReconnect((r) => heard.push(r));
    try {
      const put = db.prepare('INSERT INTO kv(k, v) VALUES (?, ?)');
      db.transaction(() => put.run(5, 'first'))();
      await point.makeDurable();
      const blocker = lockKv(url);
      db.transaction(() => put.run(6, 'before the failure'))();
      // Answered: nothing in this connection's state said it would fail.
      db.transaction(() => put.run(5, 'a duplicate: fails on the server'))();
      db.transaction(() => put.run(7, 'after the failure'))();
      db.transaction(() => put.run(8, 'after the failure too'))();
      t.is(db.unanswered, 4, 'all four answered before any reply');
      const barrier = point.makeDurable();
      blocker.exec('COMMIT');
      blocker.close();
      await t.throwsAsync(barrier, undefined, 'the barrier covering them fails');
      t.is(db.metaCrashes, 1, 'one crash, however many transactions it took with it');
      t.deepEqual(keys(other), [5, 6], 'the server holds a prefix: nothing after the failure committed');
      await until('the reconnection', () => heard.length > 0);
      t.is(db.reconnects, 1);
      t.regex(heard[0].mayHaveLost ?? '', /crash of the metadata .*duplicate key.* after operations were answered/);
      db.transaction(() => put.run(9, 'on the new connection'))();
      await point.makeDurable();
      t.deepEqual(keys(other), [5, 6, 9]);
      t.is(db.metaCrashes, 1);
    } finally {
      point.close();
      db.close();
      other.close();
    }
  },
);

pgTest(
  'at most UNANSWERED_TRANSACTIONS_MAX transactions are answered ahead of their replies; the next one waits',
  async (t) => {
    const url = freshDb();
    const db = holder(url);
    const other = connectPg(url);
    try {
      const put = db.prepare('INSERT INTO kv(k, v) VALUES (?, ?)');
      db.transaction(() => put.run(0, 'prepared'))();
      await db.settle();
      // A lock held by another process for PSQL_LOCK_S: this thread may block behind it.
      const psql = spawn(path.join(PG_BIN_DIR, 'psql'), [
        url,
        '-c',
        `BEGIN; LOCK TABLE kv IN EXCLUSIVE MODE; SELECT pg_sleep(${PSQL_LOCK_S}); COMMIT;`,
      ]);
      const ended = new Promise((resolve) => psql.on('exit', resolve));
      const locked = (): boolean =>
        (
          other
            .prepare(
              "SELECT count(*) AS n FROM pg_locks WHERE relation = 'kv'::regclass AND mode = 'ExclusiveLock' AND granted",
            )
            .get() as { n: bigint }
        ).n === 1n;
      await until('the lock', locked);
      let most = 0;
      for (let i = 1; i <= UNANSWERED_TRANSACTIONS_MAX + 1; i++) {
        db.transaction(() => put.run(i, 'x'))();
        most = Math.max(most, db.unanswered);
      }
      t.is(most, UNANSWERED_TRANSACTIONS_MAX, 'the bound held, and was reached');
      t.false(locked(), 'the transaction past the bound was answered once the lock was gone');
      await db.settle();
      t.is(keys(other).length, UNANSWERED_TRANSACTIONS_MAX + 2);
      await ended;
    } finally {
      db.close();
      other.close();
    }
  },
);

pgTest(
  'a terminated session is found broken by the first statement that meets it, read or answered write',
  async (t) => {
    const url = freshDb();
    const db = holder(url);
    const other = connectPg(url);
    const heard: Reconnection[] = [];
    db.onReconnect((r) => heard.push(r));
    try {
      const read = db.prepare('SELECT count(*) AS n FROM kv');
      const put = db.prepare('INSERT INTO kv(k, v) VALUES (?, ?)');
      read.get();
      db.transaction(() => put.run(1, 'x'))();
      await db.settle();
      const terminate = (): void => {
        const pid = (db.prepare('SELECT pg_backend_pid() AS pid').get() as { pid: bigint }).pid;
        // Waits for the session's process to end: its socket is closed when this returns.
        other.prepare('SELECT pg_terminate_backend(?, ?) AS ok').get(pid, TERMINATE_WAIT_MS);
      };
      terminate();
      t.throws(() => read.get(), { instanceOf: PgError });
      t.not(db.outage(), null, 'a read: the connection is known broken (and dialled again) at once');
      await until('the reconnection', () => heard.length === 1);
      terminate();
      const err = t.throws(() => db.transaction(() => put.run(2, 'y'))(), { instanceOf: PgError });
      t.regex(err!.message, /closed the connection/);
      t.not(db.outage(), null, 'a write: found broken before it was answered');
      t.is(db.metaCrashes, 0, 'nothing was answered on the broken connection: no crash');
      await until('the second reconnection', () => heard.length === 2);
      t.deepEqual(keys(other), [1]);
    } finally {
      db.close();
      other.close();
    }
  },
);
