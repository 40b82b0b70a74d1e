// Namespace ops by parent inode and name: lookup, directory listings (with . and ..), mkdir, rmdir,
// mknod, unlink, rename, link, symlink, readlink. New inodes belong to the caller; a directory with
// the set-group-ID bit passes its group (and, for directories, the bit) on, as on ext4. Every name
// is checked for length first, so a name over 255 bytes is ENAMETOOLONG wherever it appears.
import type { FsCore } from './core';
import type { Attr } from '../store/meta/attr';
import { specialTypeOf, typeBits } from '../store/meta/attr';
import type { Caller, DirEntry, Stat } from './types';
import { NAME_BYTES_MAX } from '../store/meta/names';
import { posix } from './errno';
import { applyInherited, inherit } from './acl';

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_ISGID = 0o2000;
/** libfuse 2 renames an open file that is unlinked to this prefix and unlinks it at the last release. */
export const HIDDEN_PREFIX = '.fuse_hidden';

/** ENAMETOOLONG before anything else looks at the name (a lookup would say ENOENT). */
export function checkLength(name: string): void {
  if (Buffer.byteLength(name, 'utf8') > NAME_BYTES_MAX)
    throw posix('ENAMETOOLONG', `name longer than ${NAME_BYTES_MAX} bytes`);
}

/** Owner of a new inode under parent: the caller, with the parent's group when it is set-group-ID. */
export function newOwner(parent: Attr, caller: Caller): { uid: number; gid: number; inheritSgid: boolean } {
  const sgid = (parent.mode & S_ISGID) !== 0;
  return { uid: caller.uid, gid: sgid ? parent.gid : caller.gid, inheritSgid: sgid };
}

/**
 * An entry by name. "." and ".." come only from the kernel decoding a file handle
 * (open_by_handle_at, NFS export; FUSE_CAP_EXPORT_SUPPORT): "." names the inode itself, whatever
 * its type, ".." a directory's parent; an inode that is gone answers ENOENT, which the kernel
 * turns into ESTALE. The kernel checks the generation against the handle's.
 */
export function lookup(core: FsCore, parent: number, name: string): Stat {
  const st = lookupOrMissing(core, parent, name);
  if (st === null) throw posix('ENOENT', `'${name}' not found in directory ${parent}`);
  return st;
}

/**
 * As lookup, but a name the directory does not hold is null, not ENOENT (a transport that can tell
 * the kernel to cache the miss answers it so: a negative entry). "." of an inode with no name left
 * still throws ENOENT: that is a stale handle, not a miss to cache.
 */
export function lookupOrMissing(core: FsCore, parent: number, name: string): Stat | null {
  checkLength(name);
  if (name === '.') {
    const a = core.ns.attr(parent);
    // No name left: only a descriptor still open holds it, and the kernel caches those itself.
    if (a.nlink === 0) throw posix('ENOENT', `inode ${parent} has no name left`);
    return core.stat(a);
  }
  if (name === '..') return core.stat(core.ns.attr(core.ns.parentOf(parent)));
  const a = core.ns.lookup(parent, name);
  return a === null ? null : core.stat(a);
}

/** A directory's listing: '.', '..', then its entries by name (libfuse 2's hidden names left out). */
export function listing(core: FsCore, ino: number): DirEntry[] {
  const dir = core.ns.attr(ino);
  if (dir.type !== 'dir') throw posix('ENOTDIR', `inode ${ino} is not a directory`);
  const out: DirEntry[] = [
    { name: '.', ino, mode: S_IFDIR, offset: 1 },
    { name: '..', ino: core.ns.parentOf(ino), mode: S_IFDIR, offset: 2 },
  ];
  for (const e of core.ns.readdir(ino)) {
    if (e.name.startsWith(HIDDEN_PREFIX)) continue;
    out.push({ name: e.name, ino: e.ino, mode: typeBits(e.type), offset: out.length + 1 });
  }
  return out;
}

export function mkdir(core: FsCore, parent: number, name: string, mode: number, caller: Caller): Stat {
  checkLength(name);
  const p = core.ns.attr(parent);
  const o = newOwner(p, caller);
  const h = inherit(core, parent, (mode & 0o7777) | (o.inheritSgid ? S_ISGID : 0), caller.umask, true);
  core.recentNames.changed(parent, name);
  const a = core.ns.mkdir(parent, name, h.mode, o.uid, o.gid);
  applyInherited(core, a.ino, h);
  return core.stat(a);
}

export function rmdir(core: FsCore, parent: number, name: string): void {
  checkLength(name);
  const a = core.ns.lookup(parent, name);
  core.recentNames.changed(parent, name);
  core.ns.rmdir(parent, name);
  if (a !== null) core.removedDir(a);
}

