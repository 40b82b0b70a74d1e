// A tiny in-memory FUSE filesystem, run as a CHILD process by test/mount/fuse-patch.test.ts to prove
// the fuse-native patch: creator uid/gid/pid from fuse_get_context(), utimens with both times in ns
// (UTIME_NOW / UTIME_OMIT), fgetattr with the fh, opendir's fh. Each op with a caller context prints
// one JSON line on stdout ({op, path, uid, gid, pid}) so the test can check what arrived.
// Usage: node tiny-fuse.js <mountpoint>
import Fuse = require('fuse-native');

interface Node {
  mode: number;
  uid: number;
  gid: number;
  atime: bigint;
  mtime: bigint;
  ctime: bigint;
  data: Buffer;
}

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const mnt = process.argv[2];
if (mnt === undefined) {
  console.error('usage: tiny-fuse <mountpoint>');
  process.exit(2);
}

const nodes = new Map<string, Node>();
const handles = new Map<number, string>();
let nextFh = 10;
const nowNs = (): bigint => BigInt(Date.now()) * 1_000_000n;
nodes.set('/', {
  mode: S_IFDIR | 0o777,
  uid: 0,
  gid: 0,
  atime: nowNs(),
  mtime: nowNs(),
  ctime: nowNs(),
  data: Buffer.alloc(0),
});

function log(op: string, p: string | null, ctx: Fuse.Context, extra: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ op, path: p, uid: ctx.uid, gid: ctx.gid, pid: ctx.pid, ...extra }) + '\n');
}
function stat(n: Node): Fuse.Stat {
  return {
    mode: n.mode,
    uid: n.uid,
    gid: n.gid,
    size: n.data.length,
    nlink: 1,
    atime: n.atime,
    mtime: n.mtime,
    ctime: n.ctime,
  };
}
function make(p: string, mode: number, ctx: Fuse.Context): void {
  nodes.set(p, {
    mode,
    uid: ctx.uid,
    gid: ctx.gid,
    atime: nowNs(),
    mtime: nowNs(),
    ctime: nowNs(),
    data: Buffer.alloc(0),
  });
}

const ops: Fuse.Ops = {
  getattr(p, cb) {
    const n = nodes.get(p);
    if (n === undefined) return cb(Fuse.ENOENT);
    cb(0, stat(n));
  },
  fgetattr(p, fd, cb, ctx) {
    const hp = handles.get(fd);
    log('fgetattr', p, ctx, { fd, known: hp !== undefined });
    const n = hp === undefined ? undefined : nodes.get(hp);
    if (n === undefined) return cb(Fuse.EBADF);
    cb(0, stat(n));
  },
  readdir(p, cb) {
    const prefix = p === '/' ? '/' : p + '/';
    const names = [...nodes.keys()].filter(
      (k) => k !== p && k.startsWith(prefix) && !k.slice(prefix.length).includes('/'),
    );
    cb(
      0,
      names.map((k) => k.slice(prefix.length)),
    );
  },
  opendir(p, flags, cb, ctx) {
    log('opendir', p, ctx, { flags });
    cb(0, 0);
  },
  create(p, mode, cb, ctx) {
    log('create', p, ctx);
    make(p, mode, ctx);
    const fh = nextFh++;
    handles.set(fh, p);
    cb(0, fh);
  },
  mknod(p, mode, dev, cb, ctx) {
    log('mknod', p, ctx);
    make(p, mode, ctx);
    cb(0);
  },
  mkdir(p, mode, cb, ctx) {
    log('mkdir', p, ctx);
    make(p, S_IFDIR | mode, ctx);
    cb(0);
  },
  open(p, flags, cb) {
    if (!nodes.has(p)) return cb(Fuse.ENOENT);
    const fh = nextFh++;
    handles.set(fh, p);
    cb(0, fh);
  },
  release(p, fd, cb) {
    handles.delete(fd);
    cb(0);
  },
  read(p, fd, buf, len, pos, cb) {
    const n = nodes.get(handles.get(fd) ?? '');
    if (n === undefined) return cb(Fuse.EBADF);
    cb(n.data.copy(buf, 0, pos, Math.min(n.data.length, pos + len)));
  },
  write(p, fd, buf, len, pos, cb) {
    const n = nodes.get(handles.get(fd) ?? '');
    if (n === undefined) return cb(Fuse.EBADF);
    const end = Math.max(n.data.length, pos + len);
    const next = Buffer.alloc(end);
    n.data.copy(next);
    buf.copy(next, pos, 0, len);
    n.data = next;
    n.mtime = nowNs();
    cb(len);
  },
  truncate(p, size, cb) {
    const n = nodes.get(p);
    if (n === undefined) return cb(Fuse.ENOENT);
    n.data = Buffer.concat([n.data, Buffer.alloc(size)]).subarray(0, size);
    cb(0);
  },
  utimens(p, atime, mtime, cb, ctx) {
    log('utimens', p, ctx, { atime: String(atime), mtime: String(mtime) });
    const n = nodes.get(p);
    if (n === undefined) return cb(Fuse.ENOENT);
    if (atime === Fuse.UTIME_NOW) n.atime = nowNs();
    else if (atime !== Fuse.UTIME_OMIT) n.atime = atime as bigint;
    if (mtime === Fuse.UTIME_NOW) n.mtime = nowNs();
    else if (mtime !== Fuse.UTIME_OMIT) n.mtime = mtime as bigint;
    n.ctime = nowNs();
    cb(0);
  },
  chown(p, uid, gid, cb) {
    const n = nodes.get(p);
    if (n === undefined) return cb(Fuse.ENOENT);
    if (uid !== 0xffffffff) n.uid = uid;
    if (gid !== 0xffffffff) n.gid = gid;
    cb(0);
  },
  chmod(p, mode, cb) {
    const n = nodes.get(p);
    if (n === undefined) return cb(Fuse.ENOENT);
    n.mode = (n.mode & ~0o7777) | (mode & 0o7777);
    cb(0);
  },
  unlink(p, cb) {
    if (!nodes.delete(p)) return cb(Fuse.ENOENT);
    cb(0);
  },
};

const fuse = new Fuse(mnt, ops, {
  allowOther: true,
  defaultPermissions: true,
  autoUnmount: true,
  fsname: 'tinyfuse',
  bigWrites: true,
});
fuse.mount((err) => {
  if (err !== null) {
    console.error('mount failed:', err.message);
    process.exit(1);
  }
  process.stdout.write(`tiny-fuse mounted ${mnt}\n`);
});
const stop = (): void => fuse.unmount(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
