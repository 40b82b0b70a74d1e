// The tables and the row-for-row comparison of `chunkfs meta copy` (store/meta/table-copy.ts, DESIGN
// §9), on two SQLite databases: META_TABLES names every table this build's schema has (a table a
// later migration adds fails here until the copy knows it), a copy compares equal, and a changed
// value, a missing row or a changed key is found and named; a source older than this build is
// refused before anything is written. The whole move, both engines and the
// mount: test/mount/meta-copy.test.ts.
import test from 'ava';
import * as crypto from 'node:crypto';
import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Db, ROOT_INO } from '../../store/meta/meta';
import { createDb } from '../../store/meta/sqlite/database';
import { META_TABLES, storeTablesIn } from '../../store/meta/meta-tables';
import { MetaCopyError, copyTables, verifyTables } from '../../store/meta/table-copy';
import { moveStoreMeta } from '../../store/meta-move';
import { sqliteOnlyTest } from '../helpers/pg-meta';
import { smallStore, tmpDir } from './helpers';

/** A migrated database with rows in several tables (a text key, a blob, a NULL). */
function sourceDb(dir: string): Db {
  const db = createDb(path.join(dir, 'source.db'), crypto.randomUUID());
  for (let i = 0; i < 25; i++) {
    db.prepare(
      `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns)
      VALUES (?, 'file', 33188, 0, 0, ?, 1, NULL, 1, 2, 3, 4)`,
    ).run(100 + i, i * 10);
    db.prepare('INSERT INTO dirents(parent, name, ino) VALUES (?, ?, ?)').run(ROOT_INO, `f${i}-é`, 100 + i);
    db.prepare('INSERT INTO xattrs(ino, name, value) VALUES (?, ?, ?)').run(
      100 + i,
      'user.k',
      Buffer.from([i, 0, 255]),
    );
  }
  return db;
}

function copied(dir: string): { source: Db; target: Db } {
  const source = sourceDb(dir);
  const target = createDb(path.join(dir, 'target.db'), crypto.randomUUID());
  target.transaction(() => copyTables(source, target, 7, () => undefined))();
  return { source, target };
}

test("META_TABLES names every table of this build's schema", (t) => {
  const db = createDb(path.join(tmpDir(), 'meta.db'), crypto.randomUUID());
  t.deepEqual(storeTablesIn(db).sort(), META_TABLES.map((x) => x.name).sort());
  db.close();
});

test('a copy compares equal, batch by batch', (t) => {
  const { source, target } = copied(tmpDir());
  t.is(verifyTables(source, target, 4), verifyTables(source, target, 1000));
  t.true(verifyTables(source, target, 4) >= 25 * 3 + 1);
});

test('a changed value is found and named: table, row key, column, both values', (t) => {
  const { source, target } = copied(tmpDir());
  target.prepare('UPDATE xattrs SET value = ? WHERE ino = 117').run(Buffer.from([1]));
  const err = t.throws(() => verifyTables(source, target, 4), { instanceOf: MetaCopyError });
  t.regex(
    err!.message,
    /table xattrs: row ino=117, name="user\.k": column value is blob x'1100ff' in the source, blob x'01' in the copy/,
  );
});

test('a missing row, or a changed key, is found', (t) => {
  const { source, target } = copied(tmpDir());
  target.prepare('DELETE FROM dirents WHERE name = ?').run('f3-é');
  t.throws(() => verifyTables(source, target, 4), {
    instanceOf: MetaCopyError,
    message: /table dirents: 25 rows in the source, 24 in the copy/,
  });
  target.prepare('INSERT INTO dirents(parent, name, ino) VALUES (?, ?, ?)').run(ROOT_INO, 'f3-e', 103);
  t.throws(() => verifyTables(source, target, 4), {
    instanceOf: MetaCopyError,
    message: /table dirents: row parent=1, name="f3-é" \(copy: parent=1, name="f3-e"\)/,
  });
});

sqliteOnlyTest(
  'a source older than this build is refused before anything is written: open it read-write once',
  async (t) => {
    const { store, dir } = await smallStore('replica:3', 6);
    await store.close();
    const raw = new Database(path.join(dir, 'meta.db'));
    const version = Number(raw.pragma('user_version', { simple: true }));
    raw.pragma(`user_version = ${version - 1}`);
    raw.close();
    const config = fs.readFileSync(path.join(dir, 'chunkfs.json'));
    t.throws(() => moveStoreMeta(dir, 'postgresql:///never?host=/nonexistent'), {
      message: new RegExp(
        `schema version ${version - 1} is older than this build's \\(${version}\\); open the store read-write once`,
      ),
    });
    t.deepEqual(fs.readFileSync(path.join(dir, 'chunkfs.json')), config);
    t.false(fs.existsSync(path.join(dir, 'chunkfs.lock')), 'the store lock released');
  },
);
