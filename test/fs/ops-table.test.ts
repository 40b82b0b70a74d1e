// Every op answers exactly once. A handler that throws (a bug, an unrecoverable read) or rejects
// answers EIO and is logged in one line naming the op and path; typed POSIX errors answer their
// errno quietly. Either way the op table keeps serving. getxattr/listxattr honour the caller's size.
import test from 'ava';
import { makeOps, IMPL, Impl, ChunkfsOps } from '../../fs/fuse/ops-table';
import { FsError } from '../../store/fs-error';
import type { FsCore } from '../../fs/core';

const EIO = -5;
const ENOENT = -2;
const ERANGE = -34;
const CTX = { uid: 0, gid: 0, pid: 1, umask: 0 };

// The binding's arguments before the callback, per op. Every op of the table must be listed here.
const ARGS: Record<string, unknown[]> = {
  init: [],
  getattr: ['/a'],
  fgetattr: ['/a', 3],
  statfs: ['/'],
  chmod: ['/a', 0o644],
  chown: ['/a', 1, 1],
  utimens: ['/a', 'now', 'omit'],
  truncate: ['/a', 0],
  ftruncate: ['/a', 3, 0],
  readdir: ['/d'],
  mkdir: ['/d', 0o755],
  rmdir: ['/d'],
  mknod: ['/n', 0o100644, 0],
  unlink: ['/a'],
  rename: ['/a', '/b'],
  link: ['/a', '/b'],
  symlink: ['target', '/l'],
  readlink: ['/l'],
  create: ['/a', 0o644],
  open: ['/a', 0],
  read: ['/a', 3, Buffer.alloc(4), 4, 0],
  write: ['/a', 3, Buffer.alloc(4), 4, 0],
  flush: ['/a', 3],
  fsync: ['/a', 0, 3],
  fsyncdir: ['/d', 0, 3],
  release: ['/a', 3],
  getxattr: ['/a', 'user.x', Buffer.alloc(4)],
  setxattr: ['/a', 'user.x', Buffer.from('v'), 0, 0],
  listxattr: ['/a', Buffer.alloc(4)],
  removexattr: ['/a', 'user.x'],
};

/** The path an op's log line names: its first path argument (symlink's target is not one). */
function loggedPath(name: string): string {
  if (name === 'init') return '-';
  return String(ARGS[name][name === 'symlink' ? 1 : 0]);
}

/** Every implementation replaced by `make(name)`. */
function implOf(make: (name: string) => (...args: unknown[]) => unknown): Impl {
  return Object.fromEntries(Object.keys(IMPL).map((name) => [name, make(name)])) as unknown as Impl;
}

/** Calls one op; resolves with every answer it gave once everything queued has run. */
async function answers(ops: ChunkfsOps, name: string): Promise<unknown[][]> {
  const got: unknown[][] = [];
  const op = (ops as unknown as Record<string, (...a: unknown[]) => void>)[name];
  op(
    ...ARGS[name],
    (...a: unknown[]) => {
      got.push(a);
    },
    CTX,
  );
  await new Promise((resolve) => setImmediate(resolve)); // a second answer would be queued by now
  return got;
}

test('the argument table covers every op of the table', (t) => {
  const ops = makeOps({} as FsCore, () => {});
  t.deepEqual(Object.keys(ops).sort(), Object.keys(ARGS).sort());
  t.deepEqual(Object.keys(IMPL).sort(), Object.keys(ARGS).sort());
});

for (const [kind, make] of [
  [
    'throws',
    (name: string) => () => {
      throw new TypeError(`${name} broke`);
    },
  ],
  [
    'rejects',
    (name: string) => async () => {
      throw new TypeError(`${name} broke`);
    },
  ],
] as const) {
  test(`every op whose implementation ${kind} answers EIO exactly once and logs one line`, async (t) => {
    const logs: string[] = [];
    const ops = makeOps({} as FsCore, (m) => logs.push(m), implOf(make));
    for (const name of Object.keys(ARGS)) {
      logs.length = 0;
      const got = await answers(ops, name);
      t.deepEqual(
        got.map((a) => a[0]),
        [EIO],
        name,
      );
      t.is(logs.length, 1, name);
      t.true(logs[0].startsWith(`${name} ${loggedPath(name)}: TypeError: ${name} broke`), logs[0]);
      t.false(logs[0].includes('\n'), logs[0]);
    }
  });
}

