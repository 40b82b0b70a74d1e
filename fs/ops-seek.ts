// lseek(2) SEEK_DATA and SEEK_HOLE by handle, answered from the chunk map: a chunk
// with no live version is a hole (store/meta/allocated.ts). Bytes the mount still holds (buffered, in a
// close batch, being stored) are data too, counted as they will be stored (DESIGN §5 "One view";
// Before this, cp copied zeros when a just-written file answered ENXIO). SEEK_SET/CUR/END never reach
// a file system (the kernel moves the offset itself).
import type { FsCore } from './core';
import { posix } from './errno';
import { pendingRanges } from './handles';

export const SEEK_DATA = 3;
export const SEEK_HOLE = 4;

export function lseek(core: FsCore, fh: number, offsetBytes: number, whence: number): number {
  if (whence !== SEEK_DATA && whence !== SEEK_HOLE) throw posix('EINVAL', `lseek whence ${whence} is the kernel's`);
  const f = core.handles.fileOf(fh);
  const what = whence === SEEK_DATA ? 'data' : 'hole';
  if (offsetBytes < 0 || offsetBytes >= f.sizeBytes)
    throw posix('ENXIO', `lseek ${what} at ${offsetBytes}: at or past the end (${f.sizeBytes})`);
  if (core.store.seekData === undefined) return what === 'data' ? offsetBytes : f.sizeBytes; // no map: all data
  const at = core.store.seekData(f.ino, offsetBytes, f.sizeBytes, what, pendingRanges(f));
  if (at === null) throw posix('ENXIO', `lseek: no data at or after ${offsetBytes}`);
  return at;
}
