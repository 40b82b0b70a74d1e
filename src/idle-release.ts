// Pooled buffers that sit unused give their pages back (the mount's peak RSS): the write-back's
// slabs and flush lanes (fs/), the shard store's whole-chunk scratch (store/chunks/scratch-pool.ts).
// The write-back slabs and flush lanes are kept for reuse (fresh memory costs a page fault per page on
// this VM: fs/slab-pool.ts), but once filled they stayed resident for the mount's life: measured over
// scripts/bench/bench-fio.sh (replica:3, 256 MiB files), 166 MiB of free slabs and 32 MiB of lanes from the
// random-write jobs were still resident through the read and fsync'd-write jobs, whose own memory
// (the intent backlog's spans among it) came on top and made the run's peak. A buffer parked on a
// free list and not taken again for IDLE_RELEASE_MS is released (MADV_DONTNEED: the mapping stays,
// the next use faults in one zeroed huge page per 2 MiB).
import { assert } from './errors';
import { releaseHugePages } from './huge-buffer';

/**
 * How long a parked buffer stays resident unused. At 1 s, 4-job random writes (scripts/bench/bench-fio.sh,
 * interleaved with main, busy machine) ran at 0.87x and 0.90x of main over 5 and 11 rounds, against
 * 1.06x with no release: slabs freed between flush bursts were released and faulted in again within
 * the job. At 5 s: 0.99x (4 rounds). The fio jobs' gaps (a job of another target, a cache drop) are
 * longer, so the read and fsync'd-write jobs still run with the slabs given back.
 */
export const IDLE_RELEASE_MS = 5000;
/** Buffers parked at once (a slab pool's free list holds its bound's slabs: 97 for 192 MiB). */
const PARKED_MAX = 1 << 16;

export interface IdleReleaseOptions {
  idleMs?: number;
  /** Tests: a clock, and no timer (they call sweep). */
  now?: () => number;
  timer?: boolean;
  release?: (buf: Buffer) => boolean;
}

export class IdleRelease {
  /** Parked buffers -> when parked; insertion order is parking order (oldest first). */
  private readonly parked = new Map<Buffer, number>();
  private timer: NodeJS.Timeout | null = null;
  private readonly idleMs: number;
  private readonly now: () => number;
  private readonly useTimer: boolean;
  private readonly release: (buf: Buffer) => boolean;
  /** Bytes given back so far (status and tests). */
  releasedBytes = 0;

  constructor(opts: IdleReleaseOptions = {}) {
    this.idleMs = opts.idleMs ?? IDLE_RELEASE_MS;
    this.now = opts.now ?? Date.now;
    this.useTimer = opts.timer ?? true;
    this.release = opts.release ?? releaseHugePages;
    assert(this.idleMs > 0, 'idle release: idle time must be positive');
  }

  get parkedCount(): number {
    return this.parked.size;
  }

  /** buf went onto a free list: release it if nobody takes it within the idle time. */
  park(buf: Buffer): void {
    this.parked.delete(buf);
    assert(this.parked.size < PARKED_MAX, 'idle release: too many buffers parked');
    this.parked.set(buf, this.now());
    this.arm();
  }

  /** buf was taken off its free list (released or not, it is usable as it is). */
  unpark(buf: Buffer): void {
    this.parked.delete(buf);
  }

  /** Releases every buffer parked for the idle time or longer. */
  sweep(): void {
    const now = this.now();
    for (const [buf, at] of this.parked) {
      // oldest first: stop at the first one still fresh
      if (now - at < this.idleMs) break;
      this.parked.delete(buf);
      if (this.release(buf)) this.releasedBytes += buf.length;
    }
  }

  private arm(): void {
    if (!this.useTimer || this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.sweep();
      if (this.parked.size > 0) this.arm();
    }, this.idleMs);
    this.timer.unref(); // never what keeps a process alive
  }
}
