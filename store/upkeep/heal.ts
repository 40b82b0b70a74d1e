// Heal: rebuild a chunk's bad or missing shards from the good ones through
// the same whole-shard write (spec §8.1), then verify the result by reading it back.
// The persistent heal queue is drained directly (heal(), `chunkfs heal`) or by a background
// healer at a bounded rate, which backs off per shard (store/upkeep/heal-backoff.ts). Scrub
// (store/upkeep/scrub.ts) verifies every shard of every live chunk through healChunk.
import { ChunkEnv, queueDamagedShard } from '../chunks/chunk-env';
import { HealBackoff } from './heal-backoff';
import { ChunkRef } from '../chunks/chunk-ref';
import { rebuildPayload } from '../chunks/chunk-io';
import { HealEntry } from '../meta/chunk-map';
import { FileIo } from '../file-io';
import { repliesRead } from '../meta/replies-read';
import { Layout, dataShardCount, shardCount } from '../../src/layout';
import { ShardFailure, classifyShardError } from '../chunks/shard-encode';
import { TagFailures, tagCheckable, tagFailures, tagOk } from './tag-check';

export interface HealReport {
  examined: number;
  healed: number; // shards rewritten and verified
  dropped: number; // entries whose shard verified again or whose chunk version is gone
  failed: Array<{ ino: number; chunkIndex: number; shardIndex: number; error: string }>;
  badCount: number; // shards a scrub found not verifying (or missing), repaired or not
  bad: Array<{ ino: number; chunkIndex: number; shardIndex: number }>; // the first BAD_LISTED_MAX of them
  /** Queue entries the background healer left for later: their backoff had not run out. */
  deferred: number;
  /** The pass stopped early (its caller went away). */
  cancelled: boolean;
}

/** Heal queue entries done of those there were (chunkfs heal's progress). */
export interface HealProgress {
  doneItems: number;
  totalItems: number;
}

export interface HealOptions {
  onProgress?(p: HealProgress): void;
  signal?: AbortSignal;
  /** Skip entries still backing off (the background healer); explicit heals try everything. */
  honourBackoff?: boolean;
}

// A scrub of a badly damaged store must not grow its report without bound: the count stays exact.
export const BAD_LISTED_MAX = 1_000;
/** Failures listed in a report; heal_failures counts them all. */
const FAILED_LISTED_MAX = 1_000;

const HEAL_ROUNDS_MAX = 1_000;
const HEAL_BATCH = 64;
/** Queue entries one pass looks at, tried or deferred: a queue of backed-off entries costs bounded reads per pass. */
const HEAL_CONSIDERED_MAX = 4_096;

/** Why a chunk with these bad shards cannot be read or rebuilt, in words. */
function beyondRedundancy(layout: Layout, badShards: number[]): string {
  const n = shardCount(layout);
  return layout.kind === 'replica'
    ? `no replica verifies (all ${n} bad or missing): the chunk is lost unless a disk comes back`
    : `${badShards.length} of ${n} shards bad or missing, more than the ${n - dataShardCount(layout)} parity shards rebuild: ` +
        'the chunk is lost unless a disk comes back';
}

export function emptyHealReport(): HealReport {
  return { examined: 0, healed: 0, dropped: 0, failed: [], badCount: 0, bad: [], deferred: 0, cancelled: false };
}

export class Healer {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  readonly backoff: HealBackoff;

  /** refreshDisks: recheck offline disks' identity first, so a disk brought back is healed onto. pathOf: a file's path for log lines. */
  constructor(
    private readonly env: ChunkEnv,
    private readonly files: FileIo,
    private readonly refreshDisks: () => void = () => undefined,
    log: (line: string) => void = () => undefined,
    private readonly pathOf: (ino: number) => string | null = () => null,
  ) {
    this.backoff = new HealBackoff(log);
  }

  /** "file 12 (/dir/f) chunk 0 shard 1" for log lines. */
  private describe(e: { ino: number; chunkIndex: number; shardIndex: number }): string {
    const path = this.pathOf(e.ino);
    return `file ${e.ino}${path === null ? '' : ` (${path})`} chunk ${e.chunkIndex} shard ${e.shardIndex}`;
  }

  private noteFailure(
    report: HealReport,
    f: { ino: number; chunkIndex: number; shardIndex: number; error: string },
  ): void {
    this.env.counters.bump('heal_failures');
    if (report.failed.length < FAILED_LISTED_MAX) report.failed.push(f);
  }

