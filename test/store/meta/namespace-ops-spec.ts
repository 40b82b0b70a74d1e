// The namespace's operations (store/meta/ops.ts, DESIGN §9 "Operations"), one body run against each
// engine (test/store/meta/<engine>/namespace-ops.test.ts): readdir pages, the rules every engine
// shares, a rolled-back operation leaving nothing behind, and a seeded random sequence after each
// step of which every answer an engine may keep (a name's lookup, whether a directory is empty, its
// inherited layout, link counts) equals what an uncached read gives, and, after the store is opened
// again (nothing kept), the same tree.
import type { ExecutionContext, Implementation } from 'ava';
import { Store } from '../../../store/store';
import { FsError } from '../../../store/fs-error';
import { ROOT_INO } from '../../../store/meta/meta';
import { LAYOUT_XATTR } from '../../../store/meta/attr';
import type { NamespaceBase } from '../../../store/meta/ops-base';
import { prng } from '../helpers';

/** A new store of the engine under test (closed by the test). */
export type MakeStore = () => Promise<Store>;
/** Opens the closed store of dir again, on the same engine and metadata. */
export type ReopenStore = (dir: string) => Promise<Store>;

const STEPS = 400;
/** Steps between two checks of emptiness (each drops what the engine keeps). */
const EMPTINESS_EVERY = 10;
const NAMES = ['a', 'b', 'c', 'd', 'e'];
const LAYOUTS = ['replica:1', 'replica:2'];

function errno(t: ExecutionContext, fn: () => unknown, code: string): void {
  t.throws(fn, { instanceOf: FsError, message: new RegExp(`^${code}`) });
}

/** Every directory reachable from the root, by readdir (the engines' uncached listing). */
function tree(ns: NamespaceBase): Map<number, Array<{ name: string; ino: number; type: string }>> {
  const dirs = new Map<number, Array<{ name: string; ino: number; type: string }>>();
  const todo = [ROOT_INO];
  while (todo.length > 0) {
    const dir = todo.pop()!;
    const entries = ns.readdir(dir);
    dirs.set(dir, entries);
    for (const e of entries) if (e.type === 'dir') todo.push(e.ino);
  }
  return dirs;
}

/** The layout a walk up by parentOf and findxattr finds (no cached walk). */
function walkedLayout(ns: NamespaceBase, dir: number): string {
  for (let ino = dir; ; ino = ns.parentOf(ino)) {
    const v = ns.findxattr(ino, LAYOUT_XATTR);
    if (v !== null) return v.toString('utf8');
    if (ino === ROOT_INO) return ns.opts.defaults.layout;
  }
}

/** What every kept answer must equal: lookups (present and absent), link counts, layouts. */
function checkKept(t: ExecutionContext, ns: NamespaceBase, step: string): void {
  for (const [dir, entries] of tree(ns)) {
    const byName = new Map(entries.map((e) => [e.name, e.ino]));
    for (const name of NAMES) t.is(ns.lookup(dir, name)?.ino, byName.get(name), `${step}: lookup ${dir}/${name}`);
    const subdirs = entries.filter((e) => e.type === 'dir').length;
    t.is(ns.attr(dir).nlink, 2 + subdirs, `${step}: nlink of directory ${dir}`);
    t.is(ns.inheritedLayout(dir), walkedLayout(ns, dir), `${step}: inherited layout of ${dir}`);
  }
}

/**
 * Whether each directory is empty, as rmdir finds it, equals its listing: each rmdir is rolled back
 * (which also drops what an engine keeps, so it runs only now and then).
 */
function checkEmptiness(t: ExecutionContext, ns: NamespaceBase, step: string): void {
  const probe = new Error('probe');
  for (const [dir, entries] of tree(ns)) {
    for (const e of entries) {
      if (e.type !== 'dir') continue;
      const empty = ns.readdir(e.ino).length === 0;
      const rmdir = ns.db.transaction(() => {
        ns.rmdir(dir, e.name);
        throw probe;
      });
      if (empty) t.throws(rmdir, { is: probe }, `${step}: rmdir of empty ${dir}/${e.name}`);
      else errno(t, rmdir, 'ENOTEMPTY');
    }
  }
}

/** The tree with each inode's attributes that the engine stores (no cache can hold them after a reopen). */
function snapshot(ns: NamespaceBase): unknown {
  return [...tree(ns)].map(([dir, entries]) => [
    dir,
    entries.map((e) => {
      const a = ns.attr(e.ino);
      return [e.name, e.ino, a.type, a.mode, a.nlink, a.uid, String(a.mtimeNs), String(a.ctimeNs), ns.listxattr(e.ino)];
    }),
  ]);
}

