// The chunk map (inode, chunk_index -> live version + logical length), write
// intents (DESIGN §5) and the persistent heal queue (DESIGN §6). Thin typed
// wrappers over prepared statements; callers group them in transactions.
import { LRUCache } from 'lru-cache';
import { Db, nowNs } from './meta';
import type { LogRecordKeys } from '../log-record-keys';
import { LogRecordError, LogRecordPosition } from '../../src/log-record-cipher';
import { ChunkfsError } from '../../src/errors';

/**
 * How a transformed chunk version is stored (spec §3.1, DESIGN §10): its payload length
 * (chunk_logical_len) and flag bits 1, 2. null: stored raw (the payload is the content).
 */
export interface StoredForm {
  lenBytes: number;
  flags: number;
}

export interface ChunkRow {
  chunkIndex: number;
  version: bigint; // 0n = no live data
  logicalLenBytes: number; // the raw content (content_len)
  maxVersion: bigint;
  stored: StoredForm | null;
}

export interface Intent {
  id: number;
  ino: number;
  chunkIndex: number;
  version: bigint;
  firstBlock: number;
  lastBlock: number;
  /**
   * The new bytes of blocks firstBlock..lastBlock (DESIGN §5 journaled intent), opened when the row
   * holds them sealed (DESIGN §10 log records); null in intents of older builds.
   */
  span: Buffer | null;
  /** The row held its span sealed (span_sealed 1); a plain span over an encrypting layout is refused at replay. */
  sealed: boolean;
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
/**
 * Committed chunk rows are cached per inode: a FUSE read is one chunk lookup, and each
 * SQLite statement costs a read transaction (fcntl locks, fstat: ~9 us here, measured with
 * random 4 KiB reads). Only rows read outside a transaction are cached, and every change
 * through this class drops the inode's rows, so a rolled-back change is never cached.
 */
const CACHED_INODES_MAX = 1024;
const CACHED_ROWS_PER_INODE_MAX = 4096;

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

/** Where an intent's record goes: the chunk version it was logged over and its first block. */
function positionOf(ino: number, chunkIndex: number, version: bigint, firstBlock: number): LogRecordPosition {
  return { fileId: BigInt(ino), chunkIndex: BigInt(chunkIndex), version, firstBlock };
}

/** An intent row whose sealed span does not open: the metadata was altered, or is not this store's. */
export class IntentRecordError extends ChunkfsError {
  constructor(id: number, cause: LogRecordError) {
    const todo = "restore the metadata from a copy of this store's, or delete that intent row (its write is lost)";
    super(`intent ${id} of the metadata does not open: ${cause.message}; ${todo}`);
  }
}

/** span_sealed: the row's span is a sealed log record (schema v10); 0 (the default) for every row of older builds. */
const SPAN_SEALED = 1;
const INSERT_INTENT_SQL =
  'INSERT INTO intents(ino, chunk_index, version, first_block, last_block, created_ns, span, ' +
  'span_sealed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';

/** Rows and sizes a transaction group made live and has not committed yet (store/chunks/tx-group.ts, DESIGN §5). */
export interface PendingRows {
  pendingRow(ino: number, chunkIndex: number): ChunkRow | undefined;
  pendingChunks(ino: number): number[];
  pendingSize(ino: number): number | undefined;
}

export class ChunkMap {
  /** The open and closing groups' rows: every question about a chunk sees them (DESIGN §5 one view). */
  pending: PendingRows | null = null;
  /** A read-only opener queues no heal (its database refuses writes); the writer's reads and scrub find the damage. */
  recordsNothing = false;
  private readonly s;
  private readonly rows = new LRUCache<number, Map<number, ChunkRow | null>>({ max: CACHED_INODES_MAX });
  /** records: seals the spans of chunks whose layout encrypts, and opens them (DESIGN §10 log records). */
  constructor(
    readonly db: Db,
    private readonly records: LogRecordKeys,
  ) {
    this.s = {
      get: db.prepare('SELECT * FROM chunks WHERE ino = ? AND chunk_index = ?'),
      live: db.prepare('SELECT * FROM chunks WHERE ino = ? AND version > 0 ORDER BY chunk_index'),
      liveFrom: db.prepare(
        'SELECT * FROM chunks WHERE ino = ? AND version > 0 AND chunk_index >= ? ORDER BY chunk_index',
      ),
      alloc: db.prepare(`INSERT INTO chunks(ino, chunk_index, version, logical_len, max_version) VALUES (?, ?, 0, 0, 1)
                         ON CONFLICT(ino, chunk_index) DO UPDATE SET max_version = chunks.max_version + 1 RETURNING max_version`),
      set: db.prepare(
        'UPDATE chunks SET version = ?, logical_len = ?, stored_len = ?, stored_flags = ? WHERE ino = ? AND chunk_index = ? AND max_version >= ?',
      ),
      retire: db.prepare(
        'UPDATE chunks SET version = 0, logical_len = 0, stored_len = NULL, stored_flags = 0 WHERE ino = ? AND chunk_index = ?',
      ),
      storedCounts: db.prepare(
        'SELECT stored_flags AS flags, count(*) AS n, sum(logical_len) AS raw, sum(stored_len) AS stored FROM chunks WHERE version > 0 AND stored_len IS NOT NULL GROUP BY stored_flags',
      ),
      dropInode: db.prepare('DELETE FROM chunks WHERE ino = ?'),
      dropHealOf: db.prepare('DELETE FROM heal_queue WHERE ino = ?'),
      allLive: db.prepare('SELECT ino, chunk_index, version FROM chunks WHERE version > 0'),
      // PostgreSQL gives the generated id back by RETURNING (SQLite: lastInsertRowid).
      addIntent: db.prepare({
        sqlite: `${INSERT_INTENT_SQL}`,
        postgres: `${INSERT_INTENT_SQL} RETURNING id`,
      }),
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
      queue:
        db.prepare(`INSERT INTO heal_queue(ino, chunk_index, version, shard_index, reason, queued_ns) VALUES (?, ?, ?, ?, ?, ?)
                         ON CONFLICT DO NOTHING`),
      unqueue: db.prepare(
        'DELETE FROM heal_queue WHERE ino = ? AND chunk_index = ? AND version = ? AND shard_index = ?',
      ),
      attempt: db.prepare(
        'UPDATE heal_queue SET attempts = attempts + 1 WHERE ino = ? AND chunk_index = ? AND version = ? AND shard_index = ?',
      ),
      healBatch: db.prepare('SELECT * FROM heal_queue ORDER BY attempts, queued_ns LIMIT ?'),
      healCount: db.prepare('SELECT count(*) AS n FROM heal_queue'),
    };
  }

