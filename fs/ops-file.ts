// File I/O ops by inode and handle: create, open, read, write, flush, fsync/fdatasync, release.
// Writes go through the write-back buffer; fsync returns only when the file's bytes are durable in
// the store (DESIGN §5).
import type { FsCore } from './core';
import type { Caller, Stat } from './types';
import { checkLength, newOwner } from './ops-names';
import { posix } from './errno';
import { nowNs } from '../store/meta/meta';
import { FILE_BYTES_MAX } from '../store/file-io';
import { applyInherited, inherit } from './acl';

const O_ACCMODE = 0o3;
const O_TRUNC = 0o1000;

/** A new regular file, opened: its attributes and handle. */
export function create(
  core: FsCore,
  parent: number,
  name: string,
  mode: number,
  flags: number,
  caller: Caller,
): { stat: Stat; fh: number } {
  checkLength(name);
  const p = core.ns.attr(parent);
  const o = newOwner(p, caller);
  const h = inherit(core, parent, mode & 0o7777, caller.umask, false);
  core.recentNames.changed(parent, name);
  const a = core.ns.create(parent, name, h.mode, o.uid, o.gid);
  applyInherited(core, a.ino, h);
  const fh = core.handles.open(a.ino, flags & O_ACCMODE, a.sizeBytes).handle.fh;
  return { stat: core.stat(a), fh };
}

/**
 * Opens a regular file. O_TRUNC arrives here only from transports that ask for atomic truncation
 * (libfuse3); others send a separate truncate. O_APPEND offsets are computed by the kernel.
 */
export async function open(core: FsCore, ino: number, flags: number): Promise<number> {
  const a = core.ns.attr(ino);
  if (a.type === 'dir') throw posix('EISDIR', `inode ${ino} is a directory`);
  if (a.type !== 'file') throw posix('EINVAL', `inode ${ino} is not a regular file`);
  const existing = core.handles.file(ino);
  const { handle, file } = core.handles.open(ino, flags & O_ACCMODE, existing?.sizeBytes ?? a.sizeBytes);
  if ((flags & O_TRUNC) !== 0 && file.sizeBytes > 0) {
    try {
      await core.wb.truncate(file, 0);
    } catch (err) {
      await release(core, handle.fh);
      throw err;
    }
    file.mtimeNs = null;
    const t = nowNs();
    core.ns.setattr(ino, { mtimeNs: t, ctimeNs: t });
  }
  return handle.fh;
}

export function read(
  core: FsCore,
  fh: number,
  buf: Buffer,
  lengthBytes: number,
  positionBytes: number,
): number | Promise<number> {
  const f = core.handles.fileOf(fh);
  core.atime.accessed(f.ino);
  // One pipeline: cached data answers at once (a number, no promise chain); failures fail over inside the store.
  return core.wb.readInto(f, positionBytes, buf, lengthBytes);
}

export function write(
  core: FsCore,
  fh: number,
  buf: Buffer,
  lengthBytes: number,
  positionBytes: number,
): number | Promise<number> {
  const f = core.handles.fileOf(fh);
  // Refused now, not at the flush: a write the store cannot hold must fail for its writer, never
  // be accepted into the buffer and lost later (xfstests generic/564 wrote near 2^63).
  if (positionBytes + lengthBytes > FILE_BYTES_MAX)
    throw posix('EFBIG', `write of [${positionBytes}, +${lengthBytes}) past the maximum file size ${FILE_BYTES_MAX}`);
  // The transport's buffer may die when we answer: the write-back buffer copies what it keeps.
  const waiting = core.wb.write(f, positionBytes, buf, lengthBytes);
  return waiting === undefined ? lengthBytes : waiting.then(() => lengthBytes);
}

/** close(2) of one descriptor: report a failed background flush; store what is buffered (see WriteBack.close). */
export async function flush(core: FsCore, fh: number): Promise<void> {
  await core.wb.close(core.handles.fileOf(fh));
}

/**
 * The file's buffered bytes go to the store, then store.sync closes the transaction group holding
 * its whole chunks (one flush of the group's shard files, one commit) and one full commit makes its
 * size, times and every namespace change so far durable (DESIGN §5: metadata operations are not
 * flushed one by one; concurrent fsyncs share a flush).
 */
export async function fsync(core: FsCore, fh: number): Promise<void> {
  const file = core.handles.fileOf(fh);
  await core.wb.flush(file);
  await core.store.sync(file.ino);
}

/** fsync of a directory: its entries (every namespace change so far) durable (DESIGN §5). */
export async function fsyncdir(core: FsCore): Promise<void> {
  await core.store.sync();
}

export async function release(core: FsCore, fh: number): Promise<void> {
  const { file, last } = core.handles.close(fh);
  if (!last) return;
  try {
    await core.wb.settle(file);
  } finally {
    await core.lastRelease(file);
  }
}
