// Background reclaim (DESIGN §5): unlink, truncate and copy-on-write only change metadata; the chunk
// versions they free go on a persistent queue (table `reclaim`, owned by ReclaimQueue), and the
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
// starts with one group-committed flush (issue 25: files that came back without their shards).
import { assert } from '../../src/errors';
import { ChunkEnv } from '../chunks/chunk-env';
import { FileLayout } from '../chunks/chunk-ref';
import { parseLayout, shardCount } from '../chunks/layout';
import { Db, dbToU64, nowNs, u64ToDb } from '../meta/meta';
import { boundedAll } from '../chunks/bounded';

/** Entries one reclaim round takes. */
export const RECLAIM_BATCH_MAX = 32;
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
 * (issue 15 item 10); below this the 100 ms pause keeps the disks for foreground requests.
 */
export const RECLAIM_BACKLOG_HURRY = 256;
/** Rounds of one drain() call (a bound on the loop; the queue is finite anyway). */
const DRAIN_ROUNDS_MAX = 1 << 20;

export interface ReclaimEntry {
  ino: number;
  chunkIndex: number;
  version: bigint;
  layout: string;
  placementSeed: bigint;
  clusterMapEpoch: number;
}

type Row = Record<string, bigint | string>;

function entryOf(r: Row): ReclaimEntry {
  return {
    ino: Number(r.ino), chunkIndex: Number(r.chunk_index), version: BigInt(r.version), layout: String(r.layout),
    placementSeed: dbToU64(r.placement_seed as bigint), clusterMapEpoch: Number(r.cluster_map_epoch),
  };
}

/** The one owner of table `reclaim`. Callers group its changes with theirs in one transaction. */
export class ReclaimQueue {
  private readonly s;
  constructor(db: Db) {
    this.s = {
      add: db.prepare(`INSERT INTO reclaim(ino, chunk_index, version, layout, placement_seed, cluster_map_epoch, queued_ns)
                       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
      remove: db.prepare('DELETE FROM reclaim WHERE ino = ? AND chunk_index = ? AND version = ?'),
      batch: db.prepare('SELECT * FROM reclaim ORDER BY queued_ns LIMIT ?'),
      all: db.prepare('SELECT * FROM reclaim'),
      count: db.prepare('SELECT count(*) AS n FROM reclaim'),
      has: db.prepare('SELECT 1 FROM reclaim WHERE ino = ? AND chunk_index = ? AND version = ?'),
    };
  }
  add(ino: number, chunkIndex: number, version: bigint, fl: FileLayout): void {
    assert(version > 0n, 'reclaim: a real version');
    this.s.add.run(ino, chunkIndex, version, fl.layout.text, u64ToDb(fl.placementSeed), fl.clusterMapEpoch, nowNs());
  }
  remove(ino: number, chunkIndex: number, version: bigint): void {
    this.s.remove.run(ino, chunkIndex, version);
  }
  batch(limit: number): ReclaimEntry[] {
    return (this.s.batch.all(Math.min(limit, RECLAIM_BATCH_MAX)) as Row[]).map(entryOf);
  }
  /** Every queued entry (scrub's leak scan; the queue is small next to the chunk map it scans too). */
  *all(): Iterable<ReclaimEntry> {
    for (const r of this.s.all.iterate() as Iterable<Row>) yield entryOf(r);
  }
  has(ino: number, chunkIndex: number, version: bigint): boolean {
    return this.s.has.get(ino, chunkIndex, version) !== undefined;
  }
  get length(): number {
    return Number((this.s.count.get() as { n: bigint }).n);
  }
}

/** Versions reserved by writes in flight in this process: queued, but not to be reclaimed yet. */
export class InflightVersions {
  private readonly keys = new Set<string>();
  private static key(ino: number, chunkIndex: number, version: bigint): string {
    return `${ino}/${chunkIndex}/${version}`;
  }
  add(ino: number, chunkIndex: number, version: bigint): void {
    this.keys.add(InflightVersions.key(ino, chunkIndex, version));
  }
  delete(ino: number, chunkIndex: number, version: bigint): void {
    this.keys.delete(InflightVersions.key(ino, chunkIndex, version));
  }
  has(ino: number, chunkIndex: number, version: bigint): boolean {
    return this.keys.has(InflightVersions.key(ino, chunkIndex, version));
  }
}

export interface ReclaimReport {
  versionsDeleted: number;
  /** Entries dropped without deleting: the chunk map points at that version (it was committed). */
  keptLive: number;
  failures: number;
}

/** Disk ids of a chunk's shards (store/chunks/placement.ts through store/chunks/file-io.ts). */
export type Placement = (seed: bigint, epoch: number, chunkIndex: number, count: number) => readonly number[];

export class Reclaimer {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(private readonly env: ChunkEnv, private readonly placement: Placement) {}

  /**
   * One round: at most RECLAIM_BATCH_MAX entries. Free last (DESIGN §5): an entry may have been
   * queued by a commit that is not durable yet (an unlink, truncate, copy-on-write or compaction a
   * power loss can still roll back, with the old version live again), so the round makes every
   * commit so far durable before it deletes anything: one group-committed flush per round, shared
   * with the fsyncs and the commit timer, never one per unlink.
   */
  private async round(report: ReclaimReport): Promise<number> {
    const { map, reclaim, inflight } = this.env;
    const entries = reclaim.batch(RECLAIM_BATCH_MAX).filter((e) => !inflight.has(e.ino, e.chunkIndex, e.version));
    if (entries.length === 0) return 0;
    // Judged now, before the flush: a version that is neither live nor in flight never becomes live
    // again (versions are never reused), so the flush below covers the commit that freed it.
    const live = entries.filter((e) => map.get(e.ino, e.chunkIndex)?.version === e.version);
    const freed = entries.filter((e) => !live.includes(e));
    report.keptLive += live.length; // committed after all: never delete what the chunk map points at
    const done: ReclaimEntry[] = [...live];
    const durable = freed.length > 0 && await this.flushed();
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
    if (done.length > 0) this.env.commits.harmless(() => { for (const e of done) reclaim.remove(e.ino, e.chunkIndex, e.version); });
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
      this.running = this.round(report).catch(() => 0).then((taken) => {
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