/** One random operation on a random name; refusals (FsError) are part of the sequence. */
function randomStep(ns: NamespaceBase, random: () => number, dirs: number[]): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)];
  const dir = pick(dirs);
  const other = pick(dirs);
  const name = pick(NAMES);
  const name2 = pick(NAMES);
  const ops: Array<[string, () => unknown]> = [
    ['create', () => ns.create(dir, name, 0o644, 1, 1)],
    ['mkdir', () => ns.mkdir(dir, name, 0o755, 1, 1)],
    ['symlink', () => ns.symlink(dir, name, 'target', 1, 1)],
    ['link', () => ns.link(ns.lookup(dir, name)?.ino ?? ROOT_INO, other, name2)],
    ['unlink', () => ns.unlink(dir, name)],
    ['rmdir', () => ns.rmdir(dir, name)],
    ['rename', () => ns.rename(dir, name, other, name2)],
    ['rename noreplace', () => ns.rename(dir, name, other, name2, { noReplace: true })],
    ['rename whiteout', () => ns.rename(dir, name, other, name2, { whiteout: { uid: 1, gid: 1 } })],
    ['exchange', () => ns.exchange(dir, name, other, name2)],
    ['chmod', () => ns.setattr(ns.lookup(dir, name)?.ino ?? dir, { mode: 0o700 })],
    ['layout', () => ns.setxattr(dir, LAYOUT_XATTR, Buffer.from(pick(LAYOUTS)))],
    ['no layout', () => ns.removexattr(dir, LAYOUT_XATTR)],
  ];
  const [what, fn] = pick(ops);
  try {
    fn();
    return `${what} ${dir}/${name} ${other}/${name2}`;
  } catch (err) {
    if (!(err instanceof FsError)) throw err;
    return `${what} ${dir}/${name} ${other}/${name2} refused (${err.code})`;
  }
}

/** How the engine's file registers a test (ava's test, test.serial or test.skip). */
export type Register = (title: string, fn: Implementation<[]>) => void;

