// Open directories of the inode-based transports: a listing is read once at opendir (and again
// on a rewind to offset 0), so the offsets handed to the kernel stay valid while it pages through
// it, whatever is created or removed meanwhile (as a snapshot, which POSIX allows for readdir).
import type { DirEntry } from './types';
import { posix } from './errno';

export const DIR_HANDLES_MAX = 1 << 16;

export interface DirHandle { fh: number; ino: number; entries: DirEntry[] | null }

export class DirHandles {
  private readonly byFh = new Map<number, DirHandle>();
  private nextFh = 1;

  open(ino: number): DirHandle {
    if (this.byFh.size >= DIR_HANDLES_MAX) throw posix('ENFILE', 'too many open directories');
    for (let tries = 0; tries <= DIR_HANDLES_MAX; tries++) {
      const fh = this.nextFh;
      this.nextFh = this.nextFh >= 0xfffffff0 ? 1 : this.nextFh + 1;
      if (this.byFh.has(fh)) continue;
      const h: DirHandle = { fh, ino, entries: null };
      this.byFh.set(fh, h);
      return h;
    }
    throw posix('ENFILE', 'no free directory handle');
  }

  get(fh: number): DirHandle {
    const h = this.byFh.get(fh);
    if (h === undefined) throw posix('EBADF', `no open directory ${fh}`);
    return h;
  }

  close(fh: number): void {
    this.byFh.delete(fh);
  }
}
