// Namespace semantics (store-api.md): errno-typed errors, rename replace rules,
// hard links and nlink, orphans, layout xattr inheritance.
import test from 'ava';
import { FsError } from '../../store/fs-error';
import { ROOT_INO } from '../../store/meta/meta';
import { S_IFDIR, S_IFREG } from '../../store/meta/attr';
import { Row, attrOf } from '../../store/meta/attr';
import { XATTR_CREATE, XATTR_REPLACE } from '../../store/meta/ops';
import { smallStore } from './helpers';

function code(t: { throws: (fn: () => unknown, exp: object) => unknown }, fn: () => unknown, c: string): void {
  t.throws(fn, { instanceOf: FsError, message: new RegExp(`^${c}`) });
}

test('create, lookup, mkdir, readdir, errors', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const d = ns.mkdir(ROOT_INO, 'd', 0o755, 1, 2);
  t.is(d.mode, S_IFDIR | 0o755);
  t.is(ns.getattr(ROOT_INO)!.nlink, 3);
  const f = ns.create(d.ino, 'f', 0o640, 1, 2);
  t.is(f.mode, S_IFREG | 0o640);
  t.is(f.nlink, 1);
  t.deepEqual(ns.lookup(d.ino, 'f')!.ino, f.ino);
  t.is(ns.lookup(d.ino, 'nope'), null);
  code(t, () => ns.create(d.ino, 'f', 0o644, 0, 0), 'EEXIST');
  code(t, () => ns.create(f.ino, 'x', 0o644, 0, 0), 'ENOTDIR');
  code(t, () => ns.create(d.ino, 'a/b', 0o644, 0, 0), 'EINVAL');
  code(t, () => ns.create(d.ino, 'x'.repeat(256), 0o644, 0, 0), 'ENAMETOOLONG');
  code(t, () => ns.rmdir(ROOT_INO, 'd'), 'ENOTEMPTY');
  code(t, () => ns.unlink(ROOT_INO, 'd'), 'EISDIR');
  code(t, () => ns.rmdir(d.ino, 'f'), 'ENOTDIR');
  code(t, () => ns.unlink(ROOT_INO, 'missing'), 'ENOENT');
  t.deepEqual(
    ns.readdir(d.ino).map((e) => e.name),
    ['f'],
  );
  const l = ns.symlink(d.ino, 'l', '../target', 0, 0);
  t.is(ns.readlink(l.ino), '../target');
  t.is(l.sizeBytes, 9);
  code(t, () => ns.readlink(f.ino), 'EINVAL');
  await store.close();
});

test('hard links, unlink to nlink 0 goes to the orphan list, deleteFile removes data', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const f = ns.create(ROOT_INO, 'a', 0o644, 0, 0);
  await store.write(f.ino, 0, Buffer.alloc(5000, 1));
  t.is(ns.link(f.ino, ROOT_INO, 'b').nlink, 2);
  t.deepEqual(ns.unlink(ROOT_INO, 'a'), { ino: f.ino, nlink: 1 });
  t.true((await store.read(f.ino, 0, 10)).equals(Buffer.alloc(10, 1)));
  t.deepEqual(ns.unlink(ROOT_INO, 'b'), { ino: f.ino, nlink: 0 });
  t.deepEqual(ns.orphans(), [f.ino]);
  t.true((await store.read(f.ino, 0, 10)).equals(Buffer.alloc(10, 1)), 'open-but-unlinked data still readable');
  await store.deleteFile(f.ino);
  t.deepEqual(ns.orphans(), []);
  t.is(ns.getattr(f.ino), null);
  code(t, () => ns.link(ns.mkdir(ROOT_INO, 'dd', 0o755, 0, 0).ino, ROOT_INO, 'x'), 'EPERM');
  await store.close();
});

test('orphans left at close are deleted by recovery', async (t) => {
  const { store, dir } = await smallStore('replica:3');
  const f = store.ns.create(ROOT_INO, 'a', 0o644, 0, 0);
  await store.write(f.ino, 0, Buffer.alloc(5000, 1));
  store.ns.unlink(ROOT_INO, 'a');
  await store.close();
  const { Store } = await import('../../store/store');
  const again = await Store.open(dir);
  t.is(again.recoveryReport.orphansDeleted, 1);
  t.is(again.ns.getattr(f.ino), null);
  await again.close();
});

