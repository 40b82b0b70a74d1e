// The chunk map (inode, chunk_index -> live version + logical length), write
// intents (DESIGN §5) and the persistent heal queue (DESIGN §6): one view with a group's rows, a
// cache of committed rows, intent spans sealed and opened. The rows are the engine's operations
// (store/meta/chunk-rows.ts); callers group them in transactions.
import { LRUCache } from 'lru-cache';
import { Db, nowNs } from './meta';
import { dataOpsOf } from './engine-open';
import type { ChunkRows, HealKey, IntentRow } from './chunk-rows';
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

/**
 * Committed chunk rows are cached per inode: a FUSE read is one chunk lookup, and each
 * SQLite statement costs a read transaction (fcntl locks, fstat: ~9 us here, measured with
 * random 4 KiB reads). Only rows read outside a transaction are cached, and every change
 * through this class drops the inode's rows, so a rolled-back change is never cached.
 */
const CACHED_INODES_MAX = 1024;
const CACHED_ROWS_PER_INODE_MAX = 4096;

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
  private readonly s: ChunkRows;
  private readonly rows = new LRUCache<number, Map<number, ChunkRow | null>>({ max: CACHED_INODES_MAX });
  /** records: seals the spans of chunks whose layout encrypts, and opens them (DESIGN §10 log records). */
  constructor(
    readonly db: Db,
    private readonly records: LogRecordKeys,
  ) {
    this.s = dataOpsOf(db).chunkRows();
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
    const row = this.s.chunk(ino, chunkIndex) ?? null;
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
    return this.s.liveChunks(ino, fromIndex);
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
    return this.s.allocVersion(ino, chunkIndex);
  }
  setLive(
    ino: number,
    chunkIndex: number,
    version: bigint,
    logicalLenBytes: number,
    stored: StoredForm | null = null,
  ): void {
    this.changed(ino);
    if (!this.s.setLive(ino, chunkIndex, version, logicalLenBytes, stored))
      throw new Error(`chunk map: version ${version} of ino ${ino} chunk ${chunkIndex} was never allocated`);
  }
  retire(ino: number, chunkIndex: number): void {
    this.changed(ino);
    this.s.retire(ino, chunkIndex);
  }
  /** An inode's chunk rows and heal-queue rows go with it (its versions are queued for reclaim first). */
  dropInode(ino: number): void {
    this.changed(ino);
    this.s.dropInode(ino);
  }
  /** Live transformed chunks by flag bits (status): count, raw and stored bytes. */
  storedCounts(): Array<{ flags: number; chunks: number; rawBytes: number; storedBytes: number }> {
    return this.s.storedCounts();
  }
  /** Every live (ino, chunk, version), keyed "ino/chunk/version" (recovery garbage scan). */
  liveKeys(): Set<string> {
    const out = new Set<string>();
    for (const r of this.s.liveVersions()) out.add(`${r.ino}/${r.chunkIndex}/${r.version}`);
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
    return this.s.addIntent({
      ino,
      chunkIndex,
      version,
      firstBlock,
      lastBlock,
      createdNs: nowNs(),
      span: stored,
      sealed,
    });
  }
  /** Every intent of a deleted inode (its chunks are gone: nothing to replay). */
  dropIntentsOf(ino: number): void {
    this.onChange();
    this.s.dropIntentsOf(ino);
  }
  /** Every intent of one chunk (its version was replaced by one that holds their bytes, or dropped). */
  dropIntentsOfChunk(ino: number, chunkIndex: number): void {
    this.onChange();
    this.s.dropIntentsOfChunk(ino, chunkIndex);
  }
  /**
   * The chunk's intents now go over version (a rewrite made it from the old one; their spans still
   * apply). sealed: the chunk's layout encrypts; its sealed records are sealed again for their new
   * place, since a record opens only at the version it names (DESIGN §10 log records).
   */
  rebaseIntents(ino: number, chunkIndex: number, version: bigint, sealed: boolean): void {
    this.onChange();
    if (sealed) {
      for (const r of this.s.sealedIntentsOf(ino, chunkIndex)) {
        const plain = this.openRecord(r.id, positionOf(ino, chunkIndex, r.version, r.firstBlock), r.record);
        this.s.reseal(r.id, this.records.seal(positionOf(ino, chunkIndex, version, r.firstBlock), plain));
      }
    }
    this.s.rebaseIntents(ino, chunkIndex, version);
  }
  removeIntent(id: number): void {
    this.s.removeIntent(id);
  }
  /** How many intents the log holds (status; without reading their spans). */
  intentCount(): number {
    return this.s.intentCount();
  }
  /** Every intent in log order, sealed spans opened (a record that does not open throws IntentRecordError). */
  intents(): Intent[] {
    return this.s.intents().map((r) => this.intentOf(r));
  }
  /** One inode's intents in log order (a follower's read, store/follower.ts). */
  intentsOf(ino: number): Intent[] {
    return this.s.intentsOf(ino).map((r) => this.intentOf(r));
  }
  private intentOf(r: IntentRow): Intent {
    const i: Intent = r;
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
    return this.s.queueHeal({ ino, chunkIndex, version, shardIndex }, reason, nowNs());
  }
  unqueueHeal(e: HealKey): void {
    this.s.unqueueHeal(e);
  }
  noteHealAttempt(e: HealKey): void {
    this.s.noteHealAttempt(e);
  }
  healBatch(limit: number): HealEntry[] {
    return this.s.healBatch(limit);
  }
  healQueueLength(): number {
    return this.s.healQueueLength();
  }
}
