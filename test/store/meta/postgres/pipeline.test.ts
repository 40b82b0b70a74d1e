// Transactions of the PostgreSQL engine (store/meta/postgres/engine.ts, postgres/pipeline.ts; DESIGN §9: what the
// server does per operation): a transaction whose statements all wait for its end goes as one
// pipeline without BEGIN and COMMIT, an implicit transaction that the pipeline's sync point commits.
// On a real throwaway cluster: the statements sent are counted on the connection, the rows are
// read on a second connection, and every failure (a statement's, the commit's own) leaves none of
// the transaction's rows, surfaces as the same typed PgError, and leaves the connection usable.
import test from 'ava';
import { connectPg } from '../../../../store/meta/postgres/connect';
import { PgDb, PgError } from '../../../../store/meta/postgres/engine';
import { pgTestFile } from '../../../helpers/pg-cluster';

const { pgTest, freshDb } = pgTestFile(test, 'pipeline');

/** libpq's PQTRANS_IDLE. */
const PQTRANS_IDLE = 0;

/** A connection to a new database with table kv, and the statements it sends from now on (by server-side name). */
function open(): { db: PgDb; other: PgDb; sent: string[]; names: Map<string, string> } {
  const url = freshDb();
  const db = connectPg(url);
  db.exec('CREATE TABLE kv(k BIGINT PRIMARY KEY, v TEXT NOT NULL)');
  // Unique only at commit: a duplicate fails the commit itself, not the INSERT.
  db.exec('CREATE TABLE late(k BIGINT, CONSTRAINT late_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)');
  const pq = db.detach();
  const sent: string[] = [];
  const names = new Map<string, string>();
  const prepare = pq.prepare.bind(pq);
  pq.prepare = (name: string, text: string, n: number): void => {
    names.set(name, text);
    prepare(name, text, n);
  };
  const send = pq.sendQueryPrepared.bind(pq);
  pq.sendQueryPrepared = (name: string, values: Array<string | null>): boolean => {
    sent.push(name);
    return send(name, values);
  };
  const exec = pq.execPrepared.bind(pq);
  pq.execPrepared = (name: string, values: Array<string | null>): void => {
    sent.push(name);
    exec(name, values);
  };
  return { db, other: connectPg(url), sent, names };
}

function keys(other: PgDb, table = 'kv'): number[] {
  return (other.prepare(`SELECT k FROM ${table} ORDER BY k`).all() as Array<{ k: bigint }>).map((r) => Number(r.k));
}

pgTest(
  'a transaction of writes only: one round trip, its statements alone (no BEGIN, no COMMIT), committed at the sync point',
  (t) => {
    const { db, other, sent, names } = open();
    try {
      const put = db.prepare('INSERT INTO kv(k, v) VALUES (?, ?)');
      db.transaction(() => {
        put.run(0, 'first');
      })(); // BEGIN is prepared on first use (a round trip of its own)
      sent.length = 0;
      const trips = db.roundTrips;
      const commits = db.commits;
      db.transaction(() => {
        put.run(1, 'a');
        put.run(2, 'b');
      })();
      t.is(db.roundTrips - trips, 1);
      t.deepEqual(
        sent.map((n) => names.get(n)),
        ['INSERT INTO kv(k, v) VALUES ($1, $2)', 'INSERT INTO kv(k, v) VALUES ($1, $2)'],
      );
      t.is(db.commits - commits, 1n, "counted as a commit (the commit log's mark, DESIGN §5)");
      t.is(db.detach().transactionStatus(), PQTRANS_IDLE, 'nothing left open on the server');
      t.deepEqual(keys(other), [0, 1, 2], 'both rows committed, seen by another connection');
    } finally {
      db.close();
      other.close();
    }
  },
);

pgTest(
  'a failed statement in an implicit transaction: none of its rows, the same PgError, the connection usable',
  (t) => {
    const { db, other } = open();
    try {
      const put = db.prepare('INSERT INTO kv(k, v) VALUES (?, ?)');
      put.run(5, 'kept');
      const err = t.throws(
        () =>
          db.transaction(() => {
            put.run(6, 'x');
            put.run(5, 'duplicate');
            put.run(7, 'y');
          })(),
        { instanceOf: PgError },
      );
      t.is(err!.sqlState, '23505');
      t.regex(err!.message, /INSERT INTO kv/, 'names the statement that failed');
      t.is(db.detach().transactionStatus(), PQTRANS_IDLE);
      t.deepEqual(keys(other), [5], 'the rows before and after the failure are gone with it');
      db.transaction(() => {
        put.run(8, 'z');
      })();
      t.deepEqual(keys(other), [5, 8], 'the next transaction runs');
    } finally {
      db.close();
      other.close();
    }
  },
);

pgTest(
  'a failure of the implicit commit itself (a deferred constraint): none of its rows, the same typed PgError',
  (t) => {
    const { db, other } = open();
    try {
      const late = db.prepare('INSERT INTO late(k) VALUES (?)');
      const put = db.prepare('INSERT INTO kv(k, v) VALUES (?, ?)');
      const err = t.throws(
        () =>
          db.transaction(() => {
            put.run(1, 'a');
            late.run(3);
            late.run(3);
          })(),
        { instanceOf: PgError },
      );
      t.is(err!.sqlState, '23505');
      t.regex(err!.message, /late_k/);
      t.is(db.detach().transactionStatus(), PQTRANS_IDLE);
      t.deepEqual(keys(other), [], "the other table's row went with the failed commit");
      t.deepEqual(keys(other, 'late'), []);
      // The same with an explicit COMMIT (a read in the middle sent BEGIN): the same error.
      const read = db.prepare('SELECT count(*) AS n FROM kv');
      const err2 = t.throws(
        () =>
          db.transaction(() => {
            put.run(2, 'b');
            read.get();
            late.run(4);
            late.run(4);
          })(),
        { instanceOf: PgError },
      );
      t.is(err2!.sqlState, '23505');
      t.deepEqual(keys(other), []);
      late.run(9);
      t.deepEqual(keys(other, 'late'), [9], 'the connection is usable');
    } finally {
      db.close();
      other.close();
    }
  },
);

pgTest(
  'a read in the middle or a savepoint keeps BEGIN and COMMIT; an inner failure caught keeps the outer writes',
  (t) => {
    const { db, other, sent, names } = open();
    try {
      const put = db.prepare('INSERT INTO kv(k, v) VALUES (?, ?)');
      const read = db.prepare('SELECT count(*) AS n FROM kv');
      sent.length = 0;
      db.transaction(() => {
        put.run(1, 'a');
        t.is((read.get() as { n: bigint }).n, 1n, 'the read sees the write before it');
        put.run(2, 'b');
      })();
      const texts = sent.map((n) => names.get(n));
      t.is(texts[0], 'BEGIN');
      t.is(texts[texts.length - 1], 'COMMIT');
      sent.length = 0;
      db.transaction(() => {
        put.run(3, 'c');
        // The read sends what waits: the duplicate fails inside the inner transaction.
        t.throws(
          () =>
            db.transaction(() => {
              put.run(4, 'd');
              put.run(1, 'duplicate');
              read.get();
            })(),
          { instanceOf: PgError },
        );
        put.run(5, 'e');
      })();
      t.true(sent.map((n) => names.get(n)).includes('COMMIT'), 'a savepoint needs a transaction block');
      t.is(db.detach().transactionStatus(), PQTRANS_IDLE);
      t.deepEqual(keys(other), [1, 2, 3, 5], 'the outer writes committed, the inner ones rolled back');
    } finally {
      db.close();
      other.close();
    }
  },
);
