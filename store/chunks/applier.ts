// The applier (DESIGN §5): takes the durable intents of the backlog (store/chunks/intent-backlog.ts),
// oldest chunk first, and writes them into the shards under the chunk's inode lock:
//   - replica: every pending span of the chunk patched into every replica in place (§8.2), one
//     fdatasync per replica for all of them; then the intent rows go in a harmless commit
//     (replaying an applied intent again is idempotent, so dropping it needs no flush);
//   - EC, or a replica patch that failed on some replica: one new version of the chunk holding the
//     stored bytes with every pending span over them (copy-on-write, §8.1: EC never updates a
//     stripe in place, so many small writes to one EC chunk cost one rewrite), reserved durably
//     first, committed data first, the intents dropped in the same commit.
// A chunk whose apply fails stays in the backlog and is tried again later (its rows stay in the
// log for recovery). Unmount and recovery drain the backlog.
import { assert } from '../../src/errors';
import { crc32c } from '../../src/crc32c';
import { ChunkEnv } from './chunk-env';
import { ChunkRef, patchedInPlace } from './chunk-ref';
import { RewriteHost, removeRows, rewriteWithIntents } from './intent-rewrite';
import { PendingIntent } from './intent-backlog';
import { FsError } from '../fs-error';
import { errnoCode } from '../io/io';
import { RmwFailed, patchReplicas } from './replica-chunk';
import { foldRuns, readStoredBlocks } from './fold-runs';

/** Chunks applied at once: their fdatasyncs overlap (the disks share a device here, its journal groups them). */
const APPLY_CHUNKS_IN_FLIGHT_MAX = 8;
/**
 * A chunk's intents gather this long before it is applied (unless the backlog is half full or a drain
 * runs): every apply costs one fdatasync per replica, so fsync'd writes to the same chunks share them.
 * Measured here (fsync'd random 4 KiB writes to a 64 MiB replica:3 file): applying at once cost 4
 * device flushes per write (the intent's and 3 replicas'), so the device, not chunkfs, bounded the rate.
 * With 1000 ms, a 256 MiB file (64 chunks, as scripts/bench/bench-fio.sh writes) still cost 1.6-2.6 device
 * flushes per write (every chunk touched each second, 3 fdatasyncs each). Gathering longer lets the
 * backlog's half-full mark pace the applier instead: the oldest chunks go as it passes it, each with
 * a share of the whole backlog (16 MiB of spans) rather than of one second's writes.
 */
const APPLY_AFTER_MS = 5000;
/**
 * An EC chunk's intents gather longer: each apply rewrites the whole chunk (4 MiB read, encoded and
 * written for any number of intents). Measured: with 250 ms, fsync'd random 4 KiB writes to a 64 MiB
 * ec:4+2 file ran at 30/s, the machine busy rewriting chunks (replica:3 in the same run: 117/s).
 * With 5 s, writes at 250/s over a 256 MiB file (64 chunks) rewrote every chunk every 5 s for ~20
 * intents each; at 15 s any rate over ~100/s fills the log to REWRITE_MARK first, and the mark,
 * not the clock, paces the rewrites (the most intents per rewrite the bounds allow).
 */
const EC_APPLY_AFTER_MS = 15_000;
/**
 * Chunks rewritten whole (EC, transformed, or a replica whose patch failed) wait until the backlog
 * passes this fraction of its bounds, not half: a rewrite costs the whole chunk (read, encode and
 * write 4 MiB + parity, one fdatasync per shard) for any number of intents, so the fuller the log,
 * the fewer rewrites per write. Measured (fio fsync'd random 4 KiB writes to a 256 MiB ec:4+2
 * file, 64 chunks): at half, 16 KiB spans filled half of the 32 MiB bound at ~1,000 intents, so
 * each rewrite took ~16-23 intents. The bounds themselves (and recovery at the bound) are unchanged.
 */
const REWRITE_MARK = 0.75;
/** Chunks kick() looks at per call (it runs at every logged intent). */
const GATHER_SCAN_MAX = 64;
/** A chunk whose apply failed is tried again this much later (its disk may come back). */
const RETRY_AFTER_MS = 1000;
/** A drain ends after this many rounds even while writers keep adding (unmount has no writers). */
const DRAIN_ROUNDS_MAX = 1_000_000;