test('unlinkByPrefix: exact, case-sensitive prefix; skips directories; keeps linked inodes; bounded', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const d = ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0);
  const h1 = ns.create(ROOT_INO, '.fuse_hidden0001', 0o644, 0, 0);
  await store.write(h1.ino, 0, Buffer.alloc(5000, 7));
  const h2 = ns.create(d.ino, '.fuse_hidden0002', 0o644, 0, 0);
  ns.link(h2.ino, ROOT_INO, 'kept'); // still linked elsewhere: only the hidden name goes
  ns.symlink(d.ino, '.fuse_hiddenL', 'x', 0, 0);
  ns.mkdir(ROOT_INO, '.fuse_hiddenDir', 0o755, 0, 0); // a directory is never unlinked
  for (const other of ['.fuseXhidden1', '.FUSE_HIDDEN1', 'a.fuse_hidden1', '.fuse_hidde'])
    ns.create(ROOT_INO, other, 0o644, 0, 0);
  code(t, () => ns.unlinkByPrefix('', 10), 'EINVAL');
  t.deepEqual(ns.unlinkByPrefix('.fuse_hidden', 0), []);
  const first = ns.unlinkByPrefix('.fuse_hidden', 1);
  t.deepEqual(first, [{ parent: ROOT_INO, name: '.fuse_hidden0001', ino: h1.ino, nlink: 0 }]);
  const rest = ns.unlinkByPrefix('.fuse_hidden', 10);
  t.deepEqual(
    rest.map((e) => [e.parent, e.name, e.nlink]),
    [
      [d.ino, '.fuse_hidden0002', 1],
      [d.ino, '.fuse_hiddenL', 0],
    ],
  );
  t.deepEqual(ns.unlinkByPrefix('.fuse_hidden', 10), []);
  t.deepEqual(
    ns
      .readdir(ROOT_INO)
      .map((e) => e.name)
      .sort(),
    ['.FUSE_HIDDEN1', '.fuseXhidden1', '.fuse_hidde', '.fuse_hiddenDir', 'a.fuse_hidden1', 'd', 'kept'],
  );
  t.deepEqual(ns.readdir(d.ino), []);
  t.is(ns.getattr(h2.ino)!.nlink, 1);
  t.deepEqual(ns.orphans(), [h1.ino]); // the file's data waits for Store.deleteFile
  await store.deleteFile(h1.ino);
  t.deepEqual(ns.orphans(), []);
  t.is(ns.getattr(h1.ino), null);
  await store.close();
});

test('rename: replace rules, directories, cycles', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const a = ns.create(ROOT_INO, 'a', 0o644, 0, 0);
  const b = ns.create(ROOT_INO, 'b', 0o644, 0, 0);
  t.deepEqual(ns.rename(ROOT_INO, 'a', ROOT_INO, 'b'), { ino: b.ino, nlink: 0 });
  t.is(ns.lookup(ROOT_INO, 'b')!.ino, a.ino);
  t.is(ns.lookup(ROOT_INO, 'a'), null);
  const d1 = ns.mkdir(ROOT_INO, 'd1', 0o755, 0, 0);
  const d2 = ns.mkdir(ROOT_INO, 'd2', 0o755, 0, 0);
  const sub = ns.mkdir(d1.ino, 'sub', 0o755, 0, 0);
  code(t, () => ns.rename(ROOT_INO, 'b', ROOT_INO, 'd2'), 'EISDIR');
  code(t, () => ns.rename(ROOT_INO, 'd2', ROOT_INO, 'b'), 'ENOTDIR');
  code(t, () => ns.rename(ROOT_INO, 'd2', ROOT_INO, 'd1'), 'ENOTEMPTY');
  code(t, () => ns.rename(ROOT_INO, 'd1', sub.ino, 'x'), 'EINVAL');
  code(t, () => ns.rename(ROOT_INO, 'b', ROOT_INO, 'd1', { noReplace: true }), 'EEXIST');
  const rootLinks = ns.getattr(ROOT_INO)!.nlink;
  ns.rename(d1.ino, 'sub', d2.ino, 'moved');
  t.is(ns.getattr(d1.ino)!.nlink, 2);
  t.is(ns.getattr(d2.ino)!.nlink, 3);
  t.is(ns.parentOf(sub.ino), d2.ino);
  t.deepEqual(ns.rename(ROOT_INO, 'd1', d2.ino, 'moved'), { ino: sub.ino, nlink: 0 }); // empty dir replaced
  t.is(ns.getattr(ROOT_INO)!.nlink, rootLinks - 1);
  t.is(ns.getattr(sub.ino), null);
  await store.close();
});

