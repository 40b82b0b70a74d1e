// The rows of the chunk map, the intents and the heal queue in the SQL both SQL engines speak alike
// (DESIGN §9 "Operations"): the statements behind store/meta/chunk-rows.ts, prepared once. What
// PostgreSQL keeps of them is its own operations' (postgres/data-ops.ts).
import type { Db } from '../sql-engine';
import type { ChunkRow, HealEntry, StoredForm } from '../chunk-map';
import type { ChunkRows, HealKey, IntentRow, LiveVersion, NewIntent, SealedIntent, StoredCount } from '../chunk-rows';

type Row = Record<string, bigint | string>;
const HEAL_BATCH_MAX = 10_000;
const HEAL_REASON_CHARS_MAX = 500;
/** span_sealed: the row's span is a sealed log record (schema v10); 0 (the default) for every row of older builds. */
const SPAN_SEALED = 1;
const INSERT_INTENT_SQL =
  'INSERT INTO intents(ino, chunk_index, version, first_block, last_block, created_ns, span, ' +
  'span_sealed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';

function chunkOf(r: Row): ChunkRow {
  const stored =
    r.stored_len === null || r.stored_len === undefined
      ? null
      : { lenBytes: Number(r.stored_len), flags: Number(r.stored_flags) };
  return {
    chunkIndex: Number(r.chunk_index),
    version: BigInt(r.version),
    logicalLenBytes: Number(r.logical_len),
    maxVersion: BigInt(r.max_version),
    stored,
  };
}

function intentOf(r: Row): IntentRow {
  return {
    id: Number(r.id),
    ino: Number(r.ino),
    chunkIndex: Number(r.chunk_index),
    version: BigInt(r.version),
    firstBlock: Number(r.first_block),
    lastBlock: Number(r.last_block),
    span: (r.span as unknown as Buffer | null) ?? null,
    sealed: Number(r.span_sealed) === SPAN_SEALED,
  };
}

function statements(db: Db, returningIdSql: string) {
  return {
    get: db.prepare('SELECT * FROM chunks WHERE ino = ? AND chunk_index = ?'),
    liveFrom: db.prepare(
      'SELECT * FROM chunks WHERE ino = ? AND version > 0 AND chunk_index >= ? ORDER BY chunk_index',
    ),
    alloc: db.prepare(
      `INSERT INTO chunks(ino, chunk_index, version, logical_len, max_version) VALUES (?, ?, 0, 0, 1)
                         ON CONFLICT(ino, chunk_index) DO UPDATE SET ` +
        'max_version = chunks.max_version + 1 RETURNING max_version',
    ),
    set: db.prepare(
      'UPDATE chunks SET version = ?, logical_len = ?, stored_len = ?, stored_flags = ? ' +
        'WHERE ino = ? AND chunk_index = ? AND max_version >= ?',
    ),
    retire: db.prepare(
      'UPDATE chunks SET version = 0, logical_len = 0, stored_len = NULL, stored_flags = 0 ' +
        'WHERE ino = ? AND chunk_index = ?',
    ),
    storedCounts: db.prepare(
      'SELECT stored_flags AS flags, count(*) AS n, sum(logical_len) AS raw, sum(stored_len) AS stored ' +
        'FROM chunks WHERE version > 0 AND stored_len IS NOT NULL GROUP BY stored_flags',
    ),
    dropInode: db.prepare('DELETE FROM chunks WHERE ino = ?'),
    dropHealOf: db.prepare('DELETE FROM heal_queue WHERE ino = ?'),
    allLive: db.prepare('SELECT ino, chunk_index, version FROM chunks WHERE version > 0'),
    addIntent: db.prepare(`${INSERT_INTENT_SQL}${returningIdSql}`),
    dropIntentsOf: db.prepare('DELETE FROM intents WHERE ino = ?'),
    delIntent: db.prepare('DELETE FROM intents WHERE id = ?'),
    dropIntentsOfChunk: db.prepare('DELETE FROM intents WHERE ino = ? AND chunk_index = ?'),
    rebaseIntents: db.prepare('UPDATE intents SET version = ? WHERE ino = ? AND chunk_index = ?'),
    sealedOfChunk: db.prepare(
      'SELECT id, version, first_block, span FROM intents ' +
        `WHERE ino = ? AND chunk_index = ? AND span_sealed = ${SPAN_SEALED}`,
    ),
    reseal: db.prepare('UPDATE intents SET span = ? WHERE id = ?'),
    intents: db.prepare('SELECT * FROM intents ORDER BY id'),
    intentsOf: db.prepare('SELECT * FROM intents WHERE ino = ? ORDER BY id'),
    intentCount: db.prepare('SELECT count(*) AS n FROM intents'),
    queue: db.prepare(
      'INSERT INTO heal_queue(ino, chunk_index, version, shard_index, reason, queued_ns) VALUES (?, ?, ?, ?, ?, ?)' +
        `
                         ON CONFLICT DO NOTHING`,
    ),
    unqueue: db.prepare('DELETE FROM heal_queue WHERE ino = ? AND chunk_index = ? AND version = ? AND shard_index = ?'),
    attempt: db.prepare(
      'UPDATE heal_queue SET attempts = attempts + 1 ' +
        'WHERE ino = ? AND chunk_index = ? AND version = ? AND shard_index = ?',
    ),
    healBatch: db.prepare('SELECT * FROM heal_queue ORDER BY attempts, queued_ns LIMIT ?'),
    healCount: db.prepare('SELECT count(*) AS n FROM heal_queue'),
  };
}

