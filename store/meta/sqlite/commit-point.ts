// SQLite's full commit (DESIGN §5 "What is durable when"; the interface: store/meta/commit-point.ts):
// total_changes() and one fdatasync of meta.db-wal through the store's Io (the WAL is appended in
// commit order, so one sync covers every commit before it), after the commit of the open group of
// operations, if any.
import { Io, errnoCode } from '../../io/io';
import type { CommitPoint } from '../commit-point';
import type { SqliteDb } from './engine';
import { WalWarmer } from './wal-warmer';

/** A WAL sync slower than this sends the next one to the libuv pool (see makeDurable). */
const INLINE_SYNC_MS_MAX = 2;

export class SqliteWalCommitPoint implements CommitPoint {
  private readonly changes;
  private lastSyncMs = 0;
  /** Reads the WAL back into the page cache when commits show it was dropped (wal-warmer.ts). */
  readonly warmer: WalWarmer;
  constructor(
    private readonly db: SqliteDb,
    private readonly io: Io,
    private readonly walPath: string,
  ) {
    this.changes = db.native.prepare('SELECT total_changes() AS n');
    this.warmer = new WalWarmer(io, walPath);
    db.commitObserver = this.warmer.observe;
  }

  mark(): bigint {
    return BigInt((this.changes.get() as { n: bigint | number }).n);
  }

  groupCommits(groupMs: number): void {
    this.db.groupCommits(groupMs);
  }

  async makeDurable(): Promise<void> {
    // The open group first (DESIGN §5 "Group commit"): its operations were answered before the call.
    this.db.commitGroup();
    let f;
    try {
      // Read mode: SQLite writes the WAL, we only sync it (fdatasync works on any descriptor).
      f = await this.io.open(this.walPath, 'read');
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return; // no commit since the last checkpoint removed the WAL
      throw err;
    }
    try {
      // On this thread while the WAL's syncs stay fast and no other disk call is in flight (the
      // Io's InlineGate): one fsync'd 4 KiB write here took 1,368 us with the sync on the libuv pool
      // (the sync itself 211-289 us, the rest two thread wake-ups), 823-1,057 us inline. A slow sync
      // (a busy device) sends the next ones to the pool, so that the thread keeps answering meanwhile.
      const startedMs = performance.now();
      await f.fdatasync(this.lastSyncMs < INLINE_SYNC_MS_MAX);
      this.lastSyncMs = performance.now() - startedMs;
    } finally {
      await f.close();
    }
  }
}