  /**
   * True when shard i reads back whole and verifies against the inode Layout, and is not among
   * tagBad (the shards of an encrypted chunk whose bytes fail the GCM tag, store/upkeep/tag-check.ts).
   */
  private async verifies(ref: ChunkRef, i: number, tagBad: TagFailures): Promise<boolean> {
    return (await this.damage(ref, i, tagBad)) === null;
  }

  /** How shard i fails to verify (a GCM tag failure counts as bitrot), or null when it verifies. */
  private async damage(ref: ChunkRef, i: number, tagBad: TagFailures): Promise<ShardFailure | null> {
    try {
      await this.env.shards.readWhole(ref, i);
      return tagBad.shards.has(i) ? 'bitrot' : null;
    } catch (err) {
      const kind = classifyShardError(err);
      if (kind === null) throw err;
      return kind;
    }
  }

  /** Rebuild shard i of ref and verify it; throws when it cannot. A replica is copied from one whose tag checks. */
  private async rebuild(ref: ChunkRef, i: number): Promise<void> {
    const accept = tagCheckable(this.env, ref) ? (p: Buffer): boolean => tagOk(this.env, ref, p) : undefined;
    const payload = await rebuildPayload(this.env, ref, i, accept);
    await this.env.shards.writeShard(ref, i, payload);
    this.env.health.ok(ref.diskIds[i]);
    const back = await this.env.shards.readWhole(ref, i);
    if (!back.equals(payload)) throw new Error(`healed shard ${i} did not read back as written`);
    await this.settled();
    this.env.counters.bump('heals');
  }

  /**
   * Every reply to operations answered once sent is read, without blocking (DESIGN §9 "PostgreSQL
   * round trips"): a pass reads and writes the metadata after each await, when requests may have
   * been answered meanwhile, and a read (or a write outside a transaction) would wait for them
   * holding the thread. Each one comes at once after this resolves.
   */
  private readonly settled = (): Promise<void> => repliesRead(this.env.db);

  private async healOne(e: HealEntry, report: HealReport): Promise<void> {
    report.examined++;
    await this.files.withChunk(
      e.ino,
      e.chunkIndex,
      async (ref) => {
        if (ref === null || ref.version !== e.version || e.shardIndex >= ref.diskIds.length) {
          this.env.map.unqueueHeal(e);
          report.dropped++;
          return;
        }
        await this.healShard(e, ref, report);
      },
      this.settled,
    );
  }

  /** Shard e.shardIndex of ref verified, or rebuilt; the entry unqueued, or its attempt noted. */
  private async healShard(e: HealEntry, ref: ChunkRef, report: HealReport): Promise<void> {
    try {
      if (await this.verifies(ref, e.shardIndex, await tagFailures(this.env, ref))) {
        report.dropped++;
      } else {
        await this.rebuild(ref, e.shardIndex);
        report.healed++;
      }
      await this.settled();
      this.env.map.unqueueHeal(e);
      this.backoff.succeeded(e, this.describe(e));
    } catch (err) {
      await this.settled();
      this.env.map.noteHealAttempt(e);
      const error = (err as Error).message;
      this.noteFailure(report, { ino: e.ino, chunkIndex: e.chunkIndex, shardIndex: e.shardIndex, error });
      this.backoff.failed(e, this.describe(e), error);
    }
  }

  /** Drain the heal queue (entries that fail stay queued with attempts+1). */
  async heal(entriesMax = Number.MAX_SAFE_INTEGER, opts: HealOptions = {}): Promise<HealReport> {
    this.refreshDisks();
    const report = emptyHealReport();
    const tried = new Set<string>();
    const totalItems = Math.min(entriesMax, this.env.map.healQueueLength());
    for (
      let round = 0;
      round < HEAL_ROUNDS_MAX && report.examined < entriesMax && tried.size < HEAL_CONSIDERED_MAX;
      round++
    ) {
      await this.settled(); // the rounds after the first come after awaits
      const batch = this.env.map
        .healBatch(HEAL_BATCH + tried.size)
        .filter((e) => !tried.has(`${e.ino}/${e.chunkIndex}/${e.version}/${e.shardIndex}`))
        .slice(0, Math.min(HEAL_BATCH, entriesMax - report.examined));
      if (batch.length === 0) break;
      for (const e of batch) {
        if (opts.signal?.aborted === true) return { ...report, cancelled: true };
        tried.add(`${e.ino}/${e.chunkIndex}/${e.version}/${e.shardIndex}`);
        if (opts.honourBackoff === true && !this.backoff.due(e)) {
          report.deferred++;
          continue;
        }
        await this.healOne(e, report);
        opts.onProgress?.({ doneItems: report.examined, totalItems: Math.max(totalItems, report.examined) });
      }
    }
    return report;
  }

