// The path-based op implementations of the fuse-native transport: each resolves its paths to
// inodes (paths.ts) and calls the inode-based core, then converts to fuse-native's shapes (Stat
// with ns times, statfs with 32-bit block counts, utimens arguments).
import type Fuse from 'fuse-native';
import type { FsCore } from '../core';
import type { Caller, FsCounts, Stat, TimeArg } from '../types';
import { resolve, resolveParent } from './paths';
import * as attr from '../ops-attr';
import * as names from '../ops-names';
import * as file from '../ops-file';
import * as xattr from '../ops-xattr';
import { posix } from '../errno';

const O_RDWR = 2;
const UID_UNCHANGED = 0xffffffff; // chown(2) with -1
const STATFS_BLOCK_BYTES = 4096;
const STATFS_BLOCKS_MAX = 2 ** 32;
const FRSIZE_DOUBLINGS_MAX = 32;

/**
 * fuse-native's binding carries stat times as unsigned milliseconds since 1970: a time
 * before 1970 (which the libfuse3 transport stores and shows) is shown as 1970-01-01 here, and
 * setting one is refused (utimens, EINVAL) rather than read back wrapped to a year past 500 million.
 */
function unsignedTime(t: bigint): bigint {
  return t < 0n ? 0n : t;
}

export function toFuseStat(s: Stat): Fuse.Stat {
  return {
    mode: s.mode,
    uid: s.uid,
    gid: s.gid,
    size: s.sizeBytes,
    nlink: s.nlink,
    ino: s.ino,
    dev: 0,
    rdev: s.rdev,
    blksize: s.blksizeBytes,
    blocks: s.blocks,
    atime: unsignedTime(s.atimeNs),
    mtime: unsignedTime(s.mtimeNs),
    ctime: unsignedTime(s.ctimeNs),
  };
}

/**
 * The binding carries block counts as 32-bit numbers: past 16 TiB of 4 KiB blocks they would wrap,
 * so the fragment size doubles until the total fits (df multiplies by it).
 */
export function toFuseStatfs(s: FsCounts): Fuse.Statfs {
  let frsize = STATFS_BLOCK_BYTES;
  for (let i = 0; i < FRSIZE_DOUBLINGS_MAX && s.totalBytes / frsize >= STATFS_BLOCKS_MAX; i++) frsize *= 2;
  const blocks = (n: number): number => Math.min(STATFS_BLOCKS_MAX - 1, Math.max(0, Math.floor(n / frsize)));
  return {
    bsize: STATFS_BLOCK_BYTES,
    frsize,
    blocks: blocks(s.totalBytes),
    bfree: blocks(s.freeBytes),
    bavail: blocks(s.availBytes),
    files: s.files,
    ffree: s.filesFree,
    favail: s.filesFree,
    fsid: 0,
    flag: 0,
    namemax: s.nameBytesMax,
  };
}

function timeArg(t: Fuse.UtimeArg): TimeArg | undefined {
  if (typeof t === 'bigint' && t < 0n)
    throw posix('EINVAL', 'times before 1970 are not supported by the fuse-native transport (use the default, fuse3)');
  return t === 'omit' ? undefined : t;
}

const ino = (core: FsCore, path: string): number => resolve(core, path).ino;

export const getattr = (core: FsCore, p: string): Fuse.Stat => toFuseStat(attr.getattr(core, ino(core, p)));
export const fgetattr = (core: FsCore, p: string | null, fh: number): Fuse.Stat =>
  toFuseStat(attr.getattr(core, core.handles.get(fh).ino));
export const statfs = async (core: FsCore): Promise<Fuse.Statfs> => toFuseStatfs(await attr.statfs(core));
export async function chmod(core: FsCore, p: string, mode: number, ctx?: Caller): Promise<void> {
  await attr.setattr(core, ino(core, p), { mode }, ctx);
}
export async function chown(core: FsCore, p: string, uid: number, gid: number): Promise<void> {
  await attr.setattr(core, ino(core, p), {
    uid: uid === UID_UNCHANGED ? undefined : uid,
    gid: gid === UID_UNCHANGED ? undefined : gid,
  });
}
export async function utimens(core: FsCore, p: string, atime: Fuse.UtimeArg, mtime: Fuse.UtimeArg): Promise<void> {
  await attr.setattr(core, ino(core, p), { atime: timeArg(atime), mtime: timeArg(mtime) });
}
export async function truncate(core: FsCore, p: string, sizeBytes: number, ctx?: Caller): Promise<void> {
  await attr.setattr(core, ino(core, p), { sizeBytes }, ctx);
}
export async function ftruncate(
  core: FsCore,
  p: string | null,
  fh: number,
  sizeBytes: number,
  ctx?: Caller,
): Promise<void> {
  await attr.setattr(core, core.handles.get(fh).ino, { sizeBytes }, ctx);
}

