// The op table the fuse-native transport calls: paths in (path-ops.ts resolves them), fuse-native's
// callbacks out. Every op runs inside `guard` (guard.ts), which answers exactly once.
import type Fuse from 'fuse-native';
import type { FsCore } from '../core';
import type { XattrReply } from '../ops-xattr';
import * as ops from './path-ops';
import { Log, guard, isPromise, opLog } from './guard';
import { staleIfGone } from './gone-stale';

/** What each op does; tests substitute implementations that fail. */
export const IMPL = {
  init: (): void => undefined,
  getattr: ops.getattr,
  fgetattr: ops.fgetattr,
  statfs: ops.statfs,
  chmod: ops.chmod,
  chown: ops.chown,
  utimens: ops.utimens,
  truncate: ops.truncate,
  ftruncate: ops.ftruncate,
  readdir: ops.readdir,
  mkdir: ops.mkdir,
  rmdir: ops.rmdir,
  mknod: ops.mknod,
  unlink: ops.unlink,
  rename: ops.rename,
  link: ops.link,
  symlink: ops.symlink,
  readlink: ops.readlink,
  create: ops.create,
  open: ops.open,
  read: ops.read,
  write: ops.write,
  flush: ops.flush,
  fsync: ops.fsync,
  release: ops.release,
  fsyncdir: ops.fsyncdir,
  getxattr: ops.getxattr,
  setxattr: ops.setxattr,
  listxattr: ops.listxattr,
  removexattr: ops.removexattr,
};
export type Impl = typeof IMPL;

type NumberCb = (n: number) => void;
/**
 * getxattr/listxattr get the caller's buffer (its length is the size asked for) and answer, in one
 * number, the bytes copied into it, the bytes needed (size 0) or a negative errno. fuse-native's
 * stock handlers drop the size; fuse-native.ts adapts them.
 */
export interface SizedXattrOps {
  getxattr(path: string, name: string, buf: Buffer, cb: NumberCb, ctx?: Fuse.Context): void;
  listxattr(path: string, buf: Buffer, cb: NumberCb, ctx?: Fuse.Context): void;
}
export type ChunkfsOps = Omit<Fuse.Ops, 'getxattr' | 'listxattr'> & SizedXattrOps;

const INT32_MAX = 2 ** 31 - 1;

/** The binding converts a count with napi_get_value_int32: anything else would throw there, unanswered. */
function int32(n: number): number {
  if (!Number.isInteger(n) || Math.abs(n) > INT32_MAX) throw new TypeError(`not a byte count: ${String(n)}`);
  return n;
}

/** A sized xattr reply into the caller's buffer (the core already refused what does not fit). */
function into(reply: XattrReply | Promise<XattrReply>, buf: Buffer): number | Promise<number> {
  if (isPromise(reply)) return reply.then((r) => into(r, buf));
  if (typeof reply === 'number') return reply;
  reply.copy(buf);
  return reply.length;
}

export function makeOps(core: FsCore, sink: Log, impl: Impl = IMPL): ChunkfsOps {
  const log = opLog(sink, core.opts?.debug === true);
  /** Ops answering (errno, value?). */
  function call<T>(
    name: string,
    path: string | null,
    cb: (err: number, value?: T) => void,
    fn: () => T | Promise<T>,
  ): void {
    guard(
      log,
      name,
      path,
      fn,
      (v) => cb(0, v),
      (errno) => cb(errno),
    );
  }
  /** Ops answering a byte count or a negative errno in one number (read, write, sized xattrs). */
  function callN(name: string, path: string | null, cb: NumberCb, fn: () => number | Promise<number>): void {
    guard(log, name, path, fn, (n) => cb(int32(n)), cb);
  }

  return {
    init: (cb) => call('init', null, cb, () => impl.init()),
    getattr: (p, cb) => call('getattr', p, cb, () => impl.getattr(core, p)),
    fgetattr: (p, fh, cb) =>
      call(
        'fgetattr',
        p,
        (err, v) => (err === 0 ? cb(0, v) : cb(-staleIfGone(core, -err))),
        () => impl.fgetattr(core, p, fh),
      ),
    statfs: (p, cb) => call('statfs', p, cb, () => impl.statfs(core)),
    chmod: (p, mode, cb, ctx) => call('chmod', p, cb, () => impl.chmod(core, p, mode, ctx)),
    chown: (p, uid, gid, cb) => call('chown', p, cb, () => impl.chown(core, p, uid, gid)),
    utimens: (p, at, mt, cb) => call('utimens', p, cb, () => impl.utimens(core, p, at, mt)),
    truncate: (p, size, cb, ctx) => call('truncate', p, cb, () => impl.truncate(core, p, size, ctx)),
    ftruncate: (p, fh, size, cb, ctx) => call('ftruncate', p, cb, () => impl.ftruncate(core, p, fh, size, ctx)),

    readdir: (p, cb) =>
      guard(
        log,
        'readdir',
        p,
        () => impl.readdir(core, p),
        (v) => cb(0, v.names, v.stats),
        (errno) => cb(errno),
      ),
    mkdir: (p, mode, cb, ctx) => call('mkdir', p, cb, () => impl.mkdir(core, p, mode, ctx)),
    rmdir: (p, cb) => call('rmdir', p, cb, () => impl.rmdir(core, p)),
    mknod: (p, mode, dev, cb, ctx) => call('mknod', p, cb, () => impl.mknod(core, p, mode, dev, ctx)),
    unlink: (p, cb) => call('unlink', p, cb, () => impl.unlink(core, p)),
    rename: (src, dest, cb) => call('rename', src, cb, () => impl.rename(core, src, dest)),
    link: (src, dest, cb) => call('link', src, cb, () => impl.link(core, src, dest)),
    symlink: (target, p, cb, ctx) => call('symlink', p, cb, () => impl.symlink(core, target, p, ctx)),
    readlink: (p, cb) => call('readlink', p, cb, () => impl.readlink(core, p)),

    create: (p, mode, cb, ctx) => call('create', p, cb, () => impl.create(core, p, mode, ctx)),
    open: (p, flags, cb) => call('open', p, cb, () => impl.open(core, p, flags)),
    // By handle: an inode a follower's writer removed is ESTALE (fs/fuse/gone-stale.ts).
    read: (p, fh, buf, len, pos, cb) =>
      callN(
        'read',
        p,
        (n) => cb(n < 0 ? -staleIfGone(core, -n) : n),
        () => impl.read(core, fh, buf, len, pos),
      ),
    write: (p, fh, buf, len, pos, cb) => callN('write', p, cb, () => impl.write(core, fh, buf, len, pos)),
    flush: (p, fh, cb) => call('flush', p, cb, () => impl.flush(core, fh)),
    fsync: (p, datasync, fh, cb) => call('fsync', p, cb, () => impl.fsync(core, fh)),
    fsyncdir: (p, datasync, fh, cb) => call('fsyncdir', p, cb, () => impl.fsyncdir(core)),
    release: (p, fh, cb) => call('release', p, cb, () => impl.release(core, fh)),

    getxattr: (p, name, buf, cb) => callN('getxattr', p, cb, () => into(impl.getxattr(core, p, name, buf.length), buf)),
    setxattr: (p, name, value, pos, flags, cb) =>
      call('setxattr', p, cb, () => impl.setxattr(core, p, name, value, flags)),
    listxattr: (p, buf, cb) => callN('listxattr', p, cb, () => into(impl.listxattr(core, p, buf.length), buf)),
    removexattr: (p, name, cb) => call('removexattr', p, cb, () => impl.removexattr(core, p, name)),
  };
}