test('a rename in one directory touches it once; across two, each (rows changed per rename)', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const f = ns.create(ROOT_INO, 'a', 0o644, 0, 0);
  const d = ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0);
  // total_changes(): rows SQLite inserted, updated or deleted (PostgreSQL has no such count).
  const changed = ns.db.engine === 'sqlite' ? ns.db.prepare('SELECT total_changes() AS n') : null;
  const rowsBy = (fn: () => void): number | null => {
    const before = changed === null ? 0n : ((changed.get() as Row).n as bigint);
    fn();
    return changed === null ? null : Number(((changed.get() as Row).n as bigint) - before);
  };
  const sameDir = rowsBy(() => ns.rename(ROOT_INO, 'a', ROOT_INO, 'b'));
  const root = ns.getattr(ROOT_INO)!;
  const file = ns.getattr(f.ino)!;
  // One time for all three (DESIGN §5: one transaction), as the two UPDATEs of one directory gave.
  t.is(root.mtimeNs, file.ctimeNs);
  t.is(root.ctimeNs, file.ctimeNs);
  const crossDir = rowsBy(() => ns.rename(ROOT_INO, 'b', d.ino, 'c'));
  t.is(ns.getattr(d.ino)!.mtimeNs, ns.getattr(f.ino)!.ctimeNs);
  t.is(ns.getattr(ROOT_INO)!.mtimeNs, ns.getattr(f.ino)!.ctimeNs);
  if (changed !== null) {
    t.is(sameDir, 4, "entry out, entry in, the directory's times, the file's ctime");
    t.is(crossDir, 5, "and the second directory's times");
  }
  await store.close();
});

test('layout xattr: inheritance, validation, file view; xattr flags', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const d = ns.mkdir(ROOT_INO, 'ec', 0o755, 0, 0);
  ns.setxattr(d.ino, 'user.chunkfs.layout', Buffer.from('ec:4+2'));
  const sub = ns.mkdir(d.ino, 'deeper', 0o755, 0, 0);
  const f = ns.create(sub.ino, 'f', 0o644, 0, 0);
  t.is(f.layout, 'ec:4+2');
  t.is(ns.getxattr(f.ino, 'user.chunkfs.layout').toString(), 'ec:4+2');
  const g = ns.create(ROOT_INO, 'g', 0o644, 0, 0);
  t.is(g.layout, 'replica:3');
  // Readable by name on every file, listed only where set explicitly (filesystem.md, POSIX details).
  t.is(ns.getxattr(g.ino, 'user.chunkfs.layout').toString(), 'replica:3');
  t.deepEqual(ns.listxattr(g.ino), []);
  t.deepEqual(ns.listxattr(f.ino), []);
  ns.setxattr(g.ino, 'user.chunkfs.layout', Buffer.from('replica:3'));
  t.deepEqual(ns.listxattr(g.ino), ['user.chunkfs.layout']);
  code(t, () => ns.setxattr(d.ino, 'user.chunkfs.layout', Buffer.from('ec:9+9')), 'EINVAL'); // more disks than exist
  code(t, () => ns.setxattr(d.ino, 'user.chunkfs.layout', Buffer.from('raid5')), 'EINVAL');
  ns.setxattr(f.ino, 'user.chunkfs.layout', Buffer.from('replica:2'));
  t.is(ns.getattr(f.ino)!.layout, 'replica:2');
  await store.write(f.ino, 0, Buffer.alloc(10, 1));
  code(t, () => ns.setxattr(f.ino, 'user.chunkfs.layout', Buffer.from('ec:2+1')), 'EBUSY');
  code(t, () => ns.getxattr(f.ino, 'user.x'), 'ENODATA');
  code(t, () => ns.setxattr(f.ino, 'user.x', Buffer.from('1'), XATTR_REPLACE), 'ENODATA');
  ns.setxattr(f.ino, 'user.x', Buffer.from('1'), XATTR_CREATE);
  code(t, () => ns.setxattr(f.ino, 'user.x', Buffer.from('2'), XATTR_CREATE), 'EEXIST');
  t.deepEqual(ns.listxattr(f.ino), ['user.chunkfs.layout', 'user.x']);
  ns.removexattr(f.ino, 'user.x');
  code(t, () => ns.removexattr(f.ino, 'user.x'), 'ENODATA');
  t.true((await store.read(f.ino, 0, 10)).equals(Buffer.alloc(10, 1)));
  await store.close();
});