/**
 * Names with their attributes: with use_ino, libfuse 2 takes each entry's d_ino from the stat
 * given here (without one every d_ino was 4294967295). An entry removed since the listing
 * was read gets the type and inode number from the listing.
 */
export function readdir(core: FsCore, p: string): { names: string[]; stats: Fuse.Stat[] } {
  const dirIno = ino(core, p);
  const entries = names.listing(core, dirIno);
  core.atime.accessed(dirIno);
  const stats = entries.map((e) => {
    const a = core.ns.getattr(e.ino);
    if (a !== null) return toFuseStat(core.stat(a));
    return {
      mode: e.mode,
      uid: 0,
      gid: 0,
      size: 0,
      nlink: 0,
      ino: e.ino,
      dev: 0,
      rdev: 0,
      blksize: 0,
      blocks: 0,
      atime: 0n,
      mtime: 0n,
      ctime: 0n,
    };
  });
  return { names: entries.map((e) => e.name), stats };
}
export function mkdir(core: FsCore, p: string, mode: number, ctx: Caller): void {
  const { parent, name } = resolveParent(core, p);
  names.mkdir(core, parent.ino, name, mode, ctx);
}
export function rmdir(core: FsCore, p: string): void {
  const { parent, name } = resolveParent(core, p);
  names.rmdir(core, parent.ino, name);
}
export function mknod(core: FsCore, p: string, mode: number, rdev: number, ctx: Caller): void {
  const { parent, name } = resolveParent(core, p);
  names.mknod(core, parent.ino, name, mode, rdev, ctx);
}
export async function unlink(core: FsCore, p: string): Promise<void> {
  const { parent, name } = resolveParent(core, p);
  await names.unlink(core, parent.ino, name);
}
export async function rename(core: FsCore, src: string, dest: string): Promise<void> {
  const from = resolveParent(core, src);
  const to = resolveParent(core, dest);
  await names.rename(core, from.parent.ino, from.name, to.parent.ino, to.name, 0);
}
export function link(core: FsCore, src: string, dest: string): void {
  const to = resolveParent(core, dest);
  names.link(core, ino(core, src), to.parent.ino, to.name);
}
export function symlink(core: FsCore, target: string, p: string, ctx: Caller): void {
  const { parent, name } = resolveParent(core, p);
  names.symlink(core, parent.ino, name, target, ctx);
}
export const readlink = (core: FsCore, p: string): string => names.readlink(core, ino(core, p));

export function create(core: FsCore, p: string, mode: number, ctx: Caller): number {
  const { parent, name } = resolveParent(core, p);
  // fuse-native does not pass create's flags; the kernel still checks the access mode per fd.
  return file.create(core, parent.ino, name, mode, O_RDWR, ctx).fh;
}
export const open = (core: FsCore, p: string, flags: number): Promise<number> => file.open(core, ino(core, p), flags);
export const read = file.read;
export const write = file.write;
export const flush = file.flush;
export const fsync = file.fsync;
export const fsyncdir = file.fsyncdir;
export const release = file.release;

export const getxattr = (core: FsCore, p: string, name: string, sizeBytes: number): xattr.XattrReply =>
  xattr.getxattr(core, ino(core, p), name, sizeBytes);
export const setxattr = (core: FsCore, p: string, name: string, value: Buffer, flags: number): void =>
  xattr.setxattr(core, ino(core, p), name, value, flags);
export const listxattr = (core: FsCore, p: string, sizeBytes: number): xattr.XattrReply =>
  xattr.listxattr(core, ino(core, p), sizeBytes);
export const removexattr = (core: FsCore, p: string, name: string): void => xattr.removexattr(core, ino(core, p), name);