/** A regular file, FIFO, socket, or character or block device node (the kernel checks CAP_MKNOD). */
export function mknod(core: FsCore, parent: number, name: string, mode: number, rdev: number, caller: Caller): Stat {
  checkLength(name);
  const p = core.ns.attr(parent);
  const o = newOwner(p, caller);
  const type = specialTypeOf(mode);
  const regular = (mode & S_IFMT) === S_IFREG || (mode & S_IFMT) === 0;
  if (!regular && type === null) throw posix('EINVAL', `mknod cannot make mode ${mode.toString(8)}`);
  const h = inherit(core, parent, mode & 0o7777, caller.umask, false);
  core.recentNames.changed(parent, name);
  const a = regular
    ? core.ns.create(parent, name, h.mode, o.uid, o.gid)
    : core.ns.mknod(parent, name, type!, h.mode, rdev, o.uid, o.gid);
  applyInherited(core, a.ino, h);
  return core.stat(a);
}

export async function unlink(core: FsCore, parent: number, name: string): Promise<void> {
  checkLength(name);
  core.recentNames.changed(parent, name);
  const r = core.ns.unlink(parent, name);
  await core.dropped(r.ino, r.nlink);
}

/** renameat2(2) flags. */
export const RENAME_NOREPLACE = 1;
export const RENAME_EXCHANGE = 2;
/** overlayfs' whiteouts (an upper directory on chunkfs): the old name becomes a 0/0 character device. */
export const RENAME_WHITEOUT = 4;

export async function rename(
  core: FsCore,
  parent: number,
  name: string,
  newParent: number,
  newName: string,
  flags: number,
  caller?: Caller,
): Promise<void> {
  checkLength(name);
  checkLength(newName);
  core.recentNames.changed(parent, name);
  core.recentNames.changed(newParent, newName);
  if (flags === RENAME_EXCHANGE) {
    core.ns.exchange(parent, name, newParent, newName);
    return;
  }
  if ((flags & ~(RENAME_NOREPLACE | RENAME_WHITEOUT)) !== 0)
    throw posix('EINVAL', `rename flags ${flags} are not supported`);
  let dst = core.ns.lookup(newParent, newName);
  if ((flags & RENAME_NOREPLACE) === 0 && dst?.type === 'file') {
    await storeBeforeReplace(core, parent, name);
    dst = core.ns.lookup(newParent, newName); // the names may have changed while it stored
  }
  const whiteout = (flags & RENAME_WHITEOUT) === 0 ? undefined : whiteoutOwner(core, parent, caller);
  const replaced = core.ns.rename(parent, name, newParent, newName, {
    noReplace: (flags & RENAME_NOREPLACE) !== 0,
    whiteout,
  });
  if (replaced !== null && dst !== null && dst.type === 'dir') core.removedDir(dst);
  if (replaced !== null) await core.dropped(replaced.ino, replaced.nlink);
}

/**
 * A rename over an existing file stores the renamed file's buffered bytes first (ext4's
 * auto_da_alloc): write a new version, close, rename it over the old one is how editors, package
 * managers and build tools replace a file, not all of them fsync, and without this a crash right
 * after the rename left the name empty or short (DESIGN §5 allows a prefix; users expect the old
 * or the new file). Stored, not durable: the rename commits after the bytes' pointers, so a crash or
 * a power loss keeps that order.
 */
async function storeBeforeReplace(core: FsCore, parent: number, name: string): Promise<void> {
  const src = core.ns.lookup(parent, name);
  const file = src === null || src.type !== 'file' ? undefined : core.handles.file(src.ino);
  if (file !== undefined) await core.wb.storeBeforeReplace(file);
  // Stored chunks wait in the open transaction group: committed first, so the rename follows them.
  if (src !== null && src.type === 'file') await core.store.commitStored(src.ino);
}

/** A whiteout belongs to whoever renames, as any new inode (vfs_whiteout makes it with the caller's credentials). */
function whiteoutOwner(core: FsCore, parent: number, caller: Caller | undefined): { uid: number; gid: number } {
  if (caller === undefined) return { uid: 0, gid: 0 }; // fuse-native's rename carries no caller (libfuse 2 passes no flags either)
  const o = newOwner(core.ns.attr(parent), caller);
  return { uid: o.uid, gid: o.gid };
}

export function link(core: FsCore, ino: number, newParent: number, newName: string): Stat {
  checkLength(newName);
  core.recentNames.changed(newParent, newName);
  return core.stat(core.ns.link(ino, newParent, newName));
}

export function symlink(core: FsCore, parent: number, name: string, target: string, caller: Caller): Stat {
  checkLength(name);
  const p = core.ns.attr(parent);
  const o = newOwner(p, caller);
  core.recentNames.changed(parent, name);
  return core.stat(core.ns.symlink(parent, name, target, o.uid, o.gid));
}

export function readlink(core: FsCore, ino: number): string {
  const target = core.ns.readlink(ino);
  core.atime.accessed(ino); // as the kernel's readlink does (fs/atime.ts)
  return target;
}
