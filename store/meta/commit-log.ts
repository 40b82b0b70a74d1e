// Full commits of the metadata (DESIGN §5 "What is durable when"). meta.db runs in WAL mode with
// synchronous=NORMAL: each commit appends its frames to meta.db-wal with write(2) and returns, so a
// process kill loses nothing committed (a live mount's open group of operations aside: DESIGN §5
// "Group commit", committed here before every full commit), but a power loss may lose the latest commits (never tears
// one: WAL frames are checksummed, a torn tail is ignored). A full commit is one fdatasync of the
// WAL file through the store's Io: since the WAL is appended in commit order, it makes every commit
// so far durable at once. It runs at fsync/fdatasync of a file, fsync of a directory, unmount, before
// any shard is touched under a journaled intent or a reserved version, and from a timer at most
// FLUSH_DELAY_MS after the first unflushed commit.
//
// Group commit: callers that ask while a flush runs share the next one (it may have started before
// their commit), so N concurrent fsyncs cost about two flush latencies, not N.
//
// What "a full commit" is depends on the engine (store/meta/commit-point.ts): SQLite's is the WAL's
// fdatasync above; PostgreSQL's (store/meta/postgres/commit-point.ts) one synchronous commit, which flushes
// the server's WAL up to it and so every asynchronous commit before it.
import { Db } from './meta';
import { CommitPoint } from './commit-point';

/** A commit becomes durable at most this long after it returns, without any fsync (DESIGN §5). */
export const FLUSH_DELAY_MS = 5000;
/**
 * A live mount's metadata operations commit in groups: one SQLite commit at most this long after
 * the group's first operation (DESIGN §5 "Group commit"; a kill -9 loses at most that group).
 */
export const GROUP_COMMIT_MS = 4;
/** The timer looks this often for unflushed commits (so the delay bound holds within one tick). */
const TIMER_TICK_MS = 1000;

export class CommitLog {
  private flushing: Promise<void> | null = null;
  /** Whether the running flush has taken its mark (commits after that wait for the next one). */
  private syncStarted = false;
  private queued: Promise<void> | null = null;
  /** total_changes() when the last flush started: commits up to it are durable once it ends. */
  private flushedChanges = -1n;
  private firstUnflushedMs = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Device flushes issued (the WAL fdatasyncs), for status and the flush-count tests. */
  flushCount = 0;
  /** The number (flushCount) of the last flush that succeeded: one that started as number n made every commit before its start durable. */
  lastFlushDone = 0;

  constructor(
    private readonly db: Db,
    private readonly point: CommitPoint,
  ) {}

  private totalChanges(): bigint {
    return this.point.mark();
  }

  /** Whether some commit is not yet durable. */
  get dirty(): boolean {
    return this.totalChanges() !== this.flushedChanges;
  }

  /**
   * Run a commit whose loss in a power cut is harmless (e.g. dropping a journaled intent that was
   * applied: replaying it again is idempotent, DESIGN §5). If everything before it was durable, the
   * log stays clean, so a following fsync issues no flush for it.
   */
  harmless(fn: () => void): void {
    const clean = !this.dirty;
    this.db.transaction(fn)();
    if (clean) this.flushedChanges = this.totalChanges();
  }

  /** Every commit made before this call is durable when it resolves (group commit). */
  flush(): Promise<void> {
    if (this.flushing === null) return this.startFlush();
    // Not started yet (see startFlush): it covers our commit.
    if (!this.syncStarted) return this.flushing;
    // The running flush may have started before our commit: share the next one.
    this.queued ??= this.flushing
      .catch(() => undefined)
      .then(() => {
        this.queued = null;
        return this.flushing ?? this.startFlush();
      });
    return this.queued;
  }

  /** A flush when something is not yet durable, else nothing (fsync of an unchanged store). */
  flushIfDirty(): Promise<void> {
    return this.dirty || this.flushing !== null ? this.flush() : Promise.resolve();
  }

  /**
   * The sync starts at the end of this event-loop turn, not at once: the fsyncs of one wake-up's
   * batch of requests log their intents first and share it. The WAL's sync may then run on this
   * thread (store/meta/commit-point.ts), which takes no new request until it returns.
   */
  private startFlush(): Promise<void> {
    this.syncStarted = false;
    this.flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => {
        this.syncStarted = true;
        const upTo = this.totalChanges();
        return this.syncWal().then(() => {
          this.flushedChanges = upTo;
          this.firstUnflushedMs = 0;
        });
      })
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }

  private async syncWal(): Promise<void> {
    const no = ++this.flushCount;
    await this.point.makeDurable();
    this.lastFlushDone = Math.max(this.lastFlushDone, no);
  }

  /** Background full commit at most FLUSH_DELAY_MS after the first unflushed commit; group commits. */
  start(delayMs = FLUSH_DELAY_MS, groupMs = GROUP_COMMIT_MS): void {
    if (this.timer !== null) return;
    this.groupCommits(groupMs);
    this.timer = setInterval(() => this.tick(delayMs), Math.min(TIMER_TICK_MS, delayMs));
    this.timer.unref();
  }

  /** Operations commit in groups of up to groupMs from now on, where the engine has them (0: each alone). */
  groupCommits(groupMs: number): void {
    if (groupMs > 0) this.point.groupCommits?.(groupMs);
  }

  private tick(delayMs: number): void {
    // A flush running covers what was committed before it; what came after waits for the next tick.
    // Queued behind it (flush()), a slow device got a second sync for nothing (the test of this timer
    // counted 2 under load).
    if (!this.dirty || this.flushing !== null) return;
    const now = Date.now();
    if (this.firstUnflushedMs === 0) this.firstUnflushedMs = now;
    // Flush one tick early: the commit may have landed just after the previous tick.
    if (now - this.firstUnflushedMs + Math.min(TIMER_TICK_MS, delayMs) >= delayMs) {
      this.flush().catch(() => undefined); // a failing disk is reported by the next fsync's flush
    }
  }

  /** After the last flush (store close): the commit point lets go of its connection. */
  close(): void {
    this.point.close?.();
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.flushing?.catch(() => undefined);
  }
}
