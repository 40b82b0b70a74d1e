// The fuse-native op table: every handler runs inside `call`, so a throw or rejection answers with
// its errno (EIO for anything untyped, which is also logged) and never takes the mount down.
import type Fuse from 'fuse-native';
import type { FsCore } from './core';
import { toErrno } from './errno';
import * as attr from './ops-attr';
import * as names from './ops-names';
import * as file from './ops-file';
import * as xattr from './ops-xattr';

type Cb<T> = (err: number, value?: T) => void;

export function makeOps(core: FsCore, log: (message: string) => void): Fuse.Ops {
  const fail = (name: string, path: string | null, err: unknown): number => {
    const { errno, log: worth } = toErrno(err);
    if (worth) log(`${name} ${path ?? ''}: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    return errno;
  };
  function call<T>(name: string, path: string | null, cb: Cb<T>, fn: () => T | Promise<T>): void {
    let p: Promise<T>;
    try { p = Promise.resolve(fn()); } catch (err) { p = Promise.reject(err); }
    p.then((v) => cb(0, v), (err) => cb(fail(name, path, err)));
  }
  /** read/write answer with a byte count or a negative errno in one argument; a number answers at once. */
  function callN(name: string, cb: (n: number) => void, fn: () => number | Promise<number>): void {
    let r: number | Promise<number>;
    try { r = fn(); } catch (err) { cb(fail(name, null, err)); return; }
    if (typeof r === 'number') { cb(r); return; }
    r.then((n) => cb(n), (err) => cb(fail(name, null, err)));
  }

  return {
    init: (cb) => cb(0),
    getattr: (p, cb) => call('getattr', p, cb, () => attr.getattr(core, p)),
    fgetattr: (p, fh, cb) => call('fgetattr', p, cb, () => attr.fgetattr(core, p, fh)),
    statfs: (p, cb) => call('statfs', p, cb, () => attr.statfs(core)),
    chmod: (p, mode, cb) => call('chmod', p, cb, () => attr.chmod(core, p, mode)),
    chown: (p, uid, gid, cb) => call('chown', p, cb, () => attr.chown(core, p, uid, gid)),
    utimens: (p, at, mt, cb) => call('utimens', p, cb, () => attr.utimens(core, p, at, mt)),
    truncate: (p, size, cb) => call('truncate', p, cb, () => attr.truncate(core, p, size)),
    ftruncate: (p, fh, size, cb) => call('ftruncate', p, cb, () => attr.ftruncate(core, p, fh, size)),

    readdir: (p, cb) => call('readdir', p, cb, () => names.readdir(core, p)),
    mkdir: (p, mode, cb, ctx) => call('mkdir', p, cb, () => names.mkdir(core, p, mode, ctx)),
    rmdir: (p, cb) => call('rmdir', p, cb, () => names.rmdir(core, p)),
    mknod: (p, mode, dev, cb, ctx) => call('mknod', p, cb, () => names.mknod(core, p, mode, ctx)),
    unlink: (p, cb) => call('unlink', p, cb, () => names.unlink(core, p)),
    rename: (src, dest, cb) => call('rename', src, cb, () => names.rename(core, src, dest)),
    link: (src, dest, cb) => call('link', src, cb, () => names.link(core, src, dest)),
    symlink: (target, p, cb, ctx) => call('symlink', p, cb, () => names.symlink(core, target, p, ctx)),
    readlink: (p, cb) => call('readlink', p, cb, () => names.readlink(core, p)),

    create: (p, mode, cb, ctx) => call('create', p, cb, () => file.create(core, p, mode, ctx)),
    open: (p, flags, cb) => call('open', p, cb, () => file.open(core, p, flags)),
    read: (p, fh, buf, len, pos, cb) => callN('read', cb, () => file.read(core, fh, buf, len, pos)),
    write: (p, fh, buf, len, pos, cb) => callN('write', cb, () => file.write(core, fh, buf, len, pos)),
    flush: (p, fh, cb) => call('flush', p, cb, () => file.flush(core, fh)),
    fsync: (p, datasync, fh, cb) => call('fsync', p, cb, () => file.fsync(core, fh)),
    fsyncdir: (p, datasync, fh, cb) => cb(0), // namespace changes are committed durably as they happen
    release: (p, fh, cb) => call('release', p, cb, () => file.release(core, fh)),

    getxattr: (p, name, pos, cb) => call('getxattr', p, cb, () => xattr.getxattr(core, p, name)),
    setxattr: (p, name, value, pos, flags, cb) => call('setxattr', p, cb, () => xattr.setxattr(core, p, name, value, flags)),
    listxattr: (p, cb) => call('listxattr', p, cb, () => xattr.listxattr(core, p)),
    removexattr: (p, name, cb) => call('removexattr', p, cb, () => xattr.removexattr(core, p, name)),
  };
}
