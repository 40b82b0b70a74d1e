// Deleting unlinked files' rows in batches (round trips to PostgreSQL; DESIGN §5: unlink
// and truncate only change metadata, freeing is a background job). On PostgreSQL a file's deletion
// (when the kernel forgets it) is a transaction the FUSE thread waits for, one round trip after the
// unlink's own: the deletions that come within DELETE_BATCH_MS go in one transaction instead.
// Deferring is safe: the unlink committed the inode's orphan mark (store/meta/ops-base.ts), so a
// crash before the batch leaves an orphan the next mount deletes (fs/mount.ts), as a crash between
// unlink and forget does.
import { KeyedMutex } from './chunks/keyed-mutex';

/** How long a deletion waits for others to join its transaction. */
export const DELETE_BATCH_MS = 20;
/** Deletions one transaction takes at most (more: it goes at once, the rest wait for the next). */
export const DELETE_BATCH_MAX = 64;

interface Pending {
  ino: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface DeleteRows {
  /** One file's deletion under its inode lock, in a transaction of its own (its errors name it). */
  one(ino: number): Promise<void>;
  /** Several files' rows in one transaction, synchronously; returns those it left for one() (still linked, gone, or not a file). */
  many(inos: number[]): number[];
}

export class DeleteBatcher {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly locks: KeyedMutex,
    private readonly rows: DeleteRows,
  ) {}

  get waiting(): number {
    return this.pending.length;
  }

  /** Delete ino's rows with the next batch; resolves once they are committed. */
  add(ino: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ino, resolve, reject });
      if (this.pending.length >= DELETE_BATCH_MAX) void this.drain();
      else if (this.timer === null) this.timer = setTimeout(() => void this.drain(), DELETE_BATCH_MS); // kept referenced: its callers wait for it
    });
  }

  /** Run every waiting deletion now (the timer, close, reclaim); resolves when all are done (failures go to their callers). */
  drain(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    // An inode whose lock is held (a write, a truncate) or named twice goes alone, after its lock.
    const together = new Map<number, Pending>();
    const alone: Pending[] = [];
    for (const p of batch) {
      if (!this.locks.busy(p.ino) && !together.has(p.ino)) together.set(p.ino, p);
      else alone.push(p);
    }
    if (together.size > 0) {
      let left: Set<number>;
      try {
        // Synchronous: nobody takes these locks before it returns.
        left = new Set(this.rows.many([...together.keys()]));
      } catch {
        left = new Set(together.keys()); // rolled back: each again alone, so a failure names its file
      }
      for (const [ino, p] of together) {
        if (left.has(ino)) alone.push(p);
        else p.resolve();
      }
    }
    return Promise.all(alone.map((p) => this.rows.one(p.ino).then(p.resolve, (err: unknown) => p.reject(err)))).then(
      () => undefined,
    );
  }
}
