// Attribute ops: getattr/fgetattr, chmod, chown, utimens (atime and mtime each, UTIME_NOW/UTIME_OMIT),
// truncate/ftruncate, statfs (usable capacity = raw / default layout overhead, from the store).
import type Fuse from 'fuse-native';
import type { FsCore } from './core';
import { nowNs } from '../store/meta';
import { posix } from './errno';

const STATFS_BLOCK_BYTES = 4096;
const STATFS_BLOCKS_MAX = 2 ** 32;
const FRSIZE_DOUBLINGS_MAX = 32;
const NAME_BYTES_MAX = 255;
const UID_UNCHANGED = 0xffffffff; // chown(2) with -1

export function getattr(core: FsCore, path: string): Fuse.Stat {
  return core.stat(core.resolve(path));
}

export function fgetattr(core: FsCore, path: string | null, fh: number): Fuse.Stat {
  const h = core.handles.get(fh);
  return core.stat(core.ns.attr(h.ino));
}

export function chmod(core: FsCore, path: string, mode: number): void {
  const a = core.resolve(path);
  core.ns.setattr(a.ino, { mode: mode & 0o7777 });
}

export function chown(core: FsCore, path: string, uid: number, gid: number): void {
  const a = core.resolve(path);
  const v: { uid?: number; gid?: number; mode?: number } = {};
  if (uid !== UID_UNCHANGED) v.uid = uid;
  if (gid !== UID_UNCHANGED) v.gid = gid;
  // POSIX: changing the owner of a non-directory clears set-user-ID and set-group-ID.
  if (a.type === 'file' && (a.mode & 0o6000) !== 0) v.mode = a.mode & 0o1777;
  core.ns.setattr(a.ino, v);
}

function timeArg(t: Fuse.UtimeArg, now: bigint): bigint | undefined {
  if (t === 'omit') return undefined;
  if (t === 'now') return now;
  return t;
}

export async function utimens(core: FsCore, path: string, atime: Fuse.UtimeArg, mtime: Fuse.UtimeArg): Promise<void> {
  const a = core.resolve(path);
  // Buffered bytes stored later would bump mtime past the one set here (cp -a sets times before close).
  const f = core.handles.file(a.ino);
  if (f !== undefined) await core.wb.flush(f);
  const now = nowNs();
  const mtimeNs = timeArg(mtime, now);
  core.ns.setattr(a.ino, { atimeNs: timeArg(atime, now), mtimeNs });
  if (f !== undefined && mtimeNs !== undefined) f.mtimeNs = null;
}

async function truncateIno(core: FsCore, ino: number, sizeBytes: number): Promise<void> {
  if (sizeBytes < 0 || !Number.isSafeInteger(sizeBytes)) throw posix('EINVAL', `bad size ${sizeBytes}`);
  const a = core.ns.attr(ino);
  if (a.type === 'dir') throw posix('EISDIR', 'cannot truncate a directory');
  if (a.type !== 'file') throw posix('EINVAL', 'cannot truncate this file type');
  const f = core.handles.file(ino);
  if (f !== undefined) await core.wb.truncate(f, sizeBytes);
  else await core.store.truncate(ino, sizeBytes);
  const t = nowNs();
  core.ns.setattr(ino, { mtimeNs: t, ctimeNs: t });
  if (f !== undefined) f.mtimeNs = null;
}

export async function truncate(core: FsCore, path: string, sizeBytes: number): Promise<void> {
  await truncateIno(core, core.resolve(path).ino, sizeBytes);
}

export async function ftruncate(core: FsCore, path: string | null, fh: number, sizeBytes: number): Promise<void> {
  await truncateIno(core, core.handles.get(fh).ino, sizeBytes);
}

export async function statfs(core: FsCore): Promise<Fuse.Statfs> {
  const s = await core.store.statfs();
  // The binding carries block counts as 32-bit numbers: past 16 TiB of 4 KiB blocks they would
  // wrap, so the fragment size doubles until the total fits (df multiplies by it).
  let frsize = STATFS_BLOCK_BYTES;
  for (let i = 0; i < FRSIZE_DOUBLINGS_MAX && s.totalBytes / frsize >= STATFS_BLOCKS_MAX; i++) frsize *= 2;
  const blocks = (n: number): number => Math.min(STATFS_BLOCKS_MAX - 1, Math.max(0, Math.floor(n / frsize)));
  const files = 1 << 30;
  return {
    bsize: STATFS_BLOCK_BYTES, frsize, blocks: blocks(s.totalBytes), bfree: blocks(s.freeBytes),
    bavail: blocks(s.availBytes), files, ffree: files, favail: files, fsid: 0, flag: 0, namemax: NAME_BYTES_MAX,
  };
}