export interface ApplierHost extends RewriteHost {
  /** fn under the inode's lock with chunk c's live ref (null: a hole, or the file is gone); readers may run meanwhile. */
  withChunkApplying<T>(ino: number, chunkIndex: number, fn: (ref: ChunkRef | null) => Promise<T>): Promise<T>;
}

export class Applier {
  private running = 0;
  /** Rewrites running that joined the open transaction group and wait for its close. */
  private joined = 0;
  /** Chunks being applied now (key ino/chunk). */
  private readonly busy = new Set<string>();
  /** Pending bytes and intents of the chunks being rewritten now, when each started (gone once done). */
  private readonly rewriting = new Map<string, { bytes: number; intents: number }>();
  private rewritingBytes = 0;
  private rewritingIntents = 0;
  /** Chunks whose last apply failed: key -> when to try again (ms). */
  private readonly failing = new Map<string, number>();
  private idleWaiters: Array<() => void> = [];
  private retryTimer: NodeJS.Timeout | null = null;
  private gatherTimer: NodeJS.Timeout | null = null;
  private gatherAtMs = 0;
  private stopped = false;
  /** Nothing is applied in the background, only by drain() (StoreOpenOptions.applier false: tests, benchmarks). */
  held = false;
  private draining = false;
  /** Recovery is loading the log: start nothing until every intent of a chunk is in (one patch per chunk). */
  loading = false;
  /** Replica chunks whose patch failed on some replica: rewritten as a new version next time. */
  private readonly rewrites = new Set<string>();
  /** Chunks whose failure was logged (once until they apply). */
  private readonly logged = new Set<string>();
  private readonly started = Date.now();
  /** The last error, for status. */
  lastError = '';

  constructor(
    private readonly env: ChunkEnv,
    private readonly host: ApplierHost,
    private readonly log: (line: string) => void,
  ) {
    env.backlog.onAdd = () => this.added();
  }

  /** Applied span bytes per second since open (status). */
  get rateBytesPerSec(): number {
    return this.env.backlog.appliedBytes / Math.max(1, (Date.now() - this.started) / 1000);
  }

  /** Start applying what waits, up to APPLY_CHUNKS_IN_FLIGHT_MAX chunks at once. */
  kick(): void {
    if (this.stopped) return this.settled();
    if (this.loading || (this.held && !this.draining)) return this.settled();
    const now = Date.now();
    let scanned = 0;
    for (const next of this.env.backlog.oldestFirst()) {
      if (this.running >= APPLY_CHUNKS_IN_FLIGHT_MAX || scanned >= GATHER_SCAN_MAX) break;
      if (this.busy.has(next.key) || (this.failing.get(next.key) ?? 0) > now) continue;
      scanned++;
      const patch = this.patches(next.ino, next.chunkIndex, next.key);
      const gatherMs = patch ? APPLY_AFTER_MS : EC_APPLY_AFTER_MS;
      // A rewrite starts only while the backlog would stay over its mark without the rewrites already
      // running: each one then takes as many intents as the log holds for its chunk.
      const full = patch
        ? !this.env.backlog.belowHalf
        : !this.env.backlog.belowMark(REWRITE_MARK, this.rewritingBytes, this.rewritingIntents);
      const waitMs = this.draining || full ? 0 : next.loggedMs + gatherMs - now;
      if (waitMs > 0) {
        this.wakeIn(waitMs); // still gathering; a younger chunk of the other kind may be due
        continue;
      }
      this.start(next.ino, next.chunkIndex, next.key);
    }
    if (this.running === 0) this.settled();
  }

  /**
   * A logged intent: kick() unless it would find nothing to start. While the backlog is below half
   * and no drain runs, a new intent is due no sooner than APPLY_AFTER_MS from now, and the gather
   * timer, armed already for an earlier moment, will look at every chunk then (chunks that finish
   * or fail kick() themselves). So an fsync'd write does not scan the waiting chunks each time.
   */
  private added(): void {
    // Patches are due at half the bounds, rewrites at REWRITE_MARK (a log of rewrites only may be fuller).
    const b = this.env.backlog;
    const idle =
      !this.stopped &&
      !this.loading &&
      !this.draining &&
      (b.belowHalf || (b.inPlaceChunks === 0 && b.belowMark(REWRITE_MARK, this.rewritingBytes, this.rewritingIntents)));
    if (idle && this.gatherTimer !== null && this.gatherAtMs <= Date.now() + APPLY_AFTER_MS) return;
    this.kick();
  }

