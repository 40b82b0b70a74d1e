// The op table a transport calls. Every op runs inside `guard`, which answers exactly once: the op's
// result, or for a throw or rejection its errno (EIO for anything untyped, logged in one line naming
// the op and path). A transport callback that throws while delivering a result (a conversion bug in
// the binding) gets EIO instead, so no request is ever left waiting.
import type Fuse from 'fuse-native';
import { constants } from 'node:os';
import type { FsCore } from './core';
import { describeError, logKeyOf, toErrno } from './errno';
import { LogLimiter } from './log-limiter';
import * as attr from './ops-attr';
import * as names from './ops-names';
import * as file from './ops-file';
import * as xattr from './ops-xattr';

const EIO = -constants.errno.EIO;

/** What each op does; tests substitute implementations that fail. */
export const IMPL = {
  init: (): void => undefined,
  getattr: attr.getattr, fgetattr: attr.fgetattr, statfs: attr.statfs, chmod: attr.chmod, chown: attr.chown,
  utimens: attr.utimens, truncate: attr.truncate, ftruncate: attr.ftruncate,
  readdir: names.readdir, mkdir: names.mkdir, rmdir: names.rmdir, mknod: names.mknod, unlink: names.unlink,
  rename: names.rename, link: names.link, symlink: names.symlink, readlink: names.readlink,
  create: file.create, open: file.open, read: file.read, write: file.write, flush: file.flush,
  fsync: file.fsync, release: file.release,
  fsyncdir: file.fsyncdir,
  getxattr: xattr.getxattr, setxattr: xattr.setxattr, listxattr: xattr.listxattr, removexattr: xattr.removexattr,
};
export type Impl = typeof IMPL;

type NumberCb = (n: number) => void;
/**
 * getxattr/listxattr get the caller's buffer (its length is the size asked for) and answer, in one
 * number, the bytes copied into it, the bytes needed (size 0) or a negative errno. fuse-native's
 * stock handlers drop the size; mount.ts adapts them.
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

function isPromise<T>(r: T | Promise<T>): r is Promise<T> {
  return typeof (r as { then?: unknown } | null)?.then === 'function';
}

/** A sized xattr reply into the caller's buffer (xattr.* already refused what does not fit). */
function into(reply: xattr.XattrReply | Promise<xattr.XattrReply>, buf: Buffer): number | Promise<number> {
  if (isPromise(reply)) return reply.then((r) => into(r, buf));
  if (typeof reply === 'number') return reply;
  reply.copy(buf);
  return reply.length;
}

type Log = (message: string) => void;
/** A mount's log: the sink, its per-chunk rate limit, and whether lines carry whole stacks (-o debug). */
interface OpLog { line: Log; limiter: LogLimiter; debug: boolean }

/**
 * The reply errno for a failure, logged when untyped (one line naming the op and path, at most one
 * per chunk per minute, fs/log-limiter.ts); never throws, whatever was thrown.
 */
function errnoOf(log: OpLog, name: string, path: string | null, err: unknown): number {
  try {
    const { errno, log: worth } = toErrno(err);
    if (worth) {
      const line = log.limiter.line(logKeyOf(err), `${name} ${path ?? '-'}: ${describeError(err, log.debug)}`);
      if (line !== null) log.line(line);
    }
    return errno;
  } catch {
    return EIO;
  }
}

/**
 * Calls the transport back with a result; if that throws, answers EIO instead. (fuse-native's
 * callbacks convert the result before they signal, so a throw means nothing was answered yet.)
 */
function deliver(log: OpLog, name: string, path: string | null, send: () => void, fail: (errno: number) => void): void {
  try {
    send();
  } catch (err) {
    try { log.line(`${name} ${path ?? '-'}: reply failed: ${describeError(err, log.debug)}`); } catch { /* answer regardless */ }
    try { fail(EIO); } catch { /* the transport cannot answer at all; nothing is left to try */ }
  }
}

/** Runs one op and answers exactly once: ok(its result), or fail(errno) for a throw or rejection. */
function guard<T>(log: OpLog, name: string, path: string | null, fn: () => T | Promise<T>, ok: (v: T) => void, fail: (errno: number) => void): void {
  const failed = (err: unknown): void => { try { fail(errnoOf(log, name, path, err)); } catch { /* as in deliver */ } };
  let r: T | Promise<T>;
  try { r = fn(); } catch (err) { failed(err); return; }
  if (!isPromise(r)) { deliver(log, name, path, () => ok(r as T), fail); return; }
  r.then((v) => deliver(log, name, path, () => ok(v), fail), failed);
}

