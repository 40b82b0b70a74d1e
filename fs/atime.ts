// Access times: relatime by default, like Linux mounts: a read or a directory
// listing moves atime to now when atime is not after mtime or ctime, or is a day old; -o
// strictatime moves it on every access, -o noatime never (nor on a read-only mount). Updates are
// kept in memory and written in one transaction per ATIME_FLUSH_MS, not one SQLite commit per read
// (DESIGN §5: each commit is a WAL write); stat lays a pending atime over the row, so it shows at
// once. An update lost in a crash loses only atime, which POSIX lets a file system relax.
import type { NamespacePort } from './store-port';
import { nowNs } from '../store/meta/meta';

export type AtimeMode = 'relatime' | 'strictatime' | 'noatime';

/** relatime's bound: an atime older than this moves on the next access (Linux: 24 h). */
export const RELATIME_AGE_NS = 24n * 3600n * 1_000_000_000n;
/** How long pending atimes wait before their one write. */
export const ATIME_FLUSH_MS = 1000;
/** Inodes with a pending atime; past this a write happens at once (a bound on memory per window). */
export const ATIME_PENDING_MAX = 1 << 16;

/** relatime's rule for an inode's times at time now. */
export function relatimeDue(atimeNs: bigint, mtimeNs: bigint, ctimeNs: bigint, now: bigint): boolean {
  return atimeNs <= mtimeNs || atimeNs <= ctimeNs || now - atimeNs >= RELATIME_AGE_NS;
}

export class AtimeUpdates {
  /** Inodes accessed in this window: the atime to write, or null when none is due. */
  private readonly pending = new Map<number, bigint | null>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ns: NamespacePort,
    readonly mode: AtimeMode,
    private readonly log: (m: string) => void,
  ) {}

  /** Told each inode whose stat a new pending atime changed (FsCore.watchAttrs). */
  attrChanged: (ino: number) => void = () => undefined;
  /**
   * Told the inodes whose pending atimes were just written: what a stat shows of them is unchanged,
   * though writing them revoked them (a transport's table of names re-puts them: fs/fuse/entry-table.ts).
   */
  written: (inos: number[]) => void = () => undefined;

  /** ino was read (file data or a directory listing). */
  accessed(ino: number): void {
    if (this.mode === 'noatime') return;
    const known = this.pending.get(ino);
    if (known !== undefined && this.mode === 'relatime') return; // decided for this window
    const now = nowNs();
    if (known === undefined) {
      if (this.pending.size >= ATIME_PENDING_MAX) this.flush();
      if (this.mode === 'relatime') {
        const a = this.ns.getattr(ino);
        if (a === null) return;
        this.pending.set(ino, relatimeDue(a.atimeNs, a.mtimeNs, a.ctimeNs, now) ? now : null);
      } else this.pending.set(ino, now);
    } else this.pending.set(ino, now);
    if (this.pending.get(ino) !== null) this.attrChanged(ino);
    if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), ATIME_FLUSH_MS);
      this.timer.unref();
    }
  }

  /** The atime an access set that is not written yet, or null. */
  pendingOf(ino: number): bigint | null {
    return this.pending.get(ino) ?? null;
  }

  /** A setattr wrote atime itself: an older pending access must not overwrite it. */
  dropPending(ino: number): void {
    this.pending.delete(ino);
  }

  /** Writes every pending atime (timer, a full window, unmount). */
  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const due: Array<[number, bigint]> = [];
    for (const [ino, t] of this.pending) if (t !== null) due.push([ino, t]);
    this.pending.clear();
    if (due.length === 0) return;
    try {
      this.ns.setAtimes(due);
    } catch (err) {
      this.log(`atime of ${due.length} inodes not written: ${(err as Error).message}`);
      return;
    }
    this.written(due.map(([ino]) => ino));
  }
}
