// The transaction runner of the SQLite engine (store/meta/sqlite/transaction-runner.ts): a
// transaction, or a savepoint inside the open one, with statements prepared once, as
// better-sqlite3's db.transaction(fn)() behaves: commits, rolls back to the savepoint alone, refuses
// a promise, and prepares nothing per call.
import { sqliteOnlyTest as test } from '../../../helpers/pg-meta';
import Database from 'better-sqlite3';
import { TransactionRunner } from '../../../../store/meta/sqlite/transaction-runner';
import { SqliteDb } from '../../../../store/meta/sqlite/engine';

function open(): { native: Database.Database; rows: () => number[] } {
  const native = new Database(':memory:');
  native.exec('CREATE TABLE n(v INTEGER PRIMARY KEY)');
  const all = native.prepare('SELECT v FROM n ORDER BY v').pluck();
  return { native, rows: () => all.all() as number[] };
}

test('a transaction commits; one that throws rolls back and rethrows', (t) => {
  const { native, rows } = open();
  const runner = new TransactionRunner(native);
  const insert = native.prepare('INSERT INTO n(v) VALUES (?)');
  t.is(
    runner.run(() => insert.run(1).changes),
    1,
  );
  t.false(native.inTransaction);
  const err = t.throws(() =>
    runner.run(() => {
      insert.run(2);
      throw new Error('EIO');
    }),
  );
  t.is(err?.message, 'EIO');
  t.false(native.inTransaction, 'rolled back, not left open');
  t.deepEqual(rows(), [1]);
});

test('nested: a savepoint that throws rolls back alone; the outer transaction commits the rest', (t) => {
  const { native, rows } = open();
  const runner = new TransactionRunner(native);
  const insert = native.prepare('INSERT INTO n(v) VALUES (?)');
  runner.run(() => {
    insert.run(1);
    t.throws(() =>
      runner.run(() => {
        insert.run(2);
        runner.run(() => insert.run(3));
        throw new Error('ENOENT');
      }),
    );
    t.true(native.inTransaction, 'the outer transaction is still open');
    runner.run(() => insert.run(4));
  });
  t.deepEqual(rows(), [1, 4]);
});

test('a function that returns a promise is refused and rolled back', (t) => {
  const { native, rows } = open();
  const runner = new TransactionRunner(native);
  const insert = native.prepare('INSERT INTO n(v) VALUES (?)');
  t.throws(
    () =>
      runner.run(() => {
        insert.run(1);
        return Promise.resolve();
      }),
    { instanceOf: TypeError },
  );
  t.false(native.inTransaction);
  t.deepEqual(rows(), []);
});

test('the engine prepares no statement per transaction (better-sqlite3 transaction() is not called)', (t) => {
  const { native, rows } = open();
  const db = new SqliteDb(native);
  const insert = db.prepare('INSERT INTO n(v) VALUES (?)');
  const prepare = native.prepare.bind(native);
  let prepared = 0;
  native.prepare = ((sql: string) => {
    prepared++;
    return prepare(sql);
  }) as typeof native.prepare;
  let built = 0;
  const transaction = native.transaction.bind(native);
  native.transaction = ((fn: (...a: unknown[]) => unknown) => {
    built++;
    return transaction(fn);
  }) as typeof native.transaction;
  const op = db.transaction((v: number) => insert.run(v));
  op(1);
  const afterFirst = prepared;
  for (let v = 2; v <= 50; v++) db.transaction(() => op(v))();
  t.is(prepared, afterFirst, 'statements prepared once, at the first transaction');
  t.is(built, 0);
  t.is(rows().length, 50);
});
