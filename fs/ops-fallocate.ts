// fallocate(2) by handle: allocate (mode 0: the size grows to cover the range) and KEEP_SIZE alone
// (the size stays): the store writes sparsely, so no space is reserved, but the range is the file's
// from then on (store/meta/prealloc.ts: st_blocks counts it, as on ext4, SEEK_DATA sees it as data, it
// reads zeros). PUNCH_HOLE and ZERO_RANGE: the range reads as zeros; whole chunks
// inside it are freed in the store (store/chunks/punch.ts) and allocated no more, and the partly covered
// chunks get zeros written through the write-back buffer. COLLAPSE_RANGE and
// INSERT_RANGE never arrive: the kernel's FUSE module answers EOPNOTSUPP for every other mode
// itself (checked on 6.18: only the punch reached the mount); they are refused here too.
import type { FsCore } from './core';
import { nowNs } from '../store/meta/meta';
import { posix } from './errno';
import { FILE_BYTES_MAX } from '../store/file-io';

export const FALLOC_FL_KEEP_SIZE = 0x01;
export const FALLOC_FL_PUNCH_HOLE = 0x02;
export const FALLOC_FL_ZERO_RANGE = 0x10;
const SUPPORTED = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
/** Zeros written per write-back call (the buffer copies them into its slabs). */
const ZEROS_BYTES = 1 << 20;
let zeros: Buffer | null = null;

async function writeZeros(core: FsCore, fh: number, offsetBytes: number, lengthBytes: number): Promise<void> {
  zeros ??= Buffer.alloc(ZEROS_BYTES);
  const f = core.handles.fileOf(fh);
  const end = offsetBytes + lengthBytes;
  for (let at = offsetBytes; at < end; at += ZEROS_BYTES) {
    const n = Math.min(ZEROS_BYTES, end - at);
    await core.wb.write(f, at, zeros, n);
  }
}

/**
 * fallocate(2) promises the space: a range the disks could not hold is refused with ENOSPC, as
 * local file systems do (generic/213), before the size changes. The store writes
 * sparsely, so nothing is reserved: what is checked is the range past the file's end (bytes inside
 * it are data or holes the file already has) against the usable free space (statfs: raw free
 * space over the default layout's overhead).
 */
async function checkRoom(
  core: FsCore,
  ino: number,
  offsetBytes: number,
  lengthBytes: number,
  sizeBytes: number,
): Promise<void> {
  const newBytes = Math.max(0, offsetBytes + lengthBytes - Math.max(offsetBytes, sizeBytes));
  if (newBytes === 0) return;
  const { availBytes } = await core.store.statfs(core.wb.space.reserved);
  if (newBytes > availBytes)
    throw posix('ENOSPC', `fallocate of ${newBytes} new bytes on inode ${ino}: ${availBytes} bytes are free`);
}

export async function fallocate(
  core: FsCore,
  fh: number,
  mode: number,
  offsetBytes: number,
  lengthBytes: number,
): Promise<void> {
  if (offsetBytes < 0 || lengthBytes <= 0 || !Number.isSafeInteger(offsetBytes + lengthBytes))
    throw posix('EINVAL', 'bad fallocate range');
  if (offsetBytes + lengthBytes > FILE_BYTES_MAX)
    throw posix('EFBIG', `fallocate past the maximum file size ${FILE_BYTES_MAX}`);
  if ((mode & ~SUPPORTED) !== 0) throw posix('EOPNOTSUPP', `fallocate mode ${mode.toString(16)} is not supported`);
  const punch = (mode & FALLOC_FL_PUNCH_HOLE) !== 0;
  const zero = (mode & FALLOC_FL_ZERO_RANGE) !== 0;
  const keepSize = (mode & FALLOC_FL_KEEP_SIZE) !== 0;
  if (punch && (zero || !keepSize)) throw posix('EOPNOTSUPP', 'PUNCH_HOLE needs KEEP_SIZE and excludes ZERO_RANGE');
  const f = core.handles.fileOf(fh);
  const end = offsetBytes + lengthBytes;
  if (!punch && !zero) {
    await checkRoom(core, f.ino, offsetBytes, lengthBytes, f.sizeBytes);
    core.store.preallocate?.(f.ino, offsetBytes, lengthBytes);
  }
  let changed = false;
  if (punch || zero) {
    core.store.unpreallocate?.(f.ino, offsetBytes, lengthBytes);
    const zeroEnd = Math.min(end, f.sizeBytes); // beyond the size the file reads as nothing, or as zeros once grown
    if (offsetBytes < zeroEnd) {
      await core.wb.flush(f); // the store holds every byte before chunks are dropped from under the buffer
      const edges = await core.store.punchHole(f.ino, offsetBytes, zeroEnd - offsetBytes);
      for (const e of edges) await writeZeros(core, fh, e.offsetBytes, e.lengthBytes);
      changed = true;
    }
  }
  if (!keepSize && end > f.sizeBytes) {
    await core.wb.truncate(f, end);
    changed = true;
  }
  if (changed) {
    const t = nowNs();
    core.ns.setattr(f.ino, { mtimeNs: t, ctimeNs: t });
    f.mtimeNs = null;
  }
}
