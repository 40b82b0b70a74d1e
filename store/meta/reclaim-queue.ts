// Table `reclaim` (DESIGN §5), owned by ReclaimQueue: the chunk versions whose shard files are to be
// deleted in the background (store/upkeep/reclaim.ts deletes them, free last). Persistent, so a
// crash loses no version to delete, and no directory walk at open is needed to find them.
import { assert } from '../../src/errors';
import { Db, dbToU64, nowNs, u64ToDb } from './meta';

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

type Row = Record<string, bigint | string>;

function entryOf(r: Row): ReclaimEntry {
  return {
    ino: Number(r.ino),
    chunkIndex: Number(r.chunk_index),
    version: BigInt(r.version),
    layout: String(r.layout),
    placementSeed: dbToU64(r.placement_seed as bigint),
    clusterMapEpoch: Number(r.cluster_map_epoch),
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
  add(ino: number, chunkIndex: number, version: bigint, fl: QueuedLayout): void {
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
