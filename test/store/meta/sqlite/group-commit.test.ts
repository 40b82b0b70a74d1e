// Group commit of metadata operations on SQLite (store/meta/sqlite/engine.ts, DESIGN §5 "Group
// commit"), on a database of its own: operations are savepoints of one open transaction, a failed one
// rolls back alone, the group commits on its timer and at commitGroup, and a group whose commit fails
// is lost whole and stops every later change with an error naming the database.
import { sqliteOnlyTest as test } from '../../../helpers/pg-meta';
import Database from 'better-sqlite3';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as fs from 'node:fs';
import { createDb } from '../../../../store/meta/sqlite/database';
import { MetaGroupError, SqliteDb } from '../../../../store/meta/sqlite/engine';
import { tmpDir } from '../../helpers';

/** Long enough that only commitGroup commits while a test runs; the timer test uses a short one. */
const LONG_GROUP_MS = 60_000;
const SHORT_GROUP_MS = 5;

/** A database with one table of numbers, and a second connection that sees only committed rows. */
function open(groupMs: number): { db: SqliteDb; committed: () => number[]; file: string } {
  const file = path.join(tmpDir(), 'group.db');
  const native = new Database(file);
  native.pragma('journal_mode = WAL');
  native.exec(`CREATE TABLE n(v INTEGER PRIMARY KEY);
    CREATE TABLE parent(id INTEGER PRIMARY KEY);
    CREATE TABLE child(p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)`);
  native.pragma('foreign_keys = ON');
  const db = new SqliteDb(native);
  db.groupCommits(groupMs);
  const reader = new Database(file, { readonly: true });
  const rows = reader.prepare('SELECT v FROM n ORDER BY v').pluck();
  return { db, committed: () => rows.all() as number[], file };
}

test('operations are savepoints of one group: a failed one rolls back alone; commitGroup commits the rest', (t) => {
  const { db, committed } = open(LONG_GROUP_MS);
  const insert = db.prepare('INSERT INTO n(v) VALUES (?)');
  const op = db.transaction((v: number, fail: boolean) => {
    t.true(db.inTransaction, 'inside an operation');
    insert.run(v);
    if (fail) throw new Error('ENOENT');
  });
  op(1, false);
  t.throws(() => op(2, true), { message: 'ENOENT' });
  op(3, false);
  t.false(db.inTransaction, 'between operations no operation runs (the group stays open)');
  t.deepEqual(db.native.prepare('SELECT v FROM n ORDER BY v').pluck().all(), [1, 3], 'the group sees its own changes');
  t.deepEqual(committed(), [], 'nothing committed yet');
  db.commitGroup();
  t.deepEqual(committed(), [1, 3], 'the group, without the failed operation');
  db.close();
});

test('the group commits on its own timer', async (t) => {
  const { db, committed } = open(SHORT_GROUP_MS);
  db.transaction(() => db.prepare('INSERT INTO n(v) VALUES (7)').run())();
  for (let i = 0; i < 200 && committed().length === 0; i++) await sleep(SHORT_GROUP_MS);
  t.deepEqual(committed(), [7]);
  db.close();
});

test('a group whose commit fails is lost whole; every later operation and commit fails naming the database', (t) => {
  const { db, committed, file } = open(LONG_GROUP_MS);
  db.transaction(() => db.prepare('INSERT INTO n(v) VALUES (1)').run())();
  // A deferred foreign key is checked at COMMIT only: the commit of this group fails.
  db.transaction(() => db.prepare('INSERT INTO child(p) VALUES (42)').run())();
  const err = t.throws(() => db.commitGroup(), { instanceOf: MetaGroupError });
  t.regex(err!.message, /committing the last metadata operations failed .*unmount and mount the store again/);
  t.true(err!.message.includes(file), 'names the database');
  t.deepEqual(committed(), [], 'the whole group is lost');
  t.throws(() => db.transaction(() => db.prepare('INSERT INTO n(v) VALUES (2)').run())(), {
    instanceOf: MetaGroupError,
  });
  t.throws(() => db.commitGroup(), { instanceOf: MetaGroupError });
  t.deepEqual(committed(), [], 'nothing after it either');
  db.close(); // does not throw: the failure was reported
});

/** SQLite's temporary files this process holds open (it names them etilqs_*, unlinked at once). */
function tempFilesOpen(): number {
  const fds = fs.readdirSync('/proc/self/fd');
  return fds.filter((fd) => {
    try {
      return /etilqs_/.test(fs.readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      return false; // closed meanwhile (readdir's own fd)
    }
  }).length;
}

/** Past SQLite's default spill point of a sub-journal (64 KiB): pages one savepoint changes. */
const SPILL_BYTES = 256 << 10;

test('meta.db keeps savepoint sub-journals in memory: a large operation in a group leaves no temporary file', (t) => {
  const db = createDb(path.join(tmpDir(), 'meta.db'), '00000000-0000-4000-8000-000000000000');
  db.native.exec('CREATE TABLE blobs(k INTEGER PRIMARY KEY, v BLOB)');
  const put = db.native.prepare('INSERT OR REPLACE INTO blobs(k, v) VALUES (?, ?)');
  const rows = SPILL_BYTES / 4096;
  for (let k = 0; k < rows; k++) put.run(k, Buffer.alloc(4000, 1));
  const before = tempFilesOpen();
  db.groupCommits(LONG_GROUP_MS);
  // One operation rewriting every page, then small ones: each a savepoint of the open group.
  db.transaction(() => {
    for (let k = 0; k < rows; k++) put.run(k, Buffer.alloc(4000, 2));
  })();
  for (let k = 0; k < 10; k++) db.transaction(() => put.run(k, Buffer.alloc(4000, 3)))();
  t.is(tempFilesOpen(), before, 'no sub-journal spilled to a temporary file');
  db.commitGroup();
  // With exclusive locking a spilled sub-journal would stay open past the commit, written by every later group.
  db.transaction(() => put.run(0, Buffer.alloc(4000, 3)))();
  db.commitGroup();
  t.is(tempFilesOpen(), before, 'none kept open for later groups');
  t.is(db.native.prepare('SELECT count(*) FROM blobs WHERE hex(substr(v, 1, 1)) = ?').pluck().get('03'), 10n);
  db.close();
});
