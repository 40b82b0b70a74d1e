// The intent log file of a SQLite store (DESIGN §5 "The log is a file of its own"; format in
// docs/intent-log.md): fsync'd partial writes of file chunks (replica, EC, transformed) are durable
// once their record is here; records of encrypting layouts are sealed (DESIGN §10 "Log records").
// Written circularly, one commit at a time, each commit ONE pwrite and ONE fdatasync; appends
// that arrive while a commit runs share the next one (group commit). The file grows in
// PREFILL_STEP_BYTES steps of zeros written with the commit that first passes its end, so that
// once its size is reached a commit changes no file metadata and its fdatasync is one device flush.
// Space behind the tail (the oldest record not yet folded into the shards, store/meta/intent-log-tail.ts)
// is reused only once a full metadata commit made that tail durable: the folds and the commits
// that superseded the records before it are durable then too (data first, free last).
import * as nodePath from 'node:path';
import { ChainPoint, walkChain } from '../../src/intent-chain';
import {
  LOG_BLOCK_BYTES,
  LogHeader,
  LogRecord,
  RECORD_FLAG_SEALED,
  RECORD_FLAG_TIMES,
  alignUp,
  decodeLogHeader,
  encodeLogHeader,
  encodeRecordInto,
  recordBytes,
} from '../../src/intent-record';
import { assert } from '../../src/errors';
import { ConfigError } from '../config';
import { FsError } from '../fs-error';
import { randomU64 } from '../random-ids';
import { Io, IoFile, errnoCode } from '../io/io';
import type { LogRecordKeys } from '../log-record-keys';
import type { LogFileRecordPosition } from '../../src/log-record-cipher';
import { SyncIo } from '../io/sync-io';
import { CommitLog } from '../meta/commit-log';
import { IntentLogTail } from '../meta/intent-log-tail';

export const INTENT_LOG_FILE = 'intent.log';
/** The log's size (a store tunable, chunkfs.json defaults.intentLogBytes): about twice the backlog's bound. */
export const INTENT_LOG_BYTES_DEFAULT = 64 << 20;
/** The file grows by this much at a time (zeros), until it has its size. */
const PREFILL_STEP_BYTES = 1 << 20;
/** One commit writes at most this much (a larger batch leaves the rest for the next commit). */
const COMMIT_BYTES_MAX = 4 << 20;
/** Commits up to this size are written from one buffer kept for the log's life (8 KiB per fsync'd 4 KiB write). */
const COMMIT_BUFFER_BYTES = 256 << 10;
/** A log sync slower than this sends the next one to the libuv pool (as the WAL's: store/meta/sqlite/commit-point.ts). */
const INLINE_SYNC_MS_MAX = 2;
/** A commit that finds the log full looks again this often, this many times, before it fails (about 2 s). */
const FULL_WAIT_MS = 20;
const FULL_WAITS_MAX = 100;
const MISSING_LOG = "the intent log is missing but meta.db names it: restore the file (fsync'd writes may be in it)";

/** One write to log: exactly the bytes written to a chunk version. */
export interface LoggedWrite {
  ino: number;
  chunkIndex: number;
  version: bigint;
  offsetBytes: number;
  bytes: Uint8Array;
  /** The times its metadata commit stamped (replay stamps them again), or null. */
  times: { mtimeNs: bigint; ctimeNs: bigint } | null;
  /** The chunk's layout encrypts: the record's payload is sealed (DESIGN §10 "Log records"), never the plain bytes. */
  sealed: boolean;
}

interface Queued {
  write: LoggedWrite;
  resolve: (seq: bigint) => void;
  reject: (err: unknown) => void;
}

interface Opened {
  log: IntentLog;
  /** The records replay must apply, in order. */
  replay: LogRecord[];
}

interface Live {
  seq: bigint;
  offsetBytes: number;
  released: boolean;
}

