// Table `reclaim` in the SQL both SQL engines speak alike (DESIGN §9 "Operations"): the statements
// behind store/meta/reclaim-queue.ts's ReclaimRows, prepared once. placement_seed holds the u64 seed
// as a signed BIGINT (store/meta/meta.ts).
import { Db, dbToU64, u64ToDb } from '../meta';
import type { ReclaimEntry, ReclaimRows } from '../reclaim-queue';

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

function statements(db: Db) {
  return {
    add: db.prepare(
      'INSERT INTO reclaim(ino, chunk_index, version, layout, placement_seed, cluster_map_epoch, queued_ns)' +
        `
                       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    ),
    remove: db.prepare('DELETE FROM reclaim WHERE ino = ? AND chunk_index = ? AND version = ?'),
    batch: db.prepare('SELECT * FROM reclaim ORDER BY queued_ns LIMIT ?'),
    all: db.prepare('SELECT * FROM reclaim'),
    count: db.prepare('SELECT count(*) AS n FROM reclaim'),
    has: db.prepare('SELECT 1 FROM reclaim WHERE ino = ? AND chunk_index = ? AND version = ?'),
  };
}

export class SqlReclaimRows implements ReclaimRows {
  private readonly s;
  constructor(db: Db) {
    this.s = statements(db);
  }
  add(e: ReclaimEntry, queuedNs: bigint): void {
    const seed = u64ToDb(e.placementSeed);
    this.s.add.run(e.ino, e.chunkIndex, e.version, e.layout, seed, e.clusterMapEpoch, queuedNs);
  }
  remove(ino: number, chunkIndex: number, version: bigint): void {
    this.s.remove.run(ino, chunkIndex, version);
  }
  batch(limit: number): ReclaimEntry[] {
    return (this.s.batch.all(limit) as Row[]).map(entryOf);
  }
  *all(): IterableIterator<ReclaimEntry> {
    for (const r of this.s.all.iterate() as Iterable<Row>) yield entryOf(r);
  }
  has(ino: number, chunkIndex: number, version: bigint): boolean {
    return this.s.has.get(ino, chunkIndex, version) !== undefined;
  }
  count(): number {
    return Number((this.s.count.get() as { n: bigint }).n);
  }
}
