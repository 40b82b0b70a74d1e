// Types for fuse-native 2.2.6 as patched by patches/fuse-native+2.2.6.patch (applied at npm install by
// scripts/patch-fuse-native.js). The patch appends the caller's context to every op, after the callback,
// gives utimens both times in nanoseconds (or UTIME_NOW / UTIME_OMIT), passes the fh to fgetattr, and lets
// stat times carry nanoseconds as bigint.
declare module 'fuse-native' {
  namespace Fuse {
    /** The calling process, from fuse_get_context(). */
    interface Context {
      uid: number;
      gid: number;
      pid: number;
      umask: number;
    }
    type Cb = (err: number) => void;
    type CbWith<T> = (err: number, value?: T) => void;
    /** bigint = nanoseconds since the epoch; also a Date or a number of milliseconds. */
    type Time = bigint | Date | number;
    type UtimeArg = bigint | 'now' | 'omit';
    interface Stat {
      mode: number;
      uid: number;
      gid: number;
      size: number;
      dev?: number;
      nlink: number;
      ino?: number;
      rdev?: number;
      blksize?: number;
      blocks?: number;
      atime: Time;
      mtime: Time;
      ctime: Time;
    }
    interface Statfs {
      bsize: number;
      frsize: number;
      blocks: number;
      bfree: number;
      bavail: number;
      files: number;
      ffree: number;
      favail: number;
      fsid: number;
      flag: number;
      namemax: number;
    }
    /** path is null for an open file that was unlinked (hard_remove). */
    interface Ops {
      init?(cb: Cb): void;
      statfs?(path: string, cb: CbWith<Statfs>, ctx: Context): void;
      getattr?(path: string, cb: CbWith<Stat>, ctx: Context): void;
      fgetattr?(path: string | null, fd: number, cb: CbWith<Stat>, ctx: Context): void;
      access?(path: string, mode: number, cb: Cb, ctx: Context): void;
      open?(path: string, flags: number, cb: CbWith<number>, ctx: Context): void;
      opendir?(path: string, flags: number, cb: CbWith<number>, ctx: Context): void;
      create?(path: string, mode: number, cb: CbWith<number>, ctx: Context): void;
      utimens?(path: string, atime: UtimeArg, mtime: UtimeArg, cb: Cb, ctx: Context): void;
      release?(path: string | null, fd: number, cb: Cb, ctx: Context): void;
      releasedir?(path: string | null, fd: number, cb: Cb, ctx: Context): void;
      read?(
        path: string | null,
        fd: number,
        buf: Buffer,
        len: number,
        pos: number,
        cb: (n: number) => void,
        ctx: Context,
      ): void;
      write?(
        path: string | null,
        fd: number,
        buf: Buffer,
        len: number,
        pos: number,
        cb: (n: number) => void,
        ctx: Context,
      ): void;
      readdir?(path: string, cb: (err: number, names?: string[], stats?: Stat[]) => void, ctx: Context): void;
      setxattr?(path: string, name: string, value: Buffer, position: number, flags: number, cb: Cb, ctx: Context): void;
      getxattr?(
        path: string,
        name: string,
        position: number,
        cb: (err: number, value?: Buffer | null) => void,
        ctx: Context,
      ): void;
      listxattr?(path: string, cb: CbWith<string[]>, ctx: Context): void;
      removexattr?(path: string, name: string, cb: Cb, ctx: Context): void;
      flush?(path: string | null, fd: number, cb: Cb, ctx: Context): void;
      fsync?(path: string | null, datasync: number, fd: number, cb: Cb, ctx: Context): void;
      fsyncdir?(path: string | null, datasync: number, fd: number, cb: Cb, ctx: Context): void;
      truncate?(path: string, size: number, cb: Cb, ctx: Context): void;
      ftruncate?(path: string | null, fd: number, size: number, cb: Cb, ctx: Context): void;
      readlink?(path: string, cb: CbWith<string>, ctx: Context): void;
      chown?(path: string, uid: number, gid: number, cb: Cb, ctx: Context): void;
      chmod?(path: string, mode: number, cb: Cb, ctx: Context): void;
      mknod?(path: string, mode: number, dev: number, cb: Cb, ctx: Context): void;
      unlink?(path: string, cb: Cb, ctx: Context): void;
      rename?(src: string, dest: string, cb: Cb, ctx: Context): void;
      link?(src: string, dest: string, cb: Cb, ctx: Context): void;
      symlink?(target: string, path: string, cb: Cb, ctx: Context): void;
      mkdir?(path: string, mode: number, cb: Cb, ctx: Context): void;
      rmdir?(path: string, cb: Cb, ctx: Context): void;
    }
    interface Options {
      displayFolder?: boolean;
      debug?: boolean;
      force?: boolean;
      mkdir?: boolean;
      allowOther?: boolean;
      allowRoot?: boolean;
      autoUnmount?: boolean;
      defaultPermissions?: boolean;
      maxRead?: number;
      fsname?: string;
      subtype?: string;
      kernelCache?: boolean;
      autoCache?: boolean;
      umask?: number;
      uid?: number;
      gid?: number;
      entryTimeout?: number | string;
      attrTimeout?: number | string;
      acAttrTimeout?: number;
      noforget?: boolean;
      /** added by the chunkfs patch */
      bigWrites?: boolean;
      maxWrite?: number;
      useIno?: boolean;
      hardRemove?: boolean;
      timeout?: number | false | Record<string, number | false>;
    }
  }
  class Fuse {
    constructor(mnt: string, ops: Fuse.Ops, opts?: Fuse.Options);
    mount(cb: (err: Error | null) => void): void;
    unmount(cb: (err: Error | null) => void): void;
    /** The '-o...' argument handed to libfuse ('' for none); a subclass may add options. */
    _fuseOptions(): string;
    static unmount(mnt: string, cb: (err: Error | null) => void): void;
    static readonly UTIME_NOW: 'now';
    static readonly UTIME_OMIT: 'omit';
    static readonly CHUNKFS_PATCH_VERSION: number;
    static readonly [errno: string]: unknown;
    static readonly EPERM: number;
    static readonly ENOENT: number;
    static readonly EIO: number;
    static readonly EBADF: number;
    static readonly EACCES: number;
    static readonly EEXIST: number;
    static readonly ENOTDIR: number;
    static readonly EISDIR: number;
    static readonly EINVAL: number;
    static readonly ENOSPC: number;
    static readonly ENOTEMPTY: number;
    static readonly ENODATA: number;
    static readonly ERANGE: number;
    static readonly ENOSYS: number;
    static readonly EXDEV: number;
    static readonly EROFS: number;
    static readonly ENAMETOOLONG: number;
    static readonly EMLINK: number;
    static readonly EOPNOTSUPP: number;
    static readonly EFBIG: number;
    static readonly ELOOP: number;
  }
  export = Fuse;
}