export class IntentLog {
  private queued: Queued[] = [];
  private running = false;
  private head: ChainPoint;
  /** Records placed in the file, not yet released (applied or superseded), oldest first. */
  private live: Live[] = [];
  private readonly bySeq = new Map<bigint, Live>();
  /** The tail last committed to the metadata, and the number of the first flush that makes it durable. */
  private committedTail: ChainPoint;
  private committedTailFlushNo = 0;
  private durableTail: ChainPoint;
  private tailCommitQueued = false;
  private failed: unknown = null;
  private lastSyncMs = 0;
  /** See commitBuffer(). */
  private buffer: Buffer | null = null;
  /** Device flushes of the log (status, the flush-count tests). */
  flushCount = 0;
  /** Bytes written to the log file (benchmarks: bytes per fsync'd write). */
  bytesWritten = 0;
  /** Called when a commit finds the log full: the applier should fold what it holds now. */
  onFull: () => void = () => undefined;

  private constructor(
    readonly path: string,
    private readonly f: IoFile,
    private readonly header: LogHeader,
    private fileBytes: number,
    private readonly tail: IntentLogTail,
    private readonly commits: CommitLog,
    private readonly keys: LogRecordKeys,
    start: ChainPoint,
  ) {
    this.head = start;
    this.committedTail = start;
    this.durableTail = start;
  }

  /**
   * Open the log the metadata names, or make one when it names none; returns it with the records
   * replay must apply, in order. readOnly: nothing is written (the epoch stays); null when a
   * read-only opener finds no log the metadata names.
   */
  static async open(
    io: Io,
    storeDir: string,
    storeUuid: string,
    sizeBytes: number,
    tail: IntentLogTail,
    commits: CommitLog,
    readOnly: boolean,
    log: (line: string) => void,
    keys: LogRecordKeys,
  ): Promise<Opened | null> {
    const path = nodePath.join(storeDir, INTENT_LOG_FILE);
    const boundId = tail.logId();
    let f: IoFile | null = null;
    try {
      f = await io.open(path, readOnly ? 'read' : 'readwrite');
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
      if (boundId !== null) {
        throw new ConfigError(path, MISSING_LOG);
      }
    }
    if (f !== null && boundId === null) {
      // No record is appended before the metadata names its file, so this one holds none it needs
      // (made by an open that crashed before binding it, or the log of metadata copied elsewhere).
      await f.close();
      if (readOnly) return null;
      const aside = `${path}.unbound-${Date.now()}`;
      await io.rename(path, aside);
      log(`chunkfs: ${path} was not the log this store's metadata names; moved to ${aside}`);
      f = null;
    }
    if (f === null) {
      if (readOnly) return null;
      f = await IntentLog.create(io, storeDir, path, storeUuid, sizeBytes, tail, commits);
    }
    try {
      return await IntentLog.load(f, path, storeUuid, tail, commits, readOnly, keys);
    } catch (err) {
      await f.close();
      throw err;
    }
  }

  private static async load(
    f: IoFile,
    path: string,
    storeUuid: string,
    tail: IntentLogTail,
    commits: CommitLog,
    readOnly: boolean,
    keys: LogRecordKeys,
  ): Promise<Opened> {
    const fileBytes = await f.sizeBytes();
    const header = decodeLogHeader(await f.pread(LOG_BLOCK_BYTES, 0));
    if (typeof header === 'string') throw new ConfigError(path, `${header}: not an intent log of this store`);
    if (header.logId !== tail.logId()) {
      const other = header.storeUuid === storeUuid ? '' : ` of store ${header.storeUuid}`;
      const named = tail.logId()?.toString(16);
      const which = `this is intent log ${header.logId.toString(16)}${other}, meta.db names ${named}`;
      throw new ConfigError(path, `${which}: restore the right file`);
    }
    // The metadata names this log: a store uuid given to a store made before uuids (config.ts) is taken over.
    header.storeUuid = storeUuid;
    const start = tail.get() ?? { seq: 1n, offsetBytes: LOG_BLOCK_BYTES };
    const bytes = await f.pread(Math.min(fileBytes, header.sizeBytes), 0);
    const walked = walkChain(bytes, header.logId, header.epoch, start);
    const log = new IntentLog(path, f, header, fileBytes, tail, commits, keys, walked.next);
    log.committedTail = start;
    log.durableTail = start;
    for (const { record, offsetBytes } of walked.records) log.track(record.seq, offsetBytes);
    if (!readOnly) {
      // A new epoch before any record of this open: leftovers of a torn commit past the head never join the chain.
      header.epoch++;
      await f.pwrite(encodeLogHeader(header), 0);
      await f.fdatasync();
    }
    return { log, replay: walked.records.map((r) => r.record) };
  }

