// Heal (issue 3): rebuild a chunk's bad or missing shards from the good ones through
// the same whole-shard write (spec §8.1), then verify the result by reading it back.
// The persistent heal queue is drained directly (heal()) or by a background healer
// at a bounded rate. Scrub verifies every shard of every live chunk.
import { ChunkEnv } from './chunk-env';
import { ChunkRef } from './chunk-ref';
import { rebuildPayload } from './chunk-io';
import { HealEntry } from './chunk-map';
import { FileIo } from './file-io';
import { shardCount } from './layout';
import { classifyShardError } from './shard-encode';

export interface HealReport {
  examined: number;
  healed: number; // shards rewritten and verified
  dropped: number; // entries whose shard verified again or whose chunk version is gone
  failed: Array<{ ino: number; chunkIndex: number; shardIndex: number; error: string }>;
  badCount: number; // shards a scrub found not verifying (or missing), repaired or not
  bad: Array<{ ino: number; chunkIndex: number; shardIndex: number }>; // the first BAD_LISTED_MAX of them
}

// A scrub of a badly damaged store must not grow its report without bound: the count stays exact.
const BAD_LISTED_MAX = 1_000;

const HEAL_ROUNDS_MAX = 1_000;
const HEAL_BATCH = 64;

export function emptyHealReport(): HealReport {
  return { examined: 0, healed: 0, dropped: 0, failed: [], badCount: 0, bad: [] };
}

export class Healer {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  /** refreshDisks: recheck offline disks' identity first, so a disk brought back is healed onto. */
  constructor(private readonly env: ChunkEnv, private readonly files: FileIo, private readonly refreshDisks: () => void = () => undefined) {}

  /** True when shard i reads back whole and verifies against the inode Layout. */
  private async verifies(ref: ChunkRef, i: number): Promise<boolean> {
    try {
      await this.env.shards.readWhole(ref, i);
      return true;
    } catch (err) {
      if (classifyShardError(err) === null) throw err;
      return false;
    }
  }

  /** Rebuild shard i of ref and verify it; throws when it cannot. */
  private async rebuild(ref: ChunkRef, i: number): Promise<void> {
    const payload = await rebuildPayload(this.env, ref, i);
    await this.env.shards.writeShard(ref, i, payload);
    this.env.health.ok(ref.diskIds[i]);
    const back = await this.env.shards.readWhole(ref, i);
    if (!back.equals(payload)) throw new Error(`healed shard ${i} did not read back as written`);
    this.env.counters.bump('heals');
  }

  private async healOne(e: HealEntry, report: HealReport): Promise<void> {
    report.examined++;
    await this.files.withChunk(e.ino, e.chunkIndex, async (ref) => {
      if (ref === null || ref.version !== e.version || e.shardIndex >= ref.diskIds.length) {
        this.env.map.unqueueHeal(e);
        report.dropped++;
        return;
      }
      try {
        if (await this.verifies(ref, e.shardIndex)) {
          report.dropped++;
        } else {
          await this.rebuild(ref, e.shardIndex);
          report.healed++;
        }
        this.env.map.unqueueHeal(e);
      } catch (err) {
        this.env.map.noteHealAttempt(e);
        this.env.counters.bump('heal_failures');
        report.failed.push({ ino: e.ino, chunkIndex: e.chunkIndex, shardIndex: e.shardIndex, error: (err as Error).message });
      }
    });
  }

  /** Drain the heal queue (entries that fail stay queued with attempts+1). */
  async heal(entriesMax = Number.MAX_SAFE_INTEGER): Promise<HealReport> {
    this.refreshDisks();
    const report = emptyHealReport();
    const tried = new Set<string>();
    for (let round = 0; round < HEAL_ROUNDS_MAX && report.examined < entriesMax; round++) {
      const batch = this.env.map.healBatch(HEAL_BATCH + tried.size)
        .filter((e) => !tried.has(`${e.ino}/${e.chunkIndex}/${e.version}/${e.shardIndex}`))
        .slice(0, Math.min(HEAL_BATCH, entriesMax - report.examined));
      if (batch.length === 0) break;
      for (const e of batch) {
        tried.add(`${e.ino}/${e.chunkIndex}/${e.version}/${e.shardIndex}`);
        await this.healOne(e, report);
      }
    }
    return report;
  }

  /** Verify every shard of one chunk; rebuild the bad ones when repair is set. */
  async healChunk(ino: number, chunkIndex: number, repair = true): Promise<HealReport> {
    const report = emptyHealReport();
    await this.files.withChunk(ino, chunkIndex, async (ref) => {
      if (ref === null) return;
      for (let i = 0; i < shardCount(ref.fl.layout); i++) {
        report.examined++;
        if (await this.verifies(ref, i)) continue;
        this.env.map.queueHeal(ino, chunkIndex, ref.version, i, 'scrub: shard does not verify');
        report.badCount++;
        if (report.bad.length < BAD_LISTED_MAX) report.bad.push({ ino, chunkIndex, shardIndex: i });
        if (!repair) continue;
        try {
          await this.rebuild(ref, i);
          this.env.map.unqueueHeal({ ino, chunkIndex, version: ref.version, shardIndex: i });
          report.healed++;
        } catch (err) {
          this.env.counters.bump('heal_failures');
          report.failed.push({ ino, chunkIndex, shardIndex: i, error: (err as Error).message });
        }
      }
    });
    return report;
  }

  /** Scrub: verify (and with repair, rebuild) every shard of every live chunk. */
  async scrub(repair: boolean): Promise<HealReport> {
    this.refreshDisks();
    const total = emptyHealReport();
    const rows = this.env.db.prepare('SELECT ino, chunk_index FROM chunks WHERE version > 0 ORDER BY ino, chunk_index').all() as Array<{ ino: bigint; chunk_index: bigint }>;
    for (const r of rows) {
      const one = await this.healChunk(Number(r.ino), Number(r.chunk_index), repair);
      total.examined += one.examined;
      total.healed += one.healed;
      total.failed.push(...one.failed);
      total.badCount += one.badCount;
      total.bad.push(...one.bad.slice(0, BAD_LISTED_MAX - total.bad.length));
    }
    return total;
  }

  /** Background healer: at most entriesPerSecond queue entries per second. */
  start(entriesPerSecond = 16): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => {
      if (this.running !== null || this.env.map.healQueueLength() === 0) return;
      this.running = this.heal(entriesPerSecond).then(() => undefined, () => undefined).finally(() => (this.running = null));
    }, 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.running !== null) await this.running;
  }
}
