// File handles (the fh FUSE passes back on read/write/flush/release) and the per-inode open state
// they share. An inode's state lives while a handle is open or buffered bytes remain, so an open,
// unlinked file keeps working until its last release (DESIGN §5).
import { ExtentMap, pushRange } from './extent-map';
import { RwLock } from './rwlock';
import { posix } from './errno';
import type { SpaceLayout } from '../src/space-need';

export const HANDLES_MAX = 1 << 20;

export interface Handle {
  fh: number;
  ino: number;
  flags: number;
}

/** What the mount knows about an open regular file beyond the database row. */
export class OpenFile {
  handles = 0;
  /** nlink reached 0 while open: delete the data at the last release. */
  unlinked = false;
  /** Logical size including buffered writes. */
  sizeBytes: number;
  /**
   * The size committed in the store, as this mount last set it (DESIGN §5 prefix rule): every byte
   * below it is stored (or a hole the writer made); buffered bytes below it are overwrites.
   */
  storedSizeBytes: number;
  /** mtime of buffered writes, persisted at flush; null when the row is current. */
  mtimeNs: bigint | null = null;
  /**
   * An mtime the user set (utimens) after the last buffered write: the flush commits it with those
   * bytes instead of its own "now" (tar and cp -a set times before close). Null: none.
   */
  mtimeSetNs: bigint | null = null;
  readonly buffer = new ExtentMap();
  readonly lock = new RwLock();
  timer: NodeJS.Timeout | null = null;
  /** Chunks wholly buffered, waiting for the background whole-chunk flush. */
  readonly fullChunks = new Set<number>();
  fullFlushScheduled = false;
  /**
   * Ranges taken out of the buffer by the flush now running, until the store has committed them:
   * still data to st_blocks and SEEK_DATA (DESIGN §5 "One view": cp saw a hole here).
   */
  storing: Array<{ offsetBytes: number; endBytes: number }> = [];
  /** Bytes taken out of the buffer by the flush now running (their disk space stays reserved until it settles). */
  flightBytes = 0;
  /** Disk bytes reserved for the bytes buffered or in flight (fs/space-ledger.ts). */
  reservedBytes = 0;
  /** The store's answer to what its stored bytes take on the disks, asked at its first write (null: none). */
  spaceLayout: SpaceLayout | null | undefined = undefined;
  /** A background flush failed: reported (EIO) by the next fsync/flush, as the kernel does. */
  flushError: Error | null = null;
  constructor(
    readonly ino: number,
    sizeBytes: number,
  ) {
    this.sizeBytes = sizeBytes;
    this.storedSizeBytes = sizeBytes;
  }
}

/** Bytes of the file the store has not committed yet (buffered or being stored), for allocation answers. */
export function pendingRanges(file: OpenFile): Array<{ offsetBytes: number; endBytes: number }> {
  if (file.storing.length === 0) return file.buffer.ranges();
  const all = [...file.buffer.ranges(), ...file.storing].sort((a, b) => a.offsetBytes - b.offsetBytes);
  const out: Array<{ offsetBytes: number; endBytes: number }> = [];
  for (const r of all) pushRange(out, r.offsetBytes, r.endBytes);
  return out;
}

export class Handles {
  private readonly byFh = new Map<number, Handle>();
  private readonly files = new Map<number, OpenFile>();
  private nextFh = 1;

  open(ino: number, flags: number, sizeBytes: number): { handle: Handle; file: OpenFile } {
    if (this.byFh.size >= HANDLES_MAX) throw posix('ENFILE', 'too many open handles');
    const fh = this.allocFh();
    const handle: Handle = { fh, ino, flags };
    this.byFh.set(fh, handle);
    let file = this.files.get(ino);
    if (file === undefined) {
      file = new OpenFile(ino, sizeBytes);
      this.files.set(ino, file);
    }
    file.handles += 1;
    return { handle, file };
  }

  private allocFh(): number {
    // fh travels as u32 through the binding; skip 0 (fuse-native treats 0 as "no fh").
    for (let tries = 0; tries < HANDLES_MAX + 1; tries++) {
      const fh = this.nextFh;
      this.nextFh = this.nextFh >= 0xfffffff0 ? 1 : this.nextFh + 1;
      if (!this.byFh.has(fh)) return fh;
    }
    throw posix('ENFILE', 'no free file handle');
  }

  get(fh: number): Handle {
    const h = this.byFh.get(fh);
    if (h === undefined) throw posix('EBADF', `no open handle ${fh}`);
    return h;
  }

  fileOf(fh: number): OpenFile {
    const f = this.files.get(this.get(fh).ino);
    if (f === undefined) throw posix('EBADF', `handle ${fh} has no open file`);
    return f;
  }

  /** fileOf, or undefined when fh is not open (no throw). */
  fileIfOpen(fh: number): OpenFile | undefined {
    const h = this.byFh.get(fh);
    return h === undefined ? undefined : this.files.get(h.ino);
  }

  file(ino: number): OpenFile | undefined {
    return this.files.get(ino);
  }

  allFiles(): OpenFile[] {
    return [...this.files.values()];
  }

  /** Drop a handle; returns the file when this was its last handle. */
  close(fh: number): { file: OpenFile; last: boolean } {
    const h = this.get(fh);
    this.byFh.delete(fh);
    const file = this.files.get(h.ino);
    if (file === undefined) throw posix('EBADF', `handle ${fh} has no open file`);
    file.handles -= 1;
    return { file, last: file.handles === 0 };
  }

  /**
   * Forget an inode's state once it has no handles, nothing buffered and no flush running: a flush
   * in flight (a close batch or the timer, fs/write-buffer.ts) holds bytes the store has not
   * committed yet, and until it has, this state is what getattr must answer (its size), not the row.
   * True when this call forgot it.
   */
  forget(file: OpenFile): boolean {
    if (file.handles !== 0 || !file.buffer.isEmpty || !file.lock.idle || this.files.get(file.ino) !== file)
      return false;
    this.files.delete(file.ino);
    return true;
  }
}