  /** A new log file, durable, then named in the metadata (durable too) before any record goes in. */
  private static async create(
    io: Io,
    storeDir: string,
    path: string,
    storeUuid: string,
    sizeBytes: number,
    tail: IntentLogTail,
    commits: CommitLog,
  ): Promise<IoFile> {
    const fits = sizeBytes % LOG_BLOCK_BYTES === 0 && sizeBytes >= 4 * COMMIT_BYTES_MAX;
    assert(fits, 'intent log size: whole blocks, room for commits');
    const logId = randomU64();
    const f = await io.open(path, 'create-exclusive');
    try {
      await f.pwrite(encodeLogHeader({ storeUuid, logId, epoch: 1, sizeBytes }), 0);
      await f.fdatasync();
      await io.fsyncDir(storeDir);
      tail.bind(logId, { seq: 1n, offsetBytes: LOG_BLOCK_BYTES });
      await commits.flush();
    } catch (err) {
      await f.close();
      throw err;
    }
    return f;
  }

  /** Records written and not yet released. */
  get liveRecords(): number {
    return this.bySeq.size;
  }

  /** Resolves with the record's sequence number once it is durable (group-committed). */
  append(write: LoggedWrite): Promise<bigint> {
    if (this.failed !== null) return Promise.reject(this.failure());
    if (write.sealed) {
      try {
        this.keys.canSeal({
          fileId: BigInt(write.ino),
          chunkIndex: BigInt(write.chunkIndex),
          version: write.version,
          firstBlock: 0,
        });
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise<bigint>((resolve, reject) => {
      this.queued.push({ write, resolve, reject });
      if (!this.running) void this.run();
    });
  }

  /** The records are folded into the shards, or superseded by a commit: their space may go once the tail is durable. */
  release(seqs: readonly bigint[]): void {
    for (const seq of seqs) {
      const l = this.bySeq.get(seq);
      if (l === undefined) continue;
      l.released = true;
      this.bySeq.delete(seq);
    }
    let drop = 0;
    while (drop < this.live.length && this.live[drop].released) drop++;
    if (drop === 0) return;
    this.live = this.live.slice(drop);
    if (this.tailCommitQueued) return;
    // Never inside the caller's transaction: the tail is committed on its own, a moment later.
    this.tailCommitQueued = true;
    setImmediate(() => {
      this.tailCommitQueued = false;
      this.commitTail();
    });
  }

  async close(): Promise<void> {
    await this.f.close();
  }

  private track(seq: bigint, offsetBytes: number): void {
    const l = { seq, offsetBytes, released: false };
    this.live.push(l);
    this.bySeq.set(seq, l);
  }

  private currentTail(): ChainPoint {
    const oldest = this.live[0];
    return oldest === undefined ? { ...this.head } : { seq: oldest.seq, offsetBytes: oldest.offsetBytes };
  }

  /** The tail committed now (store close: the next open replays only what is left). */
  commitTailNow(): void {
    this.commitTail();
  }

  /** A lost tail commit only makes replay start earlier: it needs no flush of its own. */
  private commitTail(): void {
    const t = this.currentTail();
    if (t.seq === this.committedTail.seq) return;
    try {
      this.commits.harmless(() => this.tail.set(t));
    } catch {
      return; // the store is closing; the next release or open commits it
    }
    this.committedTail = t;
    this.committedTailFlushNo = this.commits.flushCount + 1;
  }

  private failure(): FsError {
    const why = this.failed instanceof Error ? this.failed.message : String(this.failed);
    return new FsError('EIO', `intent log ${this.path} failed a commit (${why}): remount the store`);
  }

  /** Commits one after another until nothing is queued. */
  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queued.length > 0 && this.failed === null) {
        // The appends of this event-loop turn join the commit.
        await new Promise<void>((resolve) => setImmediate(resolve));
        await this.commitBatch(this.takeBatch());
      }
    } finally {
      this.running = false;
    }
  }

  private takeBatch(): Queued[] {
    let bytes = 0;
    let n = 0;
    const fits = (q: Queued): boolean => bytes + q.write.bytes.length < COMMIT_BYTES_MAX;
    while (n < this.queued.length && (n === 0 || fits(this.queued[n]))) bytes += this.queued[n++].write.bytes.length;
    return this.queued.splice(0, n);
  }

  private async commitBatch(batch: Queued[]): Promise<void> {
    const seq0 = this.head.seq;
    try {
      const records = batch.map((q, i) => this.record(q.write, seq0 + BigInt(i)));
      const lengths = records.map((r) => recordBytes(r));
      const used = lengths.reduce((n, l) => n + l, 0);
      const at = await this.place(alignUp(used));
      const end = at + alignUp(used);
      // Zeros up to the next step past the file's end: the next commits overwrite allocated blocks.
      const step = Math.ceil(end / PREFILL_STEP_BYTES) * PREFILL_STEP_BYTES;
      const grow = end > this.fileBytes ? Math.min(this.header.sizeBytes, step) : end;
      const buf = this.commitBuffer(Math.max(end, grow) - at);
      let o = 0;
      for (const r of records) o += encodeRecordInto(r, buf, o);
      buf.fill(0, o); // padding: a stale record of an earlier lap must not follow this commit's last one
      await this.f.pwrite(buf, at);
      this.flushCount++;
      // Inline while syncs are fast (no cross-thread wake-up, ~50 us here), on the pool once one was
      // slow. Measured, quiet machine (docs/benchmarks.md, 7 Dec 13:58): pgbench 2,175 TPS against
      // 1,931 with every sync on the pool, fsync'd 4 KiB writes 2,218 against 1,889 per s; on a busy
      // machine the pool had won (674 against 557, 7 Dec 12:57).
      const startedMs = performance.now();
      await this.f.fdatasync(this.lastSyncMs < INLINE_SYNC_MS_MAX);
      this.lastSyncMs = performance.now() - startedMs;
      this.bytesWritten += buf.length;
      this.fileBytes = Math.max(this.fileBytes, at + buf.length);
      let ro = at;
      lengths.forEach((l, i) => {
        this.track(seq0 + BigInt(i), ro);
        ro += l;
      });
      this.head = { seq: seq0 + BigInt(records.length), offsetBytes: end };
      batch.forEach((q, i) => q.resolve(seq0 + BigInt(i)));
    } catch (err) {
      // The file may hold part of this commit: later records could never be told from it. No more commits.
      if (!(err instanceof FsError && err.code === 'ENOSPC' && err.message.includes('is full'))) this.failed = err;
      for (const q of batch) q.reject(this.failed !== null ? this.failure() : err);
      if (this.failed !== null) for (const q of this.queued.splice(0)) q.reject(this.failure());
    }
  }

  /** Where a record is and what it holds: the AAD of its sealed payload (src/log-record-cipher.ts, format 2). */
  private positionOf(
    r: Pick<LogRecord, 'seq' | 'ino' | 'chunkIndex' | 'version' | 'offsetBytes' | 'lengthBytes'>,
  ): LogFileRecordPosition {
    const { storeUuid, logId } = this.header;
    const { seq, offsetBytes, lengthBytes, version } = r;
    return {
      storeUuid,
      logId,
      seq,
      fileId: BigInt(r.ino),
      chunkIndex: BigInt(r.chunkIndex),
      version,
      offsetBytes,
      lengthBytes,
    };
  }

  /**
   * The bytes a replayed record holds: a sealed payload opened with its chunk version's log key,
   * only after its tag checked (LogRecordError otherwise: altered, moved, or another store's).
   */
  plainOf(r: LogRecord): Buffer {
    if ((r.flags & RECORD_FLAG_SEALED) === 0) return Buffer.from(r.payload);
    const plain = this.keys.open(this.positionOf(r), r.payload);
    assert(plain.length === r.lengthBytes, 'a sealed record opens to the bytes written');
    return plain;
  }

  /**
   * A buffer of exactly lengthBytes for one commit: a view of the one kept for the log's life when
   * it fits (commits run one at a time and each pwrite is done before the next commit), so an
   * fsync'd write allocates nothing here; the rare larger commit (a prefill step) gets its own.
   */
  private commitBuffer(lengthBytes: number): Buffer {
    if (lengthBytes > COMMIT_BUFFER_BYTES) return Buffer.alloc(lengthBytes);
    this.buffer ??= Buffer.alloc(COMMIT_BUFFER_BYTES);
    return this.buffer.subarray(0, lengthBytes);
  }

  /** One write's record; its payload sealed here for encrypting layouts (the sequence number is in the AAD). */
  private record(w: LoggedWrite, seq: bigint): LogRecord {
    const lengthBytes = w.bytes.length;
    const at = {
      seq,
      ino: w.ino,
      chunkIndex: w.chunkIndex,
      version: w.version,
      offsetBytes: w.offsetBytes,
      lengthBytes,
    };
    // Sealed on the commit's path, once its sequence number is known (it is part of the AAD).
    const payload = w.sealed ? this.keys.seal(this.positionOf(at), w.bytes) : w.bytes;
    const flags = (w.times === null ? 0 : RECORD_FLAG_TIMES) | (w.sealed ? RECORD_FLAG_SEALED : 0);
    return {
      seq,
      logId: this.header.logId,
      epoch: this.header.epoch,
      flags,
      ino: w.ino,
      chunkIndex: w.chunkIndex,
      version: w.version,
      offsetBytes: w.offsetBytes,
      lengthBytes,
      mtimeNs: w.times?.mtimeNs ?? 0n,
      ctimeNs: w.times?.ctimeNs ?? 0n,
      payload,
    };
  }

  /**
   * Where a commit of lengthBytes goes: at the head, or wrapped to the first block. A full log
   * asks the applier to fold what it holds (not awaited: this commit's writer may hold the lock of
   * the inode the applier needs next), commits the tail, makes it durable, and looks again.
   */
  private async place(lengthBytes: number): Promise<number> {
    assert(lengthBytes <= this.header.sizeBytes - LOG_BLOCK_BYTES, 'a commit fits the log');
    for (let attempt = 0; attempt < FULL_WAITS_MAX; attempt++) {
      if (this.commits.lastFlushDone >= this.committedTailFlushNo) this.durableTail = this.committedTail;
      const at = this.freeAt(lengthBytes);
      if (at !== null) return at;
      if (attempt === 0) this.onFull();
      this.commitTail();
      if (this.committedTail.seq !== this.durableTail.seq) await this.commits.flush();
      else await new Promise((resolve) => setTimeout(resolve, FULL_WAIT_MS));
    }
    const waiting = `${this.liveRecords} record(s) wait for the applier (see status)`;
    throw new FsError('ENOSPC', `intent log ${this.path} is full: ${waiting}`);
  }

  /** The offset a commit of lengthBytes may take without touching a record behind the durable tail, or null. */
  private freeAt(lengthBytes: number): number | null {
    const size = this.header.sizeBytes;
    const h = this.head.offsetBytes;
    const d = this.durableTail;
    // Nothing live behind the durable tail: anywhere.
    if (d.seq === this.head.seq) return h + lengthBytes <= size ? h : LOG_BLOCK_BYTES;
    if (h > d.offsetBytes) {
      if (h + lengthBytes <= size) return h;
      return LOG_BLOCK_BYTES + lengthBytes <= d.offsetBytes ? LOG_BLOCK_BYTES : null;
    }
    return h + lengthBytes <= d.offsetBytes ? h : null;
  }
}

/**
 * How many records the store's log holds past its tail, read without opening the store (meta copy:
 * records not yet in the shards would be left behind by metadata that moves to PostgreSQL).
 */
export function pendingLogRecords(storeDir: string, tail: IntentLogTail, io: SyncIo): number {
  const logId = tail.logId();
  const path = nodePath.join(storeDir, INTENT_LOG_FILE);
  if (logId === null || io.stat(path) === null) return 0;
  const bytes = io.readFile(path);
  const header = decodeLogHeader(bytes.subarray(0, LOG_BLOCK_BYTES));
  if (typeof header === 'string') throw new ConfigError(path, `${header}: not an intent log of this store`);
  if (header.logId !== logId) return 0; // not this metadata's log: the open says so
  return walkChain(bytes, logId, header.epoch, tail.get() ?? { seq: 1n, offsetBytes: LOG_BLOCK_BYTES }).records.length;
}