  get(ino: number, chunkIndex: number): ChunkRow | null {
    const p = this.pending?.pendingRow(ino, chunkIndex);
    if (p !== undefined) return { ...p };
    return this.getStored(ino, chunkIndex);
  }
  /** The committed row only (no group's). */
  getStored(ino: number, chunkIndex: number): ChunkRow | null {
    const cacheable = !this.db.inTransaction;
    const rows = cacheable ? this.rows.get(ino) : undefined;
    const hit = rows?.get(chunkIndex);
    if (hit !== undefined) return hit === null ? null : { ...hit };
    const r = this.s.get.get(ino, chunkIndex) as Row | undefined;
    const row = r === undefined ? null : chunkOf(r);
    if (cacheable) this.remember(ino, chunkIndex, row);
    return row === null ? null : { ...row };
  }
  private remember(ino: number, chunkIndex: number, row: ChunkRow | null): void {
    let rows = this.rows.get(ino);
    if (rows === undefined || rows.size >= CACHED_ROWS_PER_INODE_MAX) {
      rows = new Map();
      this.rows.set(ino, rows);
    }
    rows.set(chunkIndex, row);
  }
  /** Told of every change of a chunk row or intent: read grants of the mount end (fs/fuse/read-grants.ts). */
  onChange: () => void = () => undefined;
  /** Drop the cached rows of an inode (every change to its chunk rows). */
  private changed(ino: number): void {
    this.rows.delete(ino);
    this.onChange();
  }
  /** A read-only follower: another process changed these rows (DESIGN §9; store/follower.ts). */
  forget(ino: number): void {
    this.rows.delete(ino);
    this.onChange();
  }
  forgetAll(): void {
    this.rows.clear();
    this.onChange();
  }
  /** Live chunks of a file, or those at index >= fromIndex. */
  live(ino: number, fromIndex = 0): ChunkRow[] {
    const rows = this.liveStored(ino, fromIndex);
    const chunks = this.pending?.pendingChunks(ino).filter((c) => c >= fromIndex) ?? [];
    if (chunks.length === 0) return rows;
    const by = new Map(rows.map((r) => [r.chunkIndex, r]));
    for (const c of chunks) by.set(c, this.pending!.pendingRow(ino, c)!);
    return [...by.values()].sort((a, b) => a.chunkIndex - b.chunkIndex);
  }
  /** Committed live chunks only: what a deleted file's commit queues for reclaim (a group's versions are queued already). */
  liveStored(ino: number, fromIndex = 0): ChunkRow[] {
    return (this.s.liveFrom.all(ino, fromIndex) as Row[]).map(chunkOf);
  }
  /** Whether a group holds chunks of ino not yet committed. */
  hasPending(ino: number): boolean {
    return (this.pending?.pendingChunks(ino).length ?? 0) > 0;
  }
  /** The size a group will commit for ino, if any. */
  pendingSize(ino: number): number | undefined {
    return this.pending?.pendingSize(ino);
  }
  /** Reserve a never-used version for a chunk; call in its own committed transaction before writing shards. */
  allocVersion(ino: number, chunkIndex: number): bigint {
    this.changed(ino);
    const r = this.s.alloc.get(ino, chunkIndex) as { max_version: bigint };
    return BigInt(r.max_version);
  }
  setLive(
    ino: number,
    chunkIndex: number,
    version: bigint,
    logicalLenBytes: number,
    stored: StoredForm | null = null,
  ): void {
    this.changed(ino);
    const info = this.s.set.run(
      version,
      logicalLenBytes,
      stored?.lenBytes ?? null,
      stored?.flags ?? 0,
      ino,
      chunkIndex,
      version,
    );
    if (info.changes !== 1)
      throw new Error(`chunk map: version ${version} of ino ${ino} chunk ${chunkIndex} was never allocated`);
  }
  retire(ino: number, chunkIndex: number): void {
    this.changed(ino);
    this.s.retire.run(ino, chunkIndex);
  }
  /** An inode's chunk rows and heal-queue rows go with it (its versions are queued for reclaim first). */
  dropInode(ino: number): void {
    this.changed(ino);
    this.s.dropInode.run(ino);
    this.s.dropHealOf.run(ino);
  }
  /** Live transformed chunks by flag bits (status): count, raw and stored bytes. */
  storedCounts(): Array<{ flags: number; chunks: number; rawBytes: number; storedBytes: number }> {
    return (this.s.storedCounts.all() as Row[]).map((r) => ({
      flags: Number(r.flags),
      chunks: Number(r.n),
      rawBytes: Number(r.raw),
      storedBytes: Number(r.stored),
    }));
  }
  /** Every live (ino, chunk, version), keyed "ino/chunk/version" (recovery garbage scan). */
  liveKeys(): Set<string> {
    const out = new Set<string>();
    for (const r of this.s.allLive.iterate() as Iterable<Row>) out.add(`${r.ino}/${r.chunk_index}/${r.version}`);
    return out;
  }