  private start(ino: number, chunkIndex: number, key: string): void {
    this.running++;
    this.busy.add(key);
    // A patch in place holds the inode's lock but lets readers go on (they read the patched blocks
    // from the backlog) when its intents cover whole blocks (rows); intent log records hold only the
    // bytes written, so readers, who would read the rest of those blocks from the shards, wait. A
    // new version holds the lock only to snapshot and to commit (store/chunks/intent-rewrite.ts).
    const patch = this.patches(ino, chunkIndex, key);
    const logged = this.env.backlog.of(ino, chunkIndex).some((i) => i.id < 0);
    if (!patch) this.noteRewriting(key, ino, chunkIndex);
    const apply = (ref: ChunkRef | null): Promise<void> => this.patchChunk(ino, chunkIndex, ref);
    const patching = (): Promise<void> =>
      logged ? this.foldLogged(ino, chunkIndex) : this.host.withChunkApplying(ino, chunkIndex, apply);
    let joined = false;
    const join = (): void => {
      joined = true;
      this.joined++;
      this.closeWhenAllJoined();
    };
    (patch ? patching() : rewriteWithIntents(this.env, this.host, ino, chunkIndex, join))
      .then(
        () => {
          this.failing.delete(key);
          this.logged.delete(key);
          this.rewrites.delete(key);
        },
        (err: unknown) => {
          this.lastError = `ino ${ino} chunk ${chunkIndex}: ${err instanceof Error ? err.message : String(err)}`;
          if (!this.logged.has(key)) this.log(`applier: ${this.lastError} (kept in the intent log, tried again)`);
          this.logged.add(key);
          this.failing.set(key, Date.now() + RETRY_AFTER_MS);
          // Nothing else is being applied and the log is full: the writers waiting for room get the
          // error (ENOSPC for a full disk) instead of waiting for a disk that may never come back.
          if (this.running === 1 && !this.env.backlog.hasRoom()) {
            const code =
              errnoCode(err) === 'ENOSPC' || (err instanceof FsError && err.code === 'ENOSPC') ? 'ENOSPC' : 'EIO';
            this.env.backlog.failWaiters(
              new FsError(
                code,
                `the intent log is full and the applier cannot write it into the shards: ${this.lastError}`,
              ),
            );
          }
        },
      )
      .finally(() => {
        this.running--;
        if (joined) this.joined--;
        this.busy.delete(key);
        this.doneRewriting(key);
        this.kick();
        this.closeWhenAllJoined();
      });
  }

  /**
   * Rewrites wait in the open transaction group for its close (DESIGN §5): once every apply running
   * waits there, a drain (unmount, recovery, a full log) or writers waiting for room close it at once,
   * one flush and one commit for all of them; else it closes on its timer or at the next fsync.
   */
  private closeWhenAllJoined(): void {
    if (this.joined === 0 || this.joined < this.running) return;
    if (this.draining || !this.env.backlog.hasRoom()) void this.env.groups.close();
  }

  /** Whether chunk c's intents are patched in place (a replica whose last patch failed is rewritten). */
  private patches(ino: number, chunkIndex: number, key: string): boolean {
    return this.env.backlog.inPlace(ino, chunkIndex) && !this.rewrites.has(key);
  }

  private noteRewriting(key: string, ino: number, chunkIndex: number): void {
    const pending = this.env.backlog.of(ino, chunkIndex);
    const r = { bytes: pending.reduce((n, i) => n + i.span.length, 0), intents: pending.length };
    this.rewriting.set(key, r);
    this.rewritingBytes += r.bytes;
    this.rewritingIntents += r.intents;
  }

  private doneRewriting(key: string): void {
    const r = this.rewriting.get(key);
    if (r === undefined) return;
    this.rewriting.delete(key);
    this.rewritingBytes -= r.bytes;
    this.rewritingIntents -= r.intents;
  }

