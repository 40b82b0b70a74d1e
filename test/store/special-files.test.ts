// Schema v2: FIFOs, sockets and device nodes as inodes with rdev; renameat2's exchange;
// a v1 meta.db (before special files) migrates with every inode kept.
import test from 'ava';
import Database from 'better-sqlite3';
import * as os from 'node:os';
import * as path from 'node:path';
import { promises as fsp } from 'node:fs';
import { FsError } from '../../store/fs-error';
import { ROOT_INO, SCHEMA_VERSION, migrate } from '../../store/meta/meta';
import { openDb } from '../../store/meta/sqlite/database';
import { MIGRATIONS } from '../../store/meta/sqlite/migrations';
import * as crypto from 'node:crypto';
import { smallStore } from './helpers';

function code(t: { throws: (fn: () => unknown, exp: object) => unknown }, fn: () => unknown, c: string): void {
  t.throws(fn, { instanceOf: FsError, message: new RegExp(`^${c}`) });
}

test('mknod makes fifo, socket, chardev, blockdev inodes; only devices keep rdev; unlink removes them', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const fifo = ns.mknod(ROOT_INO, 'p', 'fifo', 0o640, 99, 7, 8);
  t.is(fifo.type, 'fifo');
  t.is(fifo.mode, 0o010640);
  t.is(fifo.rdev, 0, 'a FIFO has no device number');
  t.is(fifo.uid, 7);
  const chr = ns.mknod(ROOT_INO, 'c', 'chardev', 0o600, 0x103, 0, 0);
  t.is(chr.mode, 0o020600);
  t.is(ns.getattr(chr.ino)!.rdev, 0x103);
  t.is(ns.mknod(ROOT_INO, 'b', 'blockdev', 0o600, 0x700, 0, 0).mode, 0o060600);
  t.is(ns.mknod(ROOT_INO, 's', 'socket', 0o755, 0, 0, 0).mode, 0o140755);
  code(t, () => ns.mknod(ROOT_INO, 'p', 'fifo', 0o600, 0, 0, 0), 'EEXIST');
  t.deepEqual(
    ns.readdir(ROOT_INO).map((e) => [e.name, e.type]),
    [
      ['b', 'blockdev'],
      ['c', 'chardev'],
      ['p', 'fifo'],
      ['s', 'socket'],
    ],
  );
  t.deepEqual(ns.unlink(ROOT_INO, 'c'), { ino: chr.ino, nlink: 0 });
  t.is(ns.getattr(chr.ino), null, 'no data to delete: the row goes at once');
  t.deepEqual(ns.orphans(), []);
  await store.close();
});

test('exchange swaps two names; parents count the directories that moved; no directory beneath itself', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const a = ns.mkdir(ROOT_INO, 'a', 0o755, 0, 0);
  const sub = ns.mkdir(a.ino, 'sub', 0o755, 0, 0);
  const f = ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const g = ns.create(a.ino, 'g', 0o644, 0, 0);
  ns.exchange(ROOT_INO, 'f', a.ino, 'g');
  t.is(ns.lookup(ROOT_INO, 'f')!.ino, g.ino);
  t.is(ns.lookup(a.ino, 'g')!.ino, f.ino);
  const rootLinks = ns.getattr(ROOT_INO)!.nlink;
  ns.exchange(a.ino, 'sub', ROOT_INO, 'f'); // the directory moves up, the file down
  t.is(ns.lookup(ROOT_INO, 'f')!.ino, sub.ino);
  t.is(ns.parentOf(sub.ino), ROOT_INO);
  t.is(ns.getattr(ROOT_INO)!.nlink, rootLinks + 1);
  t.is(ns.getattr(a.ino)!.nlink, 2);
  code(t, () => ns.exchange(ROOT_INO, 'a', ROOT_INO, 'missing'), 'ENOENT');
  const inner = ns.mkdir(a.ino, 'inner', 0o755, 0, 0);
  code(t, () => ns.exchange(ROOT_INO, 'a', a.ino, 'inner'), 'EINVAL');
  t.is(ns.lookup(a.ino, 'inner')!.ino, inner.ino, 'nothing changed');
  ns.exchange(ROOT_INO, 'a', ROOT_INO, 'a');
  t.is(ns.lookup(ROOT_INO, 'a')!.ino, a.ino, 'a name exchanged with itself stays');
  await store.close();
});

test('a v1 meta.db migrates to the latest schema: inodes, numbers and the next number kept; special types accepted; the v4 index and trigger survive the v5 rebuild', async (t) => {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'chunkfs-migrate-'));
  const file = path.join(dir, 'meta.db');
  const v1 = new Database(file);
  // v1 as the first migration made it (store/meta/sqlite/migrations.ts), with a root and one file.
  v1.exec(MIGRATIONS[0]);
  v1.prepare(
    `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns)
    VALUES (1, 'dir', ${0o040755}, 0, 0, 0, 2, 1, 1, 1, 1, 1), (5, 'file', ${0o100644}, 3, 4, 10, 1, NULL, 2, 2, 2, 2)`,
  ).run();
  v1.pragma('user_version = 1');
  v1.close();
  const db = openDb(file);
  migrate(db, crypto.randomUUID());
  t.is(db.schemaVersion(), SCHEMA_VERSION);
  const row = db.prepare('SELECT ino, type, uid, size, rdev FROM inodes WHERE ino = 5').get() as Record<
    string,
    bigint | string
  >;
  t.deepEqual({ ...row }, { ino: 5n, type: 'file', uid: 3n, size: 10n, rdev: 0n });
  const next = db
    .prepare(
      `INSERT INTO inodes(type, mode, uid, gid, nlink, atime_ns, mtime_ns, ctime_ns, birth_ns, rdev)
    VALUES ('chardev', ${0o020600}, 0, 0, 1, 0, 0, 0, 0, 259)`,
    )
    .run();
  t.is(Number(next.lastInsertRowid), 6);
  const names = (
    db.prepare(`SELECT name FROM sqlite_master WHERE tbl_name = 'inodes'`).all() as { name: string }[]
  ).map((r) => r.name);
  t.true(names.includes('inodes_by_slice') && names.includes('inodes_high'), names.join(','));
  db.prepare('DELETE FROM inodes WHERE ino = 6').run();
  t.is(Number((db.prepare('SELECT ino FROM ino_high WHERE k = 0').get() as { ino: bigint }).ino), 6);
  db.close();
  await fsp.rm(dir, { recursive: true, force: true });
});