export class SqlChunkRows implements ChunkRows {
  private readonly s;

  /** returningIdSql: what ends an INSERT that gives its generated id back ('' where the driver tells it). */
  constructor(db: Db, returningIdSql: string) {
    this.s = statements(db, returningIdSql);
  }

  chunk(ino: number, chunkIndex: number): ChunkRow | undefined {
    const r = this.s.get.get(ino, chunkIndex) as Row | undefined;
    return r === undefined ? undefined : chunkOf(r);
  }
  liveChunks(ino: number, fromIndex: number): ChunkRow[] {
    return (this.s.liveFrom.all(ino, fromIndex) as Row[]).map(chunkOf);
  }
  allocVersion(ino: number, chunkIndex: number): bigint {
    return BigInt((this.s.alloc.get(ino, chunkIndex) as { max_version: bigint }).max_version);
  }
  setLive(ino: number, chunkIndex: number, version: bigint, lenBytes: number, stored: StoredForm | null): boolean {
    const len = stored?.lenBytes ?? null;
    return this.s.set.run(version, lenBytes, len, stored?.flags ?? 0, ino, chunkIndex, version).changes === 1;
  }
  retire(ino: number, chunkIndex: number): void {
    this.s.retire.run(ino, chunkIndex);
  }
  dropInode(ino: number): void {
    this.s.dropInode.run(ino);
    this.s.dropHealOf.run(ino);
  }
  storedCounts(): StoredCount[] {
    return (this.s.storedCounts.all() as Row[]).map((r) => ({
      flags: Number(r.flags),
      chunks: Number(r.n),
      rawBytes: Number(r.raw),
      storedBytes: Number(r.stored),
    }));
  }
  *liveVersions(): IterableIterator<LiveVersion> {
    for (const r of this.s.allLive.iterate() as Iterable<Row>)
      yield { ino: BigInt(r.ino), chunkIndex: BigInt(r.chunk_index), version: BigInt(r.version) };
  }

  addIntent(i: NewIntent): () => number {
    const form = i.sealed ? SPAN_SEALED : 0;
    const v = [i.ino, i.chunkIndex, i.version, i.firstBlock, i.lastBlock, i.createdNs, i.span, form];
    const info = this.s.addIntent.run(...v);
    return () => Number(info.lastInsertRowid);
  }
  dropIntentsOf(ino: number): void {
    this.s.dropIntentsOf.run(ino);
  }
  dropIntentsOfChunk(ino: number, chunkIndex: number): void {
    this.s.dropIntentsOfChunk.run(ino, chunkIndex);
  }
  rebaseIntents(ino: number, chunkIndex: number, version: bigint): void {
    this.s.rebaseIntents.run(version, ino, chunkIndex);
  }
  sealedIntentsOf(ino: number, chunkIndex: number): SealedIntent[] {
    return (this.s.sealedOfChunk.all(ino, chunkIndex) as Row[]).map((r) => ({
      id: Number(r.id),
      version: BigInt(r.version),
      firstBlock: Number(r.first_block),
      record: r.span as unknown as Buffer,
    }));
  }
  reseal(id: number, record: Buffer): void {
    this.s.reseal.run(record, id);
  }
  removeIntent(id: number): void {
    this.s.delIntent.run(id);
  }
  intentCount(): number {
    return Number((this.s.intentCount.get() as { n: bigint | number }).n);
  }
  intents(): IntentRow[] {
    return (this.s.intents.all() as Row[]).map(intentOf);
  }
  intentsOf(ino: number): IntentRow[] {
    return (this.s.intentsOf.all(ino) as Row[]).map(intentOf);
  }

  queueHeal(k: HealKey, reason: string, queuedNs: bigint): boolean {
    const why = reason.slice(0, HEAL_REASON_CHARS_MAX);
    return this.s.queue.run(k.ino, k.chunkIndex, k.version, k.shardIndex, why, queuedNs).changes > 0;
  }
  unqueueHeal(k: HealKey): void {
    this.s.unqueue.run(k.ino, k.chunkIndex, k.version, k.shardIndex);
  }
  noteHealAttempt(k: HealKey): void {
    this.s.attempt.run(k.ino, k.chunkIndex, k.version, k.shardIndex);
  }
  healBatch(limit: number): HealEntry[] {
    return (this.s.healBatch.all(Math.min(limit, HEAL_BATCH_MAX)) as Row[]).map((r) => ({
      ino: Number(r.ino),
      chunkIndex: Number(r.chunk_index),
      version: BigInt(r.version),
      shardIndex: Number(r.shard_index),
      reason: String(r.reason),
      attempts: Number(r.attempts),
    }));
  }
  healQueueLength(): number {
    return Number((this.s.healCount.get() as { n: bigint }).n);
  }
}
