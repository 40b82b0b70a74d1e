// File I/O ops: create, open, read, write, flush, fsync/fdatasync, release. Writes go through the
// write-back buffer; fsync returns only when the file's bytes are durable in the store (DESIGN §5).
import type Fuse from 'fuse-native';
import type { FsCore } from './core';
import { newOwner } from './ops-names';
import { posix } from './errno';

const O_ACCMODE = 0o3;

export function create(core: FsCore, path: string, mode: number, ctx: Fuse.Context): number {
  const { parent, name } = core.resolveParent(path);
  const o = newOwner(parent, ctx);
  const a = core.ns.create(parent.ino, name, mode & 0o7777, o.uid, o.gid);
  // fuse-native does not pass create's flags; the kernel still checks the access mode per fd.
  return core.handles.open(a.ino, 2 /* O_RDWR */, a.sizeBytes).handle.fh;
}

export function open(core: FsCore, path: string, flags: number): number {
  const a = core.resolve(path);
  if (a.type === 'dir') throw posix('EISDIR', `${path} is a directory`);
  if (a.type !== 'file') throw posix('EINVAL', `${path} is not a regular file`);
  // O_TRUNC arrives as a separate truncate; O_APPEND offsets are computed by the kernel.
  const existing = core.handles.file(a.ino);
  return core.handles.open(a.ino, flags & O_ACCMODE, existing?.sizeBytes ?? a.sizeBytes).handle.fh;
}

export function read(core: FsCore, fh: number, buf: Buffer, lengthBytes: number, positionBytes: number): number | Promise<number> {
  const f = core.handles.fileOf(fh);
  // Cached state answers at once (no promise chain); anything else, and every failure, takes readInto.
  return core.wb.readIntoNow(f, positionBytes, buf, lengthBytes) ?? core.wb.readInto(f, positionBytes, buf, lengthBytes);
}

export function write(core: FsCore, fh: number, buf: Buffer, lengthBytes: number, positionBytes: number): number | Promise<number> {
  const f = core.handles.fileOf(fh);
  // The binding's buffer dies when we answer: the write-back buffer copies what it keeps.
  const waiting = core.wb.write(f, positionBytes, buf, lengthBytes);
  return waiting === undefined ? lengthBytes : waiting.then(() => lengthBytes);
}

/** close(2) of one descriptor: store what is buffered, and report a failed background flush. */
export async function flush(core: FsCore, fh: number): Promise<void> {
  await core.wb.flush(core.handles.fileOf(fh));
}

/**
 * The file's buffered bytes go to the store (their shards durable when store.write resolves), then
 * one full commit makes its size, times and every namespace change so far durable (DESIGN §5:
 * metadata operations are not flushed one by one; concurrent fsyncs share a flush).
 */
export async function fsync(core: FsCore, fh: number): Promise<void> {
  await core.wb.flush(core.handles.fileOf(fh));
  await core.store.sync();
}

/** fsync of a directory: its entries (every namespace change so far) durable (DESIGN §5). */
export async function fsyncdir(core: FsCore): Promise<void> {
  await core.store.sync();
}

export async function release(core: FsCore, fh: number): Promise<void> {
  const { file, last } = core.handles.close(fh);
  if (!last) return;
  try {
    await core.wb.flush(file);
  } finally {
    await core.lastRelease(file);
  }
}
