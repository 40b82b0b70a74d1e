// Background reclaim (DESIGN §5): unlink, truncate and copy-on-write only change metadata; the chunk
// versions they free go on a persistent queue (table `reclaim`, store/meta/reclaim-queue.ts), and the
// Reclaimer deletes their shard files in the background, rate-limited and resumable after a crash.
// So `rm -rf` never waits on shard deletion.
//
// A version is also queued when it is reserved for a write, before any shard of it exists, in the
// same durable commit that reserves it; the write's commit takes it off the queue again. So shards
// of a write that a crash cut off (or whose commit a power loss lost) are reclaimed too, and no
// directory walk at open is needed to find them. The reclaimer never deletes a version that the
// chunk map points at, nor one whose write is still in flight in this process.
//
// Free last, the mirror of data first (DESIGN §5): shards are deleted only once the commit that
// freed them is durable. Unlink, truncate and copy-on-write commit without a flush (synchronous=NORMAL),
// so until the next full commit a power loss can bring the old version back; each round therefore
// starts with one group-committed flush (files that came back without their shards).
import { ChunkEnv } from '../chunks/chunk-env';
import { parseLayout, shardCount } from '../../src/layout';
import { RECLAIM_BATCH_MAX, ReclaimEntry } from '../meta/reclaim-queue';
import { boundedAll } from '../chunks/bounded';
import { repliesRead } from '../meta/replies-read';

/** Chunk versions deleted at once within a round. */
const RECLAIM_CONCURRENCY = 4;
/**
 * Pause between rounds, the reclaimer's rate limit: at most 32 versions per 100 ms (about 1,000
 * shard files a second for replica:3), so a big `rm -rf` drains in the background without taking
 * the disks and the thread pool from foreground requests; none past RECLAIM_BACKLOG_HURRY.
 */
const RECLAIM_PAUSE_MS = 100;
/**
 * Backlog (queued versions) past which the reclaimer stops pausing between rounds: each queued
 * version holds up to a chunk per shard (12 MiB for replica:3 and 4 MiB chunks), so 256 of them are
 * ~3 GiB of disk. Under a multi-process stress the writes free versions faster than 320 a second
 *; below this the 100 ms pause keeps the disks for foreground requests.
 */
export const RECLAIM_BACKLOG_HURRY = 256;
/** Rounds of one drain() call (a bound on the loop; the queue is finite anyway). */
const DRAIN_ROUNDS_MAX = 1 << 20;

export interface ReclaimReport {
  versionsDeleted: number;
  /** Entries dropped without deleting: the chunk map points at that version (it was committed). */
  keptLive: number;
  failures: number;
}

/** Disk ids of a chunk's shards (store/chunks/placement.ts through store/file-io.ts). */
export type Placement = (seed: bigint, epoch: number, chunkIndex: number, count: number) => readonly number[];

export class Reclaimer {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(
    private readonly env: ChunkEnv,
    private readonly placement: Placement,
  ) {}

  /**
   * One round: at most RECLAIM_BATCH_MAX entries. Free last (DESIGN §5): an entry may have been
   * queued by a commit that is not durable yet (an unlink, truncate, copy-on-write or compaction a
   * power loss can still roll back, with the old version live again), so the round makes every
   * commit so far durable before it deletes anything: one group-committed flush per round, shared
   * with the fsyncs and the commit timer, never one per unlink.
   */
  private async round(report: ReclaimReport): Promise<number> {
    const { map, reclaim, inflight } = this.env;
    // Outside any request: the queue is read once every reply is, not blocking the thread behind
    // operations answered once sent (DESIGN §9 "PostgreSQL round trips").
    await repliesRead(this.env.db);
    const entries = reclaim.batch(RECLAIM_BATCH_MAX).filter((e) => !inflight.has(e.ino, e.chunkIndex, e.version));
    if (entries.length === 0) return 0;
    // Judged now, before the flush: a version that is neither live nor in flight never becomes live
    // again (versions are never reused), so the flush below covers the commit that freed it.
    const live = entries.filter((e) => map.get(e.ino, e.chunkIndex)?.version === e.version);
    const freed = entries.filter((e) => !live.includes(e));
    report.keptLive += live.length; // committed after all: never delete what the chunk map points at
    const done: ReclaimEntry[] = [...live];
    const durable = freed.length > 0 && (await this.flushed());
    if (!durable) report.failures += freed.length; // the metadata device failing: all stay queued
    await boundedAll(durable ? freed : [], RECLAIM_CONCURRENCY, async (e) => {
      if (!(await this.deleteShards(e))) {
        report.failures++;
        return; // a disk failing: stays queued for a later round
      }
      report.versionsDeleted++;
      done.push(e);
    });
    // Losing this commit is harmless: the entries come back and deleting again finds nothing.
    if (done.length > 0)
      this.env.commits.harmless(() => {
        for (const e of done) reclaim.remove(e.ino, e.chunkIndex, e.version);
      });
    return entries.length;
  }

  /** Every commit so far durable (DESIGN §5 free last); false when the flush failed. */
  private async flushed(): Promise<boolean> {
    try {
      await this.env.commits.flushIfDirty();
      return true;
    } catch {
      return false;
    }
  }

  private async deleteShards(e: ReclaimEntry): Promise<boolean> {
    const count = shardCount(parseLayout(e.layout));
    const diskIds = this.placement(e.placementSeed, e.clusterMapEpoch, e.chunkIndex, count);
    const site = { fileId: BigInt(e.ino), chunkIndex: e.chunkIndex, version: e.version, diskIds };
    return (await this.env.shards.deleteChunk(site, count)) === 0;
  }

  /** Reclaim until the queue holds nothing this process may delete (tests, unmount, fsck). */
  async drain(): Promise<ReclaimReport> {
    const report: ReclaimReport = { versionsDeleted: 0, keptLive: 0, failures: 0 };
    for (let r = 0; r < DRAIN_ROUNDS_MAX; r++) {
      const failuresBefore = report.failures;
      const taken = await this.round(report);
      if (taken === 0 || report.failures - failuresBefore === taken) break; // empty, or only failing entries left
    }
    return report;
  }

  /** Background: rounds with a pause between them while the queue has work. */
  start(): void {
    if (this.timer !== null) return;
    this.stopped = false;
    const loop = (): void => {
      if (this.stopped) return;
      const report: ReclaimReport = { versionsDeleted: 0, keptLive: 0, failures: 0 };
      this.running = this.round(report)
        .catch(() => 0)
        .then((taken) => {
          this.running = null;
          if (this.stopped) return;
          const busy = taken > 0 && report.failures < taken;
          this.timer = setTimeout(loop, busy ? this.pauseMs() : RECLAIM_IDLE_MS);
          this.timer.unref();
        });
    };
    this.timer = setTimeout(loop, RECLAIM_PAUSE_MS);
    this.timer.unref();
  }

  /** The pause after a busy round: none while the backlog holds more than RECLAIM_BACKLOG_HURRY versions. */
  pauseMs(): number {
    return this.env.reclaim.length > RECLAIM_BACKLOG_HURRY ? 0 : RECLAIM_PAUSE_MS;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}

/** With nothing (or only failing entries) queued, look again this often. */
const RECLAIM_IDLE_MS = 500;