  /**
   * The intent's id is read when asked for: on PostgreSQL it comes back with the transaction's next
   * round trip (its COMMIT, store/meta/postgres/pipeline.ts), so ask after the transaction.
   * sealed: the chunk's layout encrypts, so the span is written as a sealed log record (DESIGN §10):
   * its bytes never reach the database, its WAL or its free pages in the clear.
   */
  addIntent(
    ino: number,
    chunkIndex: number,
    version: bigint,
    firstBlock: number,
    lastBlock: number,
    span: Buffer,
    sealed: boolean,
  ): () => number {
    this.onChange();
    const stored = sealed ? this.records.seal(positionOf(ino, chunkIndex, version, firstBlock), span) : span;
    const form = sealed ? SPAN_SEALED : 0;
    const info = this.s.addIntent.run(ino, chunkIndex, version, firstBlock, lastBlock, nowNs(), stored, form);
    return () => Number(info.lastInsertRowid);
  }
  /** Every intent of a deleted inode (its chunks are gone: nothing to replay). */
  dropIntentsOf(ino: number): void {
    this.onChange();
    this.s.dropIntentsOf.run(ino);
  }
  /** Every intent of one chunk (its version was replaced by one that holds their bytes, or dropped). */
  dropIntentsOfChunk(ino: number, chunkIndex: number): void {
    this.onChange();
    this.s.dropIntentsOfChunk.run(ino, chunkIndex);
  }
  /**
   * The chunk's intents now go over version (a rewrite made it from the old one; their spans still
   * apply). sealed: the chunk's layout encrypts; its sealed records are sealed again for their new
   * place, since a record opens only at the version it names (DESIGN §10 log records).
   */
  rebaseIntents(ino: number, chunkIndex: number, version: bigint, sealed: boolean): void {
    this.onChange();
    if (sealed) {
      for (const r of this.s.sealedOfChunk.all(ino, chunkIndex) as Row[]) {
        const firstBlock = Number(r.first_block);
        const was = positionOf(ino, chunkIndex, BigInt(r.version), firstBlock);
        const plain = this.openRecord(Number(r.id), was, r.span as unknown as Buffer);
        this.s.reseal.run(this.records.seal(positionOf(ino, chunkIndex, version, firstBlock), plain), r.id);
      }
    }
    this.s.rebaseIntents.run(version, ino, chunkIndex);
  }
  removeIntent(id: number): void {
    this.s.delIntent.run(id);
  }
  /** How many intents the log holds (status; without reading their spans). */
  intentCount(): number {
    return Number((this.s.intentCount.get() as { n: bigint | number }).n);
  }
  /** Every intent in log order, sealed spans opened (a record that does not open throws IntentRecordError). */
  intents(): Intent[] {
    return (this.s.intents.all() as Row[]).map((r) => this.intentOf(r));
  }
  /** One inode's intents in log order (a follower's read, store/follower.ts). */
  intentsOf(ino: number): Intent[] {
    return (this.s.intentsOf.all(ino) as Row[]).map((r) => this.intentOf(r));
  }
  private intentOf(r: Row): Intent {
    const i: Intent = {
      id: Number(r.id),
      ino: Number(r.ino),
      chunkIndex: Number(r.chunk_index),
      version: BigInt(r.version),
      firstBlock: Number(r.first_block),
      lastBlock: Number(r.last_block),
      span: (r.span as unknown as Buffer | null) ?? null,
      sealed: Number(r.span_sealed) === SPAN_SEALED,
    };
    if (i.span !== null && i.sealed) {
      i.span = this.openRecord(i.id, positionOf(i.ino, i.chunkIndex, i.version, i.firstBlock), i.span);
    }
    return i;
  }
  private openRecord(id: number, pos: LogRecordPosition, record: Buffer): Buffer {
    try {
      return this.records.open(pos, record);
    } catch (err) {
      if (err instanceof LogRecordError) throw new IntentRecordError(id, err);
      throw err;
    }
  }
  /** True when the shard was not queued already: a damage seen for the first time (counted once by the caller). */
  queueHeal(ino: number, chunkIndex: number, version: bigint, shardIndex: number, reason: string): boolean {
    if (this.recordsNothing) return false;
    return this.s.queue.run(ino, chunkIndex, version, shardIndex, reason.slice(0, 500), nowNs()).changes > 0;
  }
  unqueueHeal(e: { ino: number; chunkIndex: number; version: bigint; shardIndex: number }): void {
    this.s.unqueue.run(e.ino, e.chunkIndex, e.version, e.shardIndex);
  }
  noteHealAttempt(e: { ino: number; chunkIndex: number; version: bigint; shardIndex: number }): void {
    this.s.attempt.run(e.ino, e.chunkIndex, e.version, e.shardIndex);
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