test('attributes returned by create, mkdir, symlink, mknod and setattr are what a read gives (not read back)', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const d = ns.mkdir(ROOT_INO, 'd', 0o2775, 7, 8);
  t.deepEqual(d, ns.getattr(d.ino));
  const f = ns.create(d.ino, 'f', 0o640, 7, 8);
  t.deepEqual(f, ns.getattr(f.ino));
  const l = ns.symlink(d.ino, 'l', 'f', 7, 8);
  t.deepEqual(l, ns.getattr(l.ino));
  const c = ns.mknod(d.ino, 'c', 'chardev', 0o600, 0x0103, 7, 8);
  t.deepEqual(c, ns.getattr(c.ino));
  for (const v of [
    { mode: 0o4755 },
    { uid: 9, gid: 10 },
    { atimeNs: -5n, mtimeNs: 2n ** 70n },
    { ctimeNs: 123n },
    {},
  ]) {
    t.deepEqual(
      ns.setattr(f.ino, v),
      ns.getattr(f.ino),
      JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)),
    );
  }
  // getattr and lookup read raw rows of ATTR_COLUMNS; they must equal the whole row's attrOf (far times included).
  const whole = ns.db.prepare('SELECT * FROM inodes WHERE ino = ?');
  for (const [name, a] of [
    ['f', f],
    ['l', l],
    ['c', c],
  ] as const) {
    const fromRow = attrOf(whole.get(a.ino) as Row);
    t.deepEqual(ns.getattr(a.ino), fromRow, `getattr of ${name}`);
    t.deepEqual(ns.lookup(d.ino, name), fromRow, `lookup of ${name}`);
  }
  t.deepEqual(ns.getattr(d.ino), attrOf(whole.get(d.ino) as Row), 'getattr of the directory');
  await store.close();
});

test("a new file takes the nearest ancestor's layout, up to the root; findxattr is null where getxattr says ENODATA", async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  let dir = ROOT_INO;
  const dirs: number[] = [];
  for (let i = 0; i < 6; i++) dirs.push((dir = ns.mkdir(dir, `d${i}`, 0o755, 0, 0).ino));
  t.is(ns.create(dir, 'a', 0o644, 0, 0).layout, 'replica:3', 'no ancestor sets one: the store default');
  ns.setxattr(ROOT_INO, 'user.chunkfs.layout', Buffer.from('replica:2'));
  t.is(ns.create(dir, 'b', 0o644, 0, 0).layout, 'replica:2', "the root's");
  ns.setxattr(dirs[1], 'user.chunkfs.layout', Buffer.from('ec:2+1'));
  t.is(ns.create(dir, 'c', 0o644, 0, 0).layout, 'ec:2+1', "the nearest ancestor's, not the root's");
  ns.setxattr(dir, 'user.chunkfs.layout', Buffer.from('replica:3'));
  t.is(ns.create(dir, 'e', 0o644, 0, 0).layout, 'replica:3', "the parent's own");
  t.is(ns.findxattr(dir, 'user.nothing'), null);
  code(t, () => ns.getxattr(dir, 'user.nothing'), 'ENODATA');
  code(t, () => ns.findxattr(999_999, 'user.nothing'), 'ENOENT');
  t.is(ns.findxattr(dir, 'user.chunkfs.layout')!.toString(), 'replica:3');
  await store.close();
});