test('a typed error answers its errno, once and quietly, from every op', async (t) => {
  const logs: string[] = [];
  const ops = makeOps(
    {} as FsCore,
    (m) => logs.push(m),
    implOf(() => async () => {
      throw new FsError('ENOENT', 'gone');
    }),
  );
  for (const name of Object.keys(ARGS))
    t.deepEqual(
      (await answers(ops, name)).map((a) => a[0]),
      [ENOENT],
      name,
    );
  t.deepEqual(logs, []);
});

test('a throwing core answers EIO, logged; a typed error from the core answers its errno', async (t) => {
  const logs: string[] = [];
  const core = {
    ns: {
      attr: () => ({ ino: 1, type: 'dir' }),
      lookup: (parent: number, name: string) => {
        if (name === 'bug') throw new TypeError('boom');
        throw new FsError('ENOENT', 'missing');
      },
    },
    handles: { file: () => undefined },
  } as unknown as FsCore;
  const ops = makeOps(core, (m) => logs.push(m));
  const getattr = (p: string): Promise<number> => new Promise((resolve) => ops.getattr!(p, (err) => resolve(err), CTX));
  t.is(await getattr('/bug'), EIO);
  t.is(logs.length, 1);
  t.regex(logs[0], /^getattr \/bug: TypeError: boom \(at /);
  t.is(await getattr('/gone'), ENOENT);
  t.is(logs.length, 1);
});

test('a transport callback that throws on a result is answered EIO instead', async (t) => {
  const logs: string[] = [];
  const ops = makeOps(
    {} as FsCore,
    (m) => logs.push(m),
    implOf(() => () => 7),
  );
  const got: number[] = [];
  ops.open!(
    '/a',
    0,
    (err) => {
      got.push(err);
      if (err === 0) throw new RangeError('cannot convert');
    },
    CTX,
  );
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(got, [0, EIO]);
  t.is(logs.length, 1);
  t.regex(logs[0], /^open \/a: reply failed: RangeError: cannot convert/);
});

test('a byte count the binding cannot carry answers EIO, not a throw in the binding', async (t) => {
  for (const bad of [undefined, 1.5, 2 ** 31]) {
    const logs: string[] = [];
    const ops = makeOps(
      {} as FsCore,
      (m) => logs.push(m),
      implOf(() => async () => bad),
    );
    t.deepEqual(
      (await answers(ops, 'read')).map((a) => a[0]),
      [EIO],
      String(bad),
    );
    t.regex(logs.join('\n'), /^read \/a: reply failed: TypeError: not a byte count/);
  }
});

// A core whose file /a has user.v = "hello" and one more attribute.
function xattrCore(): FsCore {
  return {
    ns: {
      attr: () => ({ ino: 1, type: 'dir' }),
      lookup: () => ({ ino: 2, type: 'file' }),
      getxattr: () => Buffer.from('hello'),
      listxattr: () => ['user.v', 'user.other'],
    },
  } as unknown as FsCore;
}

function sized(ops: ChunkfsOps, op: 'getxattr' | 'listxattr', buf: Buffer): Promise<number> {
  return new Promise((resolve) => {
    if (op === 'getxattr') ops.getxattr('/a', 'user.v', buf, resolve, CTX);
    else ops.listxattr('/a', buf, resolve, CTX);
  });
}

test('getxattr: size 0 answers the length, a short buffer ERANGE, a large enough one the value', async (t) => {
  const ops = makeOps(xattrCore(), () => {});
  t.is(await sized(ops, 'getxattr', Buffer.alloc(0)), 5);
  t.is(await sized(ops, 'getxattr', Buffer.alloc(1)), ERANGE);
  t.is(await sized(ops, 'getxattr', Buffer.alloc(4)), ERANGE);
  for (const sizeBytes of [5, 9]) {
    const buf = Buffer.alloc(sizeBytes);
    t.is(await sized(ops, 'getxattr', buf), 5);
    t.is(buf.subarray(0, 5).toString(), 'hello');
  }
});

test('listxattr: size 0 answers the exact length, a short buffer ERANGE, an exact one the names', async (t) => {
  const ops = makeOps(xattrCore(), () => {});
  const list = 'user.v\0user.other\0';
  t.is(await sized(ops, 'listxattr', Buffer.alloc(0)), list.length);
  t.is(await sized(ops, 'listxattr', Buffer.alloc(1)), ERANGE);
  t.is(await sized(ops, 'listxattr', Buffer.alloc(list.length - 1)), ERANGE);
  const buf = Buffer.alloc(list.length);
  t.is(await sized(ops, 'listxattr', buf), list.length);
  t.is(buf.toString('latin1'), list);
});
