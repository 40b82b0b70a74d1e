// Attribute ops by inode: getattr, setattr (mode, owner, size, atime/mtime each with UTIME_NOW,
// ctime), statfs (usable capacity = raw / default layout overhead, from the store).
import type { FsCore } from './core';
import type { AttrChanges, Caller, FsCounts, Stat, TimeArg } from './types';
import { nowNs } from '../store/meta/meta';
import { NAME_BYTES_MAX } from '../store/meta/names';
import { posix } from './errno';
import { FILE_BYTES_MAX } from '../store/file-io';
import { chmodAcl } from './acl';
import { modeAfterChown, modeAfterWrite, modeSetBy, SET_ID_BITS } from './set-id';

// Inodes are SQLite rows (64-bit ids): the store has no fixed inode table to report.
const FILES_REPORTED = 2 ** 30;

export function getattr(core: FsCore, ino: number): Stat {
  const gone = core.goneDirs.get(ino);
  if (gone === undefined) return core.stat(core.ns.attr(ino));
  const a = core.ns.getattr(ino);
  return a === null ? gone : core.stat(a); // a new inode took the number: it answers
}

function timeOf(t: TimeArg | undefined, now: bigint): bigint | undefined {
  return t === 'now' ? now : t;
}

async function truncateIno(core: FsCore, ino: number, sizeBytes: number): Promise<void> {
  // Past the store's limit is EFBIG, as the kernel answers past s_maxbytes (xfstests generic/525);
  // sizes beyond 2^53 arrive rounded, so this test comes before the exact-integer one.
  if (sizeBytes > FILE_BYTES_MAX)
    throw posix('EFBIG', `truncate to ${sizeBytes} past the maximum file size ${FILE_BYTES_MAX}`);
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
 * Applies the changes in the order the kernel expects them to appear: size, then owner and mode
 * (modeAfterChown), then times. caller (when the transport knows it): set-id bits go as Linux
 * drops them (fs/set-id.ts): a truncate, or the empty setattr the kernel sends to drop them after a
 * write or fallocate, by a caller without CAP_FSETID; a mode set by a caller outside the group.
 */
export async function setattr(core: FsCore, ino: number, c: AttrChanges, caller?: Caller): Promise<Stat> {
  if (c.sizeBytes !== undefined) await truncateIno(core, ino, c.sizeBytes);
  const a = core.ns.attr(ino);
  const v: { mode?: number; uid?: number; gid?: number; atimeNs?: bigint; mtimeNs?: bigint; ctimeNs?: bigint } = {};
  const chown = c.uid !== undefined || c.gid !== undefined;
  if (c.uid !== undefined) v.uid = c.uid;
  if (c.gid !== undefined) v.gid = c.gid;
  if (chown && a.type !== 'dir') v.mode = modeAfterChown(a.mode);
  const { killSuidgid, ...changes } = c;
  const dropsSetId = c.sizeBytes !== undefined || Object.keys(changes).length === 0 || (killSuidgid === true && !chown);
  if (caller !== undefined && a.type === 'file' && dropsSetId) {
    const m = modeAfterWrite(a.mode, a.gid, caller);
    if (m !== (a.mode & 0o7777)) v.mode = m;
  }
  if (c.mode !== undefined) v.mode = c.mode & 0o7777;
  if (caller !== undefined && v.mode !== undefined) v.mode = modeSetBy(v.mode, v.gid ?? a.gid, caller);
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

/**
 * A write (or an O_TRUNC open) the kernel marked FUSE_WRITE_KILL_SUIDGID (FUSE_OPEN_KILL_SUIDGID):
 * the caller has no CAP_FSETID, and under FUSE_HANDLE_KILLPRIV_V2 the kernel leaves the drop to us
 * (native/fuse3/kill_priv.h). Drops what modeAfterWrite says; nothing when no set-id bit is set.
 */
export function dropSetIdAfterWrite(core: FsCore, ino: number, caller: Caller): void {
  const a = core.ns.attr(ino);
  if (a.type !== 'file' || (a.mode & SET_ID_BITS) === 0) return;
  const m = modeAfterWrite(a.mode, a.gid, caller);
  if (m !== (a.mode & 0o7777)) core.ns.setattr(ino, { mode: m });
}

export async function statfs(core: FsCore): Promise<FsCounts> {
  const s = await core.store.statfs(core.wb.space.reserved); // buffered bytes' space is taken (DESIGN §5)
  return { ...s, files: FILES_REPORTED, filesFree: FILES_REPORTED, nameBytesMax: NAME_BYTES_MAX };
}