export function makeOps(core: FsCore, sink: Log, impl: Impl = IMPL): ChunkfsOps {
  const log: OpLog = { line: sink, limiter: new LogLimiter(), debug: core.opts?.debug === true };
  /** Ops answering (errno, value?). */
  function call<T>(name: string, path: string | null, cb: (err: number, value?: T) => void, fn: () => T | Promise<T>): void {
    guard(log, name, path, fn, (v) => cb(0, v), (errno) => cb(errno));
  }
  /** Ops answering a byte count or a negative errno in one number (read, write, sized xattrs). */
  function callN(name: string, path: string | null, cb: NumberCb, fn: () => number | Promise<number>): void {
    guard(log, name, path, fn, (n) => cb(int32(n)), cb);
  }

  return {
    init: (cb) => call('init', null, cb, () => impl.init()),
    getattr: (p, cb) => call('getattr', p, cb, () => impl.getattr(core, p)),
    fgetattr: (p, fh, cb) => call('fgetattr', p, cb, () => impl.fgetattr(core, p, fh)),
    statfs: (p, cb) => call('statfs', p, cb, () => impl.statfs(core)),
    chmod: (p, mode, cb) => call('chmod', p, cb, () => impl.chmod(core, p, mode)),
    chown: (p, uid, gid, cb) => call('chown', p, cb, () => impl.chown(core, p, uid, gid)),
    utimens: (p, at, mt, cb) => call('utimens', p, cb, () => impl.utimens(core, p, at, mt)),
    truncate: (p, size, cb) => call('truncate', p, cb, () => impl.truncate(core, p, size)),
    ftruncate: (p, fh, size, cb) => call('ftruncate', p, cb, () => impl.ftruncate(core, p, fh, size)),

    readdir: (p, cb) => call('readdir', p, cb, () => impl.readdir(core, p)),
    mkdir: (p, mode, cb, ctx) => call('mkdir', p, cb, () => impl.mkdir(core, p, mode, ctx)),
    rmdir: (p, cb) => call('rmdir', p, cb, () => impl.rmdir(core, p)),
    mknod: (p, mode, dev, cb, ctx) => call('mknod', p, cb, () => impl.mknod(core, p, mode, ctx)),
    unlink: (p, cb) => call('unlink', p, cb, () => impl.unlink(core, p)),
    rename: (src, dest, cb) => call('rename', src, cb, () => impl.rename(core, src, dest)),
    link: (src, dest, cb) => call('link', src, cb, () => impl.link(core, src, dest)),
    symlink: (target, p, cb, ctx) => call('symlink', p, cb, () => impl.symlink(core, target, p, ctx)),
    readlink: (p, cb) => call('readlink', p, cb, () => impl.readlink(core, p)),

    create: (p, mode, cb, ctx) => call('create', p, cb, () => impl.create(core, p, mode, ctx)),
    open: (p, flags, cb) => call('open', p, cb, () => impl.open(core, p, flags)),
    read: (p, fh, buf, len, pos, cb) => callN('read', p, cb, () => impl.read(core, fh, buf, len, pos)),
    write: (p, fh, buf, len, pos, cb) => callN('write', p, cb, () => impl.write(core, fh, buf, len, pos)),
    flush: (p, fh, cb) => call('flush', p, cb, () => impl.flush(core, fh)),
    fsync: (p, datasync, fh, cb) => call('fsync', p, cb, () => impl.fsync(core, fh)),
    fsyncdir: (p, datasync, fh, cb) => call('fsyncdir', p, cb, () => impl.fsyncdir(core)),
    release: (p, fh, cb) => call('release', p, cb, () => impl.release(core, fh)),

    getxattr: (p, name, buf, cb) => callN('getxattr', p, cb, () => into(impl.getxattr(core, p, name, buf.length), buf)),
    setxattr: (p, name, value, pos, flags, cb) => call('setxattr', p, cb, () => impl.setxattr(core, p, name, value, flags)),
    listxattr: (p, buf, cb) => callN('listxattr', p, cb, () => into(impl.listxattr(core, p, buf.length), buf)),
    removexattr: (p, name, cb) => call('removexattr', p, cb, () => impl.removexattr(core, p, name)),
  };
}
