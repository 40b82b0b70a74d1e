// Attribute ops by inode: getattr, setattr (mode, owner, size, atime/mtime each with UTIME_NOW,
// ctime), statfs (usable capacity = raw / default layout overhead, from the store).
import type { FsCore } from './core';
import type { AttrChanges, FsCounts, Stat, TimeArg } from './types';
import { nowNs } from '../store/meta';
import { NAME_BYTES_MAX } from '../store/names';
import { posix } from './errno';
import { chmodAcl } from './acl';

const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
const S_IXGRP = 0o0010;
// Inodes are SQLite rows (64-bit ids): the store has no fixed inode table to report.
const FILES_REPORTED = 2 ** 30;

export function getattr(core: FsCore, ino: number): Stat {
  return core.stat(core.ns.attr(ino));
}

function timeOf(t: TimeArg | undefined, now: bigint): bigint | undefined {
  return t === 'now' ? now : t;
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

/**
 * The mode a non-directory keeps when its owner or group changes (chown(2), Linux): set-user-ID
 * goes; set-group-ID goes only with group-execute, since without it the bit marks mandatory
 * locking and stays. The kernel already sends this mode when a bit has to go (FUSE setattr with
 * ATTR_MODE); applied here too for a chown that comes without one.
 */
export function modeAfterChown(mode: number): number {
  let m = mode & ~S_ISUID;
  if ((m & (S_ISGID | S_IXGRP)) === (S_ISGID | S_IXGRP)) m &= ~S_ISGID;
  return m & 0o7777;
}

/**
 * Applies the changes in the order the kernel expects them to appear: size, then owner and mode
 * (modeAfterChown), then times.
 */
export async function setattr(core: FsCore, ino: number, c: AttrChanges): Promise<Stat> {
  if (c.sizeBytes !== undefined) await truncateIno(core, ino, c.sizeBytes);
  const a = core.ns.attr(ino);
  const v: { mode?: number; uid?: number; gid?: number; atimeNs?: bigint; mtimeNs?: bigint; ctimeNs?: bigint } = {};
  if (c.uid !== undefined) v.uid = c.uid;
  if (c.gid !== undefined) v.gid = c.gid;
  if ((c.uid !== undefined || c.gid !== undefined) && a.type !== 'dir') v.mode = modeAfterChown(a.mode);
  if (c.mode !== undefined) v.mode = c.mode & 0o7777;
  if (c.atime !== undefined || c.mtime !== undefined) {
    const now = nowNs();
    if (c.atime !== undefined) core.atime.dropPending(ino);
    v.atimeNs = timeOf(c.atime, now);
    v.mtimeNs = timeOf(c.mtime, now);
    // Buffered bytes are stored later with this mtime, not the flush's "now" (tar and cp -a set
    // times before close): no flush here.
    const f = core.handles.file(ino);
    if (f !== undefined && v.mtimeNs !== undefined) await core.wb.setMtime(f, v.mtimeNs);
  }
  if (c.ctimeNs !== undefined) v.ctimeNs = c.ctimeNs;
  const after = Object.keys(v).length > 0 ? core.ns.setattr(ino, v) : core.ns.attr(ino);
  if (c.mode !== undefined) chmodAcl(core, ino, after.mode);
  return core.stat(after);
}

export async function statfs(core: FsCore): Promise<FsCounts> {
  const s = await core.store.statfs();
  return { ...s, files: FILES_REPORTED, filesFree: FILES_REPORTED, nameBytesMax: NAME_BYTES_MAX };
}
