// Open directories of the inode-based transports: a listing is read once at opendir (and again
// on a rewind to offset 0), so the offsets handed to the kernel stay valid while it pages through
// it, whatever is created or removed meanwhile (as a snapshot, which POSIX allows for readdir).
// Offsets are cookies a name keeps for the life of its handle (seekdir to a telldir
// position after a rewind re-read the listing skipped names): a re-read keeps every known name's
// cookie and gives new names higher ones, so resuming after cookie c returns every name that
// stayed, once.
import type { DirEntry } from './types';
import { posix } from './errno';

export const DIR_HANDLES_MAX = 1 << 16;

export interface DirHandle {
  fh: number;
  ino: number;
  /** The listing in cookie order; each entry's offset is its cookie. */
  entries: DirEntry[] | null;
  /** Name -> cookie, for every name this handle has listed. */
  cookies: Map<string, number>;
  nextCookie: number;
}

/** Cookies 1 and 2 are '.' and '..' (listing order); 0 means the start. */
const FIRST_NAME_COOKIE = 3;

/**
 * Takes a fresh listing ('.', '..', then the names) into h with the cookies of names seen before;
 * returns the entries in cookie order. Cookies of names gone are forgotten (a bound on the map).
 */
export function relist(h: DirHandle, listing: DirEntry[]): DirEntry[] {
  const next = new Map<string, number>();
  const out: DirEntry[] = [];
  for (const [i, e] of listing.entries()) {
    let cookie = i < 2 ? i + 1 : h.cookies.get(e.name);
    if (cookie === undefined) cookie = h.nextCookie++;
    next.set(e.name, cookie);
    out.push({ ...e, offset: cookie });
  }
  out.sort((a, b) => a.offset - b.offset);
  h.cookies = next;
  h.entries = out;
  return out;
}

/** Index of the first entry whose cookie is above offset (binary search; entries in cookie order). */
export function resumeIndex(entries: DirEntry[], offset: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid].offset <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class DirHandles {
  private readonly byFh = new Map<number, DirHandle>();
  private nextFh = 1;

  open(ino: number): DirHandle {
    if (this.byFh.size >= DIR_HANDLES_MAX) throw posix('ENFILE', 'too many open directories');
    for (let tries = 0; tries <= DIR_HANDLES_MAX; tries++) {
      const fh = this.nextFh;
      this.nextFh = this.nextFh >= 0xfffffff0 ? 1 : this.nextFh + 1;
      if (this.byFh.has(fh)) continue;
      const h: DirHandle = { fh, ino, entries: null, cookies: new Map(), nextCookie: FIRST_NAME_COOKIE };
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
