// Namespace ops: readdir (with . and ..), mkdir, rmdir, mknod, unlink, rename, link, symlink, readlink.
// New inodes belong to the calling process (fuse_get_context via the patched binding); a directory
// with the set-group-ID bit passes its group (and, for directories, the bit) on, as on ext4.
import type Fuse from 'fuse-native';
import type { FsCore } from './core';
import type { Attr } from '../store/namespace';
import { posix } from './errno';

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_ISGID = 0o2000;
/** libfuse renames an open file that is unlinked to this prefix and unlinks it at the last release. */
export const HIDDEN_PREFIX = '.fuse_hidden';

/** Owner of a new inode under parent: the caller, with the parent's group when it is set-group-ID. */
export function newOwner(parent: Attr, ctx: Fuse.Context): { uid: number; gid: number; inheritSgid: boolean } {
  const sgid = (parent.mode & S_ISGID) !== 0;
  return { uid: ctx.uid, gid: sgid ? parent.gid : ctx.gid, inheritSgid: sgid };
}

export function readdir(core: FsCore, path: string): string[] {
  const a = core.resolve(path);
  if (a.type !== 'dir') throw posix('ENOTDIR', `${path} is not a directory`);
  return ['.', '..', ...core.ns.readdir(a.ino).map((e) => e.name).filter((n) => !n.startsWith(HIDDEN_PREFIX))];
}

export function mkdir(core: FsCore, path: string, mode: number, ctx: Fuse.Context): void {
  const { parent, name } = core.resolveParent(path);
  const o = newOwner(parent, ctx);
  core.ns.mkdir(parent.ino, name, (mode & 0o7777) | (o.inheritSgid ? S_ISGID : 0), o.uid, o.gid);
}

export function rmdir(core: FsCore, path: string): void {
  const { parent, name } = core.resolveParent(path);
  core.ns.rmdir(parent.ino, name);
}

export function mknod(core: FsCore, path: string, mode: number, ctx: Fuse.Context): void {
  if ((mode & S_IFMT) !== S_IFREG && (mode & S_IFMT) !== 0) throw posix('EPERM', 'only regular files can be created with mknod');
  const { parent, name } = core.resolveParent(path);
  const o = newOwner(parent, ctx);
  core.ns.create(parent.ino, name, mode & 0o7777, o.uid, o.gid);
}

export async function unlink(core: FsCore, path: string): Promise<void> {
  const { parent, name } = core.resolveParent(path);
  const r = core.ns.unlink(parent.ino, name);
  await core.dropped(r.ino, r.nlink);
}

export async function rename(core: FsCore, src: string, dest: string): Promise<void> {
  const from = core.resolveParent(src);
  const to = core.resolveParent(dest);
  const replaced = core.ns.rename(from.parent.ino, from.name, to.parent.ino, to.name);
  if (replaced !== null) await core.dropped(replaced.ino, replaced.nlink);
}

export function link(core: FsCore, src: string, dest: string): void {
  const a = core.resolve(src);
  const to = core.resolveParent(dest);
  core.ns.link(a.ino, to.parent.ino, to.name);
}

export function symlink(core: FsCore, target: string, path: string, ctx: Fuse.Context): void {
  const { parent, name } = core.resolveParent(path);
  const o = newOwner(parent, ctx);
  core.ns.symlink(parent.ino, name, target, o.uid, o.gid);
}

export function readlink(core: FsCore, path: string): string {
  return core.ns.readlink(core.resolve(path).ino);
}