  /** kick() again in ms (one timer: the earliest wins). */
  private wakeIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.gatherTimer !== null && this.gatherAtMs <= at) return;
    if (this.gatherTimer !== null) clearTimeout(this.gatherTimer);
    this.gatherAtMs = at;
    this.gatherTimer = setTimeout(() => {
      this.gatherTimer = null;
      this.kick();
    }, ms);
    this.gatherTimer.unref();
  }

  /** Nothing running: wake drain() if nothing can run now, and come back for failed chunks later. */
  private settled(): void {
    if (!this.stopped && this.env.backlog.lengthIntents > 0 && this.failing.size > 0 && this.retryTimer === null) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.kick();
      }, RETRY_AFTER_MS);
      this.retryTimer.unref();
    }
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Resolves when the backlog is empty, or when every chunk left failed once more since this call
   * (left in the log: recovery replays it at the next open). Unmount, recovery and tests call it.
   */
  async drain(): Promise<void> {
    this.draining = true;
    this.closeWhenAllJoined(); // rewrites that joined the open group before the drain wait for its close
    try {
      await this.drainRounds();
    } finally {
      this.draining = false;
    }
  }

  private async drainRounds(): Promise<void> {
    let stalled = 0; // rounds in a row without progress: two (a failed patch is retried as a rewrite) end it
    for (let round = 0; this.env.backlog.lengthIntents > 0 && !this.stopped && stalled < 2; round++) {
      assert(round < DRAIN_ROUNDS_MAX, 'applier drain makes no end');
      const before = this.env.backlog.lengthIntents;
      this.failing.clear(); // every chunk gets one more try now
      await new Promise<void>((resolve) => {
        this.idleWaiters.push(resolve);
        this.kick();
      });
      stalled = this.failing.size > 0 && this.env.backlog.lengthIntents >= before ? stalled + 1 : 0;
    }
  }

  /** No more work after this (the store closes). */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    if (this.gatherTimer !== null) clearTimeout(this.gatherTimer);
    this.retryTimer = null;
    this.gatherTimer = null;
  }

  /**
   * A chunk holding intent log records: the stored blocks they touch are read first, without the
   * inode's lock (writers go on); then, under the lock (readers wait: they would read the rest of
   * those blocks from the shards being patched), the fold of every record pending by then.
   */
  private async foldLogged(ino: number, chunkIndex: number): Promise<void> {
    const take = async (
      ref: ChunkRef | null,
    ): Promise<{ ref: ChunkRef | null; pending: readonly PendingIntent[] }> => ({
      ref,
      pending: this.env.backlog.of(ino, chunkIndex),
    });
    const snap = await this.host.withChunk(ino, chunkIndex, take);
    const ref = snap.ref;
    const inPlace = ref !== null && patchedInPlace(ref);
    const stored = inPlace ? await readStoredBlocks(this.env, ref, snap.pending) : undefined;
    const fold = (now: ChunkRef | null): Promise<void> =>
      this.patchChunk(ino, chunkIndex, now, now?.version === ref?.version ? stored : undefined);
    await this.host.withChunk(ino, chunkIndex, fold);
  }

  /**
   * Every pending span of a replica chunk patched into every replica (inode locked); stored: blocks
   * read before, the records laid over them in place (used up here).
   */
  private async patchChunk(
    ino: number,
    chunkIndex: number,
    ref: ChunkRef | null,
    stored?: Map<number, Buffer>,
  ): Promise<void> {
    const pending = [...this.env.backlog.of(ino, chunkIndex)];
    if (pending.length === 0) return;
    const ids = new Set(pending.map((i) => i.id));
    if (ref === null || pending.some((i) => i.version !== ref.version)) {
      // The file is gone or the chunk was replaced by a version that holds these bytes: nothing to apply.
      removeRows(this.env, ids);
      this.env.backlog.remove(ino, chunkIndex, ids, false);
      return;
    }
    for (const i of pending)
      assert(crc32c(i.span) === i.spanCrc, `intent ${i.id} span changed in memory since it was logged`);
    assert(ref.fl.layout.kind === 'replica', 'only replica chunks are patched in place');
    // The rows were committed before they entered the backlog, so one full commit makes them durable
    // (writers of this inode wait on its lock meanwhile: no unflushed intent joins the snapshot).
    if (pending.some((i) => i.unflushed)) await this.env.commits.flush();
    try {
      await patchReplicas(this.env, ref, await foldRuns(this.env, ref, pending, stored));
    } catch (err) {
      // Replicas now differ (some new, some old or torn): a fresh version supersedes them all, made
      // at the retry, under the lock that holds readers back (a drain retries at once).
      if (err instanceof RmwFailed) this.rewrites.add(`${ino}/${chunkIndex}`);
      throw err;
    }
    removeRows(this.env, ids);
    this.env.backlog.remove(ino, chunkIndex, ids, true); // log records: their space goes once the tail is durable
  }
}
