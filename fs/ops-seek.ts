// lseek(2) SEEK_DATA and SEEK_HOLE by handle (issue 15 item 12), answered from the chunk map: a chunk
// with no live version is a hole (store/allocated.ts). Buffered writes are data too: they are
// stored first, so the answer covers every byte written. SEEK_SET/CUR/END never reach a file system
// (the kernel moves the offset itself).
import type { FsCore } from './core';
import { posix } from './errno';

export const SEEK_DATA = 3;
export const SEEK_HOLE = 4;

export async function lseek(core: FsCore, fh: number, offsetBytes: number, whence: number): Promise<number> {
  if (whence !== SEEK_DATA && whence !== SEEK_HOLE) throw posix('EINVAL', `lseek whence ${whence} is the kernel's`);
  const f = core.handles.fileOf(fh);
  if (!f.buffer.isEmpty) await core.wb.flush(f);
  const what = whence === SEEK_DATA ? 'data' : 'hole';
  if (offsetBytes < 0 || offsetBytes >= f.sizeBytes) throw posix('ENXIO', `lseek ${what} at ${offsetBytes}: at or past the end (${f.sizeBytes})`);
  if (core.store.seekData === undefined) return what === 'data' ? offsetBytes : f.sizeBytes; // no map: all data
  const at = core.store.seekData(f.ino, offsetBytes, f.sizeBytes, what);
  if (at === null) throw posix('ENXIO', `lseek: no data at or after ${offsetBytes}`);
  return at;
}