  /**
   * Verify every shard of one chunk; rebuild the bad ones when repair is set. onlyDisk: just the
   * shard placed on that disk (replace-disk rebuilds onto a new disk).
   */
  async healChunk(ino: number, chunkIndex: number, repair = true, onlyDisk?: number): Promise<HealReport> {
    const report = emptyHealReport();
    await this.files.withChunk(ino, chunkIndex, async (ref) => {
      if (ref === null) return;
      const tagBad = await tagFailures(this.env, ref);
      if (tagBad.unexplained) {
        this.noteFailure(report, {
          ino,
          chunkIndex,
          shardIndex: -1,
          error:
            'the payload fails its GCM tag and no single shard explains it (more shards damaged than parity, or a wrong key)',
        });
      }
      const badShards: number[] = [];
      for (let i = 0; i < shardCount(ref.fl.layout); i++) {
        if (onlyDisk !== undefined && ref.diskIds[i] !== onlyDisk) continue;
        report.examined++;
        const kind = await this.damage(ref, i, tagBad);
        if (kind === null) continue;
        const why = tagBad.shards.has(i)
          ? 'scrub: hashes pass but the GCM tag fails'
          : `scrub: ${kind}: shard does not verify`;
        queueDamagedShard(this.env, ref, i, kind, why);
        report.badCount++;
        badShards.push(i);
        if (report.bad.length < BAD_LISTED_MAX) report.bad.push({ ino, chunkIndex, shardIndex: i });
        if (!repair) continue;
        try {
          await this.rebuild(ref, i);
          this.env.map.unqueueHeal({ ino, chunkIndex, version: ref.version, shardIndex: i });
          report.healed++;
        } catch (err) {
          this.noteFailure(report, { ino, chunkIndex, shardIndex: i, error: (err as Error).message });
        }
      }
      // A verify-only scrub tries no rebuild, yet a chunk with fewer good shards than a read needs
      // is lost now: said so, shard by shard as a repair would (DESIGN §7 scrub).
      const good = shardCount(ref.fl.layout) - badShards.length;
      if (!repair && onlyDisk === undefined && !tagBad.unexplained && good < dataShardCount(ref.fl.layout)) {
        const error = beyondRedundancy(ref.fl.layout, badShards);
        for (const i of badShards.slice(0, Math.max(0, FAILED_LISTED_MAX - report.failed.length))) {
          report.failed.push({ ino, chunkIndex, shardIndex: i, error });
        }
      }
    });
    return report;
  }

  /** Before a scrub: offline disks that came back are healed onto. */
  prepareScrub(): void {
    this.refreshDisks();
  }

  /** Background healer: at most entriesPerSecond queue entries per second, each shard backing off on failure. */
  start(entriesPerSecond = 16): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => {
      if (this.running !== null) return;
      this.running = this.tick(entriesPerSecond).finally(() => (this.running = null));
    }, 1000);
    this.timer.unref();
  }

  /**
   * One look at the queue, and a pass when it holds entries. The look waits for the replies to
   * operations answered once sent (DESIGN §9 "PostgreSQL round trips"): blocking behind them, the
   * tick held every request while the server could not run them.
   */
  private async tick(entriesPerSecond: number): Promise<void> {
    await repliesRead(this.env.db);
    if (this.queueEmpty()) return;
    await this.heal(entriesPerSecond, { honourBackoff: true }).catch(() => undefined);
  }

  /**
   * Whether the background healer has nothing to do. A metadata database that cannot be read (the
   * PostgreSQL server restarting, DESIGN §9) counts as empty: the next tick looks again; thrown from
   * the timer it was an uncaught exception every second while the server was away.
   */
  private queueEmpty(): boolean {
    try {
      return this.env.map.healQueueLength() === 0;
    } catch {
      return true;
    }
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.running !== null) await this.running;
  }
}
