// Table `reclaim` (DESIGN §5), owned by ReclaimQueue: the chunk versions whose shard files are to be
// deleted in the background (store/upkeep/reclaim.ts deletes them, free last). Persistent, so a
// crash loses no version to delete, and no directory walk at open is needed to find them. Its rows
// are the engine's operations (ReclaimRows; sql/reclaim-rows.ts for both SQL engines).
import { assert } from '../../src/errors';
import { Db, nowNs } from './meta';
import { dataOpsOf } from './engine-open';

/** Entries one reclaim round takes. */
export const RECLAIM_BATCH_MAX = 32;

/** Where a queued version's shards are: its file's layout and placement inputs (spec §7). */
export interface QueuedLayout {
  layout: { text: string };
  placementSeed: bigint;
  clusterMapEpoch: number;
}

export interface ReclaimEntry {
  ino: number;
  chunkIndex: number;
  version: bigint;
  layout: string;
  placementSeed: bigint;
  clusterMapEpoch: number;
}

/** Table `reclaim`'s rows, as an engine reads and writes them. */
export interface ReclaimRows {
  /** Nothing when the version is queued already. */
  add(e: ReclaimEntry, queuedNs: bigint): void;
  remove(ino: number, chunkIndex: number, version: bigint): void;
  /** The oldest queued first, at most limit. */
  batch(limit: number): ReclaimEntry[];
  all(): IterableIterator<ReclaimEntry>;
  has(ino: number, chunkIndex: number, version: bigint): boolean;
  count(): number;
}

/** The one owner of table `reclaim`. Callers group its changes with theirs in one transaction. */
export class ReclaimQueue {
  private readonly s: ReclaimRows;
  constructor(db: Db) {
    this.s = dataOpsOf(db).reclaimRows();
  }
  add(ino: number, chunkIndex: number, version: bigint, fl: QueuedLayout): void {
    assert(version > 0n, 'reclaim: a real version');
    const e = { ino, chunkIndex, version, layout: fl.layout.text, placementSeed: fl.placementSeed };
    this.s.add({ ...e, clusterMapEpoch: fl.clusterMapEpoch }, nowNs());
  }
  remove(ino: number, chunkIndex: number, version: bigint): void {
    this.s.remove(ino, chunkIndex, version);
  }
  batch(limit: number): ReclaimEntry[] {
    return this.s.batch(Math.min(limit, RECLAIM_BATCH_MAX));
  }
  /** Every queued entry (scrub's leak scan; the queue is small next to the chunk map it scans too). */
  all(): Iterable<ReclaimEntry> {
    return this.s.all();
  }
  has(ino: number, chunkIndex: number, version: bigint): boolean {
    return this.s.has(ino, chunkIndex, version);
  }
  get length(): number {
    return this.s.count();
  }
}
