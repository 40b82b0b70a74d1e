// The chunk map (inode, chunk_index -> live version + logical length), write
// intents (DESIGN §5) and the persistent heal queue (DESIGN §6). Thin typed
// wrappers over prepared statements; callers group them in transactions.
import { Db, nowNs } from './meta';

export interface ChunkRow {
  chunkIndex: number;
  version: bigint; // 0n = no live data
  logicalLenBytes: number;
  maxVersion: bigint;
}

export interface Intent {
  id: number;
  ino: number;
  chunkIndex: number;
  version: bigint;
  firstBlock: number;
  lastBlock: number;
}

export interface HealEntry {
  ino: number;
  chunkIndex: number;
  version: bigint;
  shardIndex: number;
  reason: string;
  attempts: number;
}

type Row = Record<string, bigint | string>;
const HEAL_BATCH_MAX = 10_000;

function chunkOf(r: Row): ChunkRow {
  return { chunkIndex: Number(r.chunk_index), version: BigInt(r.version), logicalLenBytes: Number(r.logical_len), maxVersion: BigInt(r.max_version) };
}

export class ChunkMap {
  private readonly s;
  constructor(readonly db: Db) {
    this.s = {
      get: db.prepare('SELECT * FROM chunks WHERE ino = ? AND chunk_index = ?'),
      live: db.prepare('SELECT * FROM chunks WHERE ino = ? AND version > 0 ORDER BY chunk_index'),
      liveFrom: db.prepare('SELECT * FROM chunks WHERE ino = ? AND version > 0 AND chunk_index >= ? ORDER BY chunk_index'),
      alloc: db.prepare(`INSERT INTO chunks(ino, chunk_index, version, logical_len, max_version) VALUES (?, ?, 0, 0, 1)
                         ON CONFLICT(ino, chunk_index) DO UPDATE SET max_version = max_version + 1 RETURNING max_version`),
      set: db.prepare('UPDATE chunks SET version = ?, logical_len = ? WHERE ino = ? AND chunk_index = ? AND max_version >= ?'),
      retire: db.prepare('UPDATE chunks SET version = 0, logical_len = 0 WHERE ino = ? AND chunk_index = ?'),
      dropInode: db.prepare('DELETE FROM chunks WHERE ino = ?'),
      allLive: db.prepare('SELECT ino, chunk_index, version FROM chunks WHERE version > 0'),
      addIntent: db.prepare('INSERT INTO intents(ino, chunk_index, version, first_block, last_block, created_ns) VALUES (?, ?, ?, ?, ?, ?)'),
      delIntent: db.prepare('DELETE FROM intents WHERE id = ?'),
      intents: db.prepare('SELECT * FROM intents ORDER BY id'),
      queue: db.prepare(`INSERT INTO heal_queue(ino, chunk_index, version, shard_index, reason, queued_ns) VALUES (?, ?, ?, ?, ?, ?)
                         ON CONFLICT DO NOTHING`),
      unqueue: db.prepare('DELETE FROM heal_queue WHERE ino = ? AND chunk_index = ? AND version = ? AND shard_index = ?'),
      attempt: db.prepare('UPDATE heal_queue SET attempts = attempts + 1 WHERE ino = ? AND chunk_index = ? AND version = ? AND shard_index = ?'),
      healBatch: db.prepare('SELECT * FROM heal_queue ORDER BY attempts, queued_ns LIMIT ?'),
      healCount: db.prepare('SELECT count(*) AS n FROM heal_queue'),
    };
  }

  get(ino: number, chunkIndex: number): ChunkRow | null {
    const r = this.s.get.get(ino, chunkIndex) as Row | undefined;
    return r === undefined ? null : chunkOf(r);
  }
  /** Live chunks of a file, or those at index >= fromIndex. */
  live(ino: number, fromIndex = 0): ChunkRow[] {
    return (this.s.liveFrom.all(ino, fromIndex) as Row[]).map(chunkOf);
  }
  /** Reserve a never-used version for a chunk; call in its own committed transaction before writing shards. */
  allocVersion(ino: number, chunkIndex: number): bigint {
    const r = this.s.alloc.get(ino, chunkIndex) as { max_version: bigint };
    return BigInt(r.max_version);
  }
  setLive(ino: number, chunkIndex: number, version: bigint, logicalLenBytes: number): void {
    const info = this.s.set.run(version, logicalLenBytes, ino, chunkIndex, version);
    if (info.changes !== 1) throw new Error(`chunk map: version ${version} of ino ${ino} chunk ${chunkIndex} was never allocated`);
  }
  retire(ino: number, chunkIndex: number): void {
    this.s.retire.run(ino, chunkIndex);
  }
  dropInode(ino: number): void {
    this.s.dropInode.run(ino);
  }
  /** Every live (ino, chunk, version), keyed "ino/chunk/version" (recovery garbage scan). */
  liveKeys(): Set<string> {
    const out = new Set<string>();
    for (const r of this.s.allLive.iterate() as Iterable<Row>) out.add(`${r.ino}/${r.chunk_index}/${r.version}`);
    return out;
  }

  addIntent(ino: number, chunkIndex: number, version: bigint, firstBlock: number, lastBlock: number): number {
    return Number(this.s.addIntent.run(ino, chunkIndex, version, firstBlock, lastBlock, nowNs()).lastInsertRowid);
  }
  removeIntent(id: number): void {
    this.s.delIntent.run(id);
  }
  intents(): Intent[] {
    return (this.s.intents.all() as Row[]).map((r) => ({
      id: Number(r.id), ino: Number(r.ino), chunkIndex: Number(r.chunk_index), version: BigInt(r.version),
      firstBlock: Number(r.first_block), lastBlock: Number(r.last_block),
    }));
  }

  queueHeal(ino: number, chunkIndex: number, version: bigint, shardIndex: number, reason: string): void {
    this.s.queue.run(ino, chunkIndex, version, shardIndex, reason.slice(0, 500), nowNs());
  }
  unqueueHeal(e: { ino: number; chunkIndex: number; version: bigint; shardIndex: number }): void {
    this.s.unqueue.run(e.ino, e.chunkIndex, e.version, e.shardIndex);
  }
  noteHealAttempt(e: { ino: number; chunkIndex: number; version: bigint; shardIndex: number }): void {
    this.s.attempt.run(e.ino, e.chunkIndex, e.version, e.shardIndex);
  }
  healBatch(limit: number): HealEntry[] {
    return (this.s.healBatch.all(Math.min(limit, HEAL_BATCH_MAX)) as Row[]).map((r) => ({
      ino: Number(r.ino), chunkIndex: Number(r.chunk_index), version: BigInt(r.version), shardIndex: Number(r.shard_index),
      reason: String(r.reason), attempts: Number(r.attempts),
    }));
  }
  healQueueLength(): number {
    return Number((this.s.healCount.get() as { n: bigint }).n);
  }
}
