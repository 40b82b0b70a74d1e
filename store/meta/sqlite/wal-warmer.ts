// Keeps meta.db-wal in the page cache (the metadata database's own cost per operation).
// SQLite appends each page it commits to the WAL as a 24-byte frame header and the 4,096-byte page,
// and after each checkpoint writes the WAL again from its start, so every write covers part of a
// file page. When the kernel has dropped those pages (memory pressure from large file I/O, or
// drop_caches), each such write first reads its page from the device, on the thread that answers
// FUSE: a chmod after a cache drop ran at 1,300-2,900 ops/s against 4,300-9,400 once the WAL was
// read back (`cat meta.db-wal`, 5 interleaved rounds, 2,000 files). posix_fadvise(WILLNEED) is no
// help: the kernel reads at most one readahead window (128 KiB) per call.
//
// So a commit that took unusually long (COLD_COMMIT_NS: a warm one takes tens of microseconds, a
// cold one a device read per frame) starts one background read of the whole WAL through the
// store's Io, on the libuv pool, at most once per WARM_INTERVAL_MS. A slow commit for another
// reason (a busy CPU) costs at most that one read, of pages mostly in memory already.
import { INLINE_BYTES_MAX, Io } from '../../io/io';
import { assert } from '../../../src/errors';

/** A commit slower than this suggests the WAL's pages were dropped (warm: 20-200 us each). */
export const COLD_COMMIT_NS = 1_500_000n;
/** At most one warm-up read per this interval. */
export const WARM_INTERVAL_MS = 1000;
/** The read's piece size: one reusable buffer, above store/io/io.ts INLINE_BYTES_MAX. */
const WARM_PIECE_BYTES = 1 << 20;
assert(WARM_PIECE_BYTES > INLINE_BYTES_MAX, 'a warm-up piece is read on the pool');
/** Bound on what one warm-up reads (the WAL checkpoints at 16 MiB: database.ts). */
const WARM_BYTES_MAX = 64 << 20;

export interface WalWarmerOptions {
  coldCommitNs?: bigint;
  warmIntervalMs?: number;
  now?: () => number;
}

export class WalWarmer {
  private lastWarmMs = -Infinity;
  private running: Promise<void> | null = null;
  private piece: Buffer | null = null;
  /** Warm-up reads started, and bytes they read (tests, status). */
  warmCount = 0;
  warmedBytes = 0;
  private readonly coldCommitNs: bigint;
  private readonly warmIntervalMs: number;
  private readonly now: () => number;

  constructor(
    private readonly io: Io,
    private readonly walPath: string,
    opts: WalWarmerOptions = {},
  ) {
    this.coldCommitNs = opts.coldCommitNs ?? COLD_COMMIT_NS;
    this.warmIntervalMs = opts.warmIntervalMs ?? WARM_INTERVAL_MS;
    this.now = opts.now ?? Date.now;
  }

  /** A commit took elapsedNs (engine.ts times outermost transactions). */
  readonly observe = (elapsedNs: bigint): void => {
    if (elapsedNs < this.coldCommitNs || this.running !== null) return;
    const nowMs = this.now();
    if (nowMs - this.lastWarmMs < this.warmIntervalMs) return;
    this.lastWarmMs = nowMs;
    this.warmCount++;
    // Advice only: a failed read changes nothing (a missing WAL: no commit since a checkpoint removed it).
    this.running = this.readThrough()
      .catch(() => undefined)
      .finally(() => {
        this.running = null;
      });
  };

  /** The warm-up read now in flight, if any (tests and close wait for it). */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  private async readThrough(): Promise<void> {
    const f = await this.io.open(this.walPath, 'read');
    try {
      this.piece ??= Buffer.allocUnsafeSlow(WARM_PIECE_BYTES);
      // Whole pieces (past INLINE_BYTES_MAX: always on the pool, never on the answering thread); a
      // short one is the end of the file.
      for (let offsetBytes = 0; offsetBytes < WARM_BYTES_MAX; offsetBytes += WARM_PIECE_BYTES) {
        const n = await f.preadInto(this.piece, 0, WARM_PIECE_BYTES, offsetBytes);
        this.warmedBytes += n;
        if (n < WARM_PIECE_BYTES) break;
      }
    } finally {
      await f.close();
    }
  }
}
