// Shared context of the chunk I/O modules, and the one place that records a shard
// failure that was served around: counted, and queued for heal persistently (DESIGN §6).
import { ChunkMap } from '../meta/chunk-map';
import type { DecodedChunks } from './chunk-transform';
import { CommitLog } from '../meta/commit-log';
import { FileRows } from '../meta/file-rows';
import { ReclaimQueue } from '../meta/reclaim-queue';
import { InflightVersions } from './inflight-versions';
import type { TxGroups } from './tx-group';
import { ChunkRef } from './chunk-ref';
import { IntentBacklog } from './intent-backlog';
import type { IntentLog } from './intent-log';
import { CounterName, Counters } from '../meta/counters';
import { Db } from '../meta/meta';
import { ShardStore } from './shard-store';
import { ShardFailure, classifyShardError } from './shard-encode';

/** Per-disk error tally for status(); placement never depends on it (DESIGN §3). */
export class DiskHealth {
  private readonly errors = new Map<number, { consecutive: number; total: number; last: string; lastMs: number }>();
  /** Disks that must not be touched at all (missing or foreign identity, store/disk-identity.ts): id -> reason. */
  private readonly unavailableReasons = new Map<number, string>();
  static readonly OFFLINE_AFTER = 8;
  /** An offline disk is probed again after this long (so a disk that comes back is used again). */
  static readonly PROBE_AFTER_MS = 5_000;

  /** Told when a disk fails a call or goes offline or comes back: read grants end (fs/fuse/read-grants.ts). */
  onChange: () => void = () => undefined;

  fail(diskId: number, what: string): void {
    this.onChange();
    const e = this.errors.get(diskId) ?? { consecutive: 0, total: 0, last: '', lastMs: 0 };
    e.consecutive++;
    e.total++;
    e.last = what;
    e.lastMs = Date.now();
    this.errors.set(diskId, e);
  }
  ok(diskId: number): void {
    const e = this.errors.get(diskId);
    if (e !== undefined) e.consecutive = 0;
  }
  /** Offline until its identity checks again; every shard operation on it is refused. */
  setUnavailable(diskId: number, reason: string): void {
    this.unavailableReasons.set(diskId, reason);
    this.onChange();
  }
  setAvailable(diskId: number): void {
    this.unavailableReasons.delete(diskId);
    this.onChange();
    this.ok(diskId);
  }
  /** Why the disk is unavailable, or undefined when it may be used. */
  unavailable(diskId: number): string | undefined {
    return this.unavailableReasons.get(diskId);
  }
  /** A disk that failed many calls in a row is tried last (it keeps its placement slot). */
  suspect(diskId: number): boolean {
    if (this.unavailableReasons.has(diskId)) return true;
    const e = this.errors.get(diskId);
    if (e === undefined || e.consecutive < DiskHealth.OFFLINE_AFTER) return false;
    if (Date.now() - e.lastMs < DiskHealth.PROBE_AFTER_MS) return true;
    e.lastMs = Date.now(); // let one probe through; its failure renews the offline period
    return false;
  }
  report(diskId: number): { state: 'ok' | 'degraded' | 'offline'; errors: number; lastError: string } {
    const e = this.errors.get(diskId);
    const reason = this.unavailableReasons.get(diskId);
    if (reason !== undefined) return { state: 'offline', errors: e?.total ?? 0, lastError: reason };
    if (e === undefined) return { state: 'ok', errors: 0, lastError: '' };
    const state = e.consecutive >= DiskHealth.OFFLINE_AFTER ? 'offline' : e.consecutive > 0 ? 'degraded' : 'ok';
    return { state, errors: e.total, lastError: e.last };
  }
}

export interface ChunkEnv {
  db: Db;
  shards: ShardStore;
  map: ChunkMap;
  /** What storing bytes changes in an inode row (size, times); internal files. */
  fileRows: FileRows;
  counters: Counters;
  health: DiskHealth;
  /** Full (flushed) commits of the metadata, group-committed (DESIGN §5). */
  commits: CommitLog;
  /** Chunk versions whose shards are to be deleted in the background (DESIGN §5). */
  reclaim: ReclaimQueue;
  /** Versions reserved by writes still in flight: queued for reclaim, not yet reclaimable. */
  inflight: InflightVersions;
  /** Intents durable in the log and not yet in the shards; every chunk read overlays them (DESIGN §5). */
  backlog: IntentBacklog;
  /** SQLite stores: the intent log file that fsync'd replica patches go to (null: intents are metadata rows). */
  intentLog: IntentLog | null;
  /** The key of encrypted layouts (store/store-key.ts); null when the store has none. */
  storeKey: Buffer | null;
  /** Transaction groups of whole-chunk writes (DESIGN §5). */
  groups: TxGroups;
  /** Decoded transformed chunks, for small reads (store/chunks/chunk-transform.ts). */
  decoded: DecodedChunks;
}

const FAILURE_COUNTER: Record<ShardFailure, CounterName> = {
  bitrot: 'bitrot_errors',
  missing: 'missing_shards',
  header: 'header_mismatches',
  io: 'io_errors',
};

/**
 * Queue a damaged shard for heal; its kind's counter counts it once, when it is newly queued (not
 * at every read that meets it again before the healer has rebuilt it).
 */
export function queueDamagedShard(
  env: ChunkEnv,
  ref: ChunkRef,
  shardIndex: number,
  kind: ShardFailure,
  reason: string,
): void {
  env.db.transaction(() => {
    const isNew = env.map.queueHeal(ref.ino, ref.chunkIndex, ref.version, shardIndex, reason);
    if (isNew) env.counters.bump(FAILURE_COUNTER[kind]);
  })();
}

/** Record a shard that failed a read; rethrows errors that are not about the shard (bugs). */
export function noteShardFailure(env: ChunkEnv, ref: ChunkRef, shardIndex: number, err: unknown): ShardFailure {
  const kind = classifyShardError(err);
  if (kind === null) throw err;
  const message = err instanceof Error ? err.message : String(err);
  if (kind === 'io') env.health.fail(ref.diskIds[shardIndex], message);
  queueDamagedShard(env, ref, shardIndex, kind, `${kind}: ${message}`);
  return kind;
}

/** A read served without one of the shards it would read first (failed, or on a disk offline or suspect). */
export function noteServedAround(env: ChunkEnv): void {
  env.counters.bumpBatched('reads_served_around');
}

/** Replica/shard order for reads: the placement order, suspect disks last. */
export function readOrder(env: ChunkEnv, ref: ChunkRef, indices: number[]): number[] {
  const good = indices.filter((i) => !env.health.suspect(ref.diskIds[i]));
  const bad = indices.filter((i) => env.health.suspect(ref.diskIds[i]));
  return [...good, ...bad];
}
