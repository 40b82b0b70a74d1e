// The inode triggers of PostgreSQL's schema v11 (store/meta/postgres/migrations.ts, schema.sql; DESIGN
// §9 "Engines"), on a store made from schema.sql and on one made at v1 and upgraded: a far time's
// column is cleared by an UPDATE that gives its own *_ns column a value that is not a clamp, and by
// nothing else; an inode's delete takes its fallocate rows and no number deleted comes back (ino_high
// written only for a number above every inode left, never lowered); a
// file's intents are found by its inode through the index, not by a scan of the table.
import test, { ExecutionContext } from 'ava';
import * as crypto from 'node:crypto';
import { createRoot } from '../../../../store/meta/meta';
import { createMeta, upgradeStoreMeta } from '../../../../store/meta/engine-open';
import { connectPg } from '../../../../store/meta/postgres/connect';
import { NEAR_NS_MAX } from '../../../../store/meta/far-times';
import { NEXT_INO_SQL } from '../../../../store/meta/postgres/schema';
import type { Db } from '../../../../store/meta/sql-engine';
import { pgTestFile } from '../../../helpers/pg-cluster';

const { pgTest, freshDb } = pgTestFile(test, 'inotrig');

/** Far times as far-times.ts writes them: the clamp in *_ns, the exact value in *_far. */
const FAR = '-1000000000000000000000';

function newDb(): Db {
  const url = freshDb();
  createMeta('', { engine: 'postgres', url }, crypto.randomUUID());
  return connectPg(url);
}

function upgradedDb(): Db {
  const db = connectPg(freshDb());
  db.transaction(() => {
    db.schema.migrateStep(db, 0);
    createRoot(db);
    db.setSchemaVersion(1);
  })();
  upgradeStoreMeta(db, crypto.randomUUID());
  return db;
}

function addFile(db: Db, ino: number, far: boolean): void {
  const clamp = far ? NEAR_NS_MAX : 7n;
  db.prepare(
    `INSERT INTO inodes(ino, type, mode, uid, gid, nlink, atime_ns, mtime_ns, ctime_ns, birth_ns,
      atime_far, mtime_far, ctime_far) VALUES (?, 'file', 420, 0, 0, 1, ?, ?, ?, 0, ?, ?, ?)`,
  ).run(ino, clamp, clamp, clamp, far ? FAR : null, far ? FAR : null, far ? FAR : null);
}

function farColumns(db: Db, ino: number): Array<string | null> {
  const r = db.prepare('SELECT atime_far, mtime_far, ctime_far FROM inodes WHERE ino = ?').get(ino) as Record<
    string,
    string | null
  >;
  return [r.atime_far, r.mtime_far, r.ctime_far];
}

function checkFarTimes(t: ExecutionContext, db: Db): void {
  addFile(db, 10, true);
  db.prepare('UPDATE inodes SET nlink = 2 WHERE ino = 10').run();
  t.deepEqual(farColumns(db, 10), [FAR, FAR, FAR], 'no time written: every far time kept');
  db.prepare('UPDATE inodes SET mtime_ns = ? WHERE ino = 10').run(NEAR_NS_MAX);
  t.deepEqual(farColumns(db, 10), [FAR, FAR, FAR], 'a clamp written: kept');
  db.prepare('UPDATE inodes SET ctime_ns = 5 WHERE ino = 10').run();
  t.deepEqual(farColumns(db, 10), [FAR, FAR, null], 'ctime near: only its far column cleared');
  db.prepare('UPDATE inodes SET mtime_ns = 5, atime_ns = 6 WHERE ino = 10').run();
  t.deepEqual(farColumns(db, 10), [null, null, null]);
  addFile(db, 11, false);
  db.prepare('UPDATE inodes SET atime_ns = ?, atime_far = ?, ctime_ns = 8 WHERE ino = 11').run(NEAR_NS_MAX, FAR);
  t.deepEqual(farColumns(db, 11), [FAR, null, null], 'a far time written with its clamp (setattr): kept');
}

function inoHigh(db: Db): number {
  return Number((db.prepare('SELECT ino FROM ino_high WHERE k = 0').get() as { ino: bigint }).ino);
}

function nextIno(db: Db): number {
  return Number((db.prepare(`SELECT ${NEXT_INO_SQL} AS n`).get() as { n: bigint }).n);
}

function checkDeletes(t: ExecutionContext, db: Db): void {
  for (const ino of [30, 25, 20]) addFile(db, ino, false);
  db.prepare('INSERT INTO prealloc(ino, chunk_index, length) VALUES (25, 0, 4096), (25, 1, 4096), (20, 0, 1)').run();
  const high0 = inoHigh(db);
  db.prepare('DELETE FROM inodes WHERE ino = 25').run();
  t.is(inoHigh(db), high0, 'below an inode left (30): not written');
  t.deepEqual(
    db.prepare('SELECT ino FROM prealloc ORDER BY ino').all(),
    [{ ino: 20n }],
    "the deleted inode's rows only",
  );
  t.is(nextIno(db), 31);
  db.prepare('DELETE FROM inodes WHERE ino = 30').run();
  t.is(inoHigh(db), 30, 'above every inode left: kept');
  db.prepare('DELETE FROM inodes WHERE ino = 20').run();
  t.is(inoHigh(db), 30, 'a lower number deleted later does not lower it');
  t.is((db.prepare('SELECT count(*) AS n FROM prealloc').get() as { n: bigint }).n, 0n);
  t.is(nextIno(db), 31, 'no number ever used comes back');
  addFile(db, 31, false);
  addFile(db, 32, false);
  db.prepare('DELETE FROM inodes WHERE ino >= 31').run(); // one statement, two rows
  t.is(inoHigh(db), 32);
  t.is(nextIno(db), 33);
}

function checkIntentsIndex(t: ExecutionContext, db: Db): void {
  const plan = (db.prepare('EXPLAIN DELETE FROM intents WHERE ino = ?').all(42) as Array<Record<string, string>>)
    .map((r) => Object.values(r)[0])
    .join('\n');
  t.regex(plan, /intents_by_ino/, plan);
}

for (const [made, open] of [
  ['made from schema.sql', newDb],
  ['made at v1 and upgraded', upgradedDb],
] as const) {
  pgTest(`${made}: a far time is cleared only by a near value of its own column`, (t) => {
    const db = open();
    try {
      checkFarTimes(t, db);
    } finally {
      db.close();
    }
  });
  pgTest(
    `${made}: an inode's delete takes its fallocate rows; no inode number comes back, ino_high written only above every inode left`,
    (t) => {
      const db = open();
      try {
        checkDeletes(t, db);
      } finally {
        db.close();
      }
    },
  );
  pgTest(`${made}: a file's intents are deleted through the index by inode`, (t) => {
    const db = open();
    try {
      checkIntentsIndex(t, db);
    } finally {
      db.close();
    }
  });
}