export function namespaceOpsSpec(test: Register, make: MakeStore, reopen: ReopenStore): void {
  test('readdir pages by name: after a name, at most limit entries, in byte order', async (t) => {
    const store = await make();
    try {
      const ns = store.ns;
      const names = ['b', 'a', 'C', 'é', 'a.b', 'z'];
      for (const n of names) ns.create(ROOT_INO, n, 0o644, 0, 0);
      const sorted = [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      t.deepEqual(
        ns.readdir(ROOT_INO).map((e) => e.name),
        sorted,
      );
      const pages: string[][] = [];
      for (let after = ''; ; ) {
        const page = ns.readdir(ROOT_INO, after, 2).map((e) => e.name);
        if (page.length === 0) break;
        pages.push(page);
        after = page[page.length - 1];
      }
      t.deepEqual(pages, [sorted.slice(0, 2), sorted.slice(2, 4), sorted.slice(4, 6)]);
      errno(t, () => ns.readdir(ns.lookup(ROOT_INO, 'a')!.ino), 'ENOTDIR');
    } finally {
      await store.close();
    }
  });

  test('an operation rolled back leaves no name, entry or layout behind in what the engine keeps', async (t) => {
    const store = await make();
    try {
      const ns = store.ns;
      const d = ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0);
      t.is(ns.lookup(d.ino, 'f'), null, 'known absent');
      t.is(ns.inheritedLayout(d.ino), ns.opts.defaults.layout);
      const rolledBack = new Error('rolled back');
      t.throws(
        ns.db.transaction(() => {
          ns.create(d.ino, 'f', 0o644, 0, 0);
          ns.setxattr(d.ino, LAYOUT_XATTR, Buffer.from(LAYOUTS[1]));
          ns.rename(ROOT_INO, 'd', ROOT_INO, 'e');
          t.truthy(ns.lookup(ROOT_INO, 'e'), 'seen inside the transaction');
          throw rolledBack;
        }),
        { is: rolledBack },
      );
      t.is(ns.lookup(d.ino, 'f'), null);
      t.is(ns.lookup(ROOT_INO, 'e'), null);
      t.is(ns.lookup(ROOT_INO, 'd')?.ino, d.ino);
      t.deepEqual(ns.readdir(d.ino), []);
      t.is(ns.inheritedLayout(d.ino), ns.opts.defaults.layout);
      t.notThrows(() => ns.rmdir(ROOT_INO, 'd'), 'empty again');
    } finally {
      await store.close();
    }
  });

  const rules =
    'the shared rules: errnos, a directory not beneath itself, whiteouts, the inherited layout as directories move';
  test(rules, async (t) => {
    const store = await make();
    try {
      const ns = store.ns;
      const a = ns.mkdir(ROOT_INO, 'a', 0o755, 0, 0);
      const b = ns.mkdir(a.ino, 'b', 0o755, 0, 0);
      const c = ns.mkdir(ROOT_INO, 'c', 0o755, 0, 0);
      errno(t, () => ns.rename(ROOT_INO, 'a', b.ino, 'x'), 'EINVAL');
      errno(t, () => ns.rename(ROOT_INO, 'a', ROOT_INO, 'c', { noReplace: true }), 'EEXIST');
      ns.create(b.ino, 'f', 0o644, 0, 0);
      errno(t, () => ns.rename(ROOT_INO, 'c', a.ino, 'b'), 'ENOTEMPTY');
      errno(t, () => ns.rename(b.ino, 'f', ROOT_INO, 'c'), 'EISDIR');
      errno(t, () => ns.rmdir(a.ino, 'b'), 'ENOTEMPTY');
      ns.setxattr(a.ino, LAYOUT_XATTR, Buffer.from(LAYOUTS[1]));
      t.is(ns.inheritedLayout(b.ino), LAYOUTS[1]);
      t.is(ns.create(b.ino, 'g', 0o644, 0, 0).layout, LAYOUTS[1]);
      ns.rename(a.ino, 'b', c.ino, 'b');
      t.is(ns.inheritedLayout(b.ino), ns.opts.defaults.layout, 'moved out from under the layout');
      t.is(ns.attr(a.ino).nlink, 2);
      t.is(ns.attr(c.ino).nlink, 3);
      ns.setxattr(c.ino, LAYOUT_XATTR, Buffer.from(LAYOUTS[1]));
      t.is(ns.inheritedLayout(b.ino), LAYOUTS[1], 'a layout set above: seen at once');
      ns.removexattr(c.ino, LAYOUT_XATTR);
      t.is(ns.inheritedLayout(b.ino), ns.opts.defaults.layout, 'and removed');
      ns.rename(b.ino, 'g', b.ino, 'h', { whiteout: { uid: 3, gid: 4 } });
      const w = ns.lookup(b.ino, 'g')!;
      t.like(w, { type: 'chardev', rdev: 0, uid: 3, gid: 4 });
      ns.unlink(b.ino, 'g');
      ns.unlink(b.ino, 'h');
      ns.unlink(b.ino, 'f');
      ns.rename(ROOT_INO, 'a', c.ino, 'b');
      t.is(ns.lookup(c.ino, 'b')?.ino, a.ino, 'an empty directory replaced');
      const f = ns.create(a.ino, 'z', 0o644, 0, 0);
      ns.link(f.ino, ROOT_INO, 'y');
      t.is(ns.pathOf(f.ino), '/y', 'the first name by (parent, name)');
      ns.unlink(ROOT_INO, 'y');
      t.is(ns.pathOf(f.ino), '/c/b/z', 'walked up to the root');
      t.is(ns.pathOf(ROOT_INO), '/');
      ns.unlink(a.ino, 'z');
      t.is(ns.pathOf(f.ino), null, 'no name left');
      t.is(ns.getattr(b.ino), null);
      errno(t, () => ns.readdir(b.ino), 'ENOENT');
    } finally {
      await store.close();
    }
  });

  const random =
    'a random sequence: every kept answer equals an uncached read after each step, and the tree survives a reopen';
  test(random, async (t) => {
    const store = await make();
    const random = prng(40);
    let before: unknown;
    try {
      const ns = store.ns;
      for (let i = 0; i < STEPS; i++) {
        const dirs = [...tree(ns).keys()];
        const step = `${i}: ${randomStep(ns, random, dirs)}`;
        checkKept(t, ns, step);
        if (i % EMPTINESS_EVERY === 0) checkEmptiness(t, ns, step);
      }
      before = snapshot(ns);
    } finally {
      await store.close();
    }
    const again = await reopen(store.dir);
    try {
      t.deepEqual(snapshot(again.ns), before, 'the same tree read fresh');
    } finally {
      await again.close();
    }
  });
}
