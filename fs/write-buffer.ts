// Per-file write-back buffer (DESIGN §5): writes land in memory, are visible to reads at
// once, and reach the store on fsync, flush/close, memory pressure, a short timer, and as soon as a
// whole chunk is buffered (so sequential writes stream as whole-chunk writes, spec §8.1).
// Memory is bounded: past the limit a write waits until the largest buffer has been flushed.
// Chunks may be stored out of order, so every store write commits a size that stops at the first
// byte still held only in memory (DESIGN §5 prefix rule): a crash leaves a prefix of each file.
import { OpenFile } from './handles';
import { Extent, Run, pushRange, releaseExtents, runBytes, toRuns } from './extent-map';
import { SLAB_BYTES_DEFAULT, SlabPool } from './slab-pool';
import { FLUSH_LANES_MAX, FlushLane, FlushLanes } from './flush-lanes';
import { SpaceLedger } from './space-ledger';
import type { CommitTimes, StorePort } from './store-port';
import { nowNs } from '../store/meta/meta';
import { assert } from '../src/errors';

export interface WriteBackOptions {
  /** Total buffered bytes across files before writers wait (memory pressure). */
  bufferBytesMax: number;
  /** A dirty file is flushed this long after its first buffered write. */
  flushDelayMs: number;
  chunkSizeBytes: number;
  log(message: string): void;
}

const PRESSURE_ROUNDS_MAX = 10_000;
/** From this many separate runs in one chunk, rewriting the whole chunk is cheaper than per-run RMW. */
const MERGE_RUNS_MIN = 8;
/** At most this many chunks per store.write call and flush window (the store writes them concurrently). */
const BATCH_CHUNKS_MAX = 8;
/** A bound on the windows of one flush (each holds >= 1 run; a buffer holds far fewer runs). */
const WINDOWS_MAX = 1 << 24;
/**
 * A batch up to this size is joined into a buffer of its own size: a close batch flushes many small
 * files at once, and each taking a flush lane (32 MiB) cost more than the files' bytes.
 */
const STAGING_MIN_BYTES = 256 * 1024;
/**
 * Closed files whose flush may still run after close returned. Bounds the files (and so the needles
 * queued in store/small/needle-io.ts, far below its PENDING_NEEDLES_MAX) a fast creator of small files has
 * in flight; past it close waits for its own flush, as before.
 */
const CLOSE_FLUSHES_MAX = 1024;
/**
 * Closed small files are flushed together this long after the first of them closed. One batch is
 * one container append for all their needles (about two device flushes, DESIGN §5), so tar -x pays
 * it once per batch, not per file: measured here, starting each file's flush at close gave batches
 * of one or two files, because tar's next file (create, write, utimens, chown, chmod) took about as
 * long as an append. The delay only postpones when closed bytes reach the store (close is not fsync).
 */
const CLOSE_BATCH_DELAY_MS = 20;
/**
 * Store writes of one close batch in flight at once: files of up to a chunk each write shard files
 * (temp file, fdatasync, rename per replica), so a batch of CLOSE_FLUSHES_MAX of them must not hold
 * thousands of descriptors at once. Small files' needles still share an append: the appender takes
 * every needle that arrives while one append runs (store/small/needle-io.ts).
 */
const CLOSE_BATCH_CONCURRENCY = 128;
/**
 * Errors of background flushes that finished after the file's last handle closed, kept per inode so
 * the next fsync or close of that file reports them (like the kernel's per-file writeback error).
 * Past the bound the oldest is dropped; every one was logged when it happened.
 */
const LATE_ERRORS_MAX = 4096;
/**
 * Whole chunks stay in memory (meeting their rewrites there) until the buffered bytes fill this share
 * of the bound left after the flush lanes, then stream out as they complete. Half of the bound, before
 * Measured: with the bound at 192 MiB (fs/mount.ts) that made fio's 128 MiB sequential rewrite
 * stream at the store's speed (215 MiB/s, three replicas) instead of meeting its rewrites in memory
 * (~1,000 MiB/s); 0.85 of the 160 MiB left is 136 MiB. Below 1, so whole chunks start streaming
 * before writers meet the bound.
 */
const STREAM_FULL_CHUNKS_FRACTION = 0.85;
/** Writers waiting for memory at once (each is one FUSE write request: the transport bounds them far below). */
const MEMORY_WAITERS_MAX = 1 << 20;
/**
 * The flush lanes' memory is at most this share of the bound (fewer lanes under a small -o buffer_mb):
 * lanes are kept once made, so with more they could hold the whole bound and leave writers none.
 */
const LANES_SHARE_DIVISOR = 4;

/** Join offset-ordered, touching runs into calls of at most batchBytesMax (still uncopied). */
export function coalesce(runs: Run[], batchBytesMax: number): Run[] {
  const out: Run[] = [];
  let cur: Run | null = null;
  for (const r of runs) {
    if (
      cur !== null &&
      cur.offsetBytes + cur.lengthBytes === r.offsetBytes &&
      cur.lengthBytes + r.lengthBytes <= batchBytesMax
    ) {
      cur.parts.push(...r.parts);
      cur.lengthBytes += r.lengthBytes;
    } else {
      cur = { offsetBytes: r.offsetBytes, lengthBytes: r.lengthBytes, parts: [...r.parts] };
      out.push(cur);
    }
  }
  return out;
}

/**
 * Slabs are at most 1/16 of the buffer limit: memory pressure counts whole held slabs, so a slab as
 * big as a small buffer (-o buffer_mb=1) would make every write wait for a flush.
 */
export function slabBytesFor(bufferBytesMax: number): number {
  let slabBytes = SLAB_BYTES_DEFAULT;
  while (slabBytes > 16 * 1024 && slabBytes * 16 > bufferBytesMax) slabBytes /= 2;
  return slabBytes;
}

export class WriteBack {
  private totalBytes = 0;
  /** Files with buffered bytes. */
  private readonly dirty = new Set<OpenFile>();
  private pressure: Promise<void> | null = null;
  /** The flush windows' buffers: scattered runs are merged and multi-part batches joined there (fs/flush-lanes.ts). */
  readonly lanes: FlushLanes;
  /** Writers waiting for memory (see waitForMemory): woken when a slab is emptied or a pressure flush ends. */
  private memoryWaiters: Array<() => void> = [];
  /** Chunks per flush window (BATCH_CHUNKS_MAX unless the bound is small): one lane holds them. */
  private readonly windowChunks: number;
  /** Lane memory counted against the bound at most (a one-chunk lane can exceed a tiny bound's share). */
  private readonly lanesCountedMaxBytes: number;
  /** Buffered bytes above which whole chunks stream out as they complete (STREAM_FULL_CHUNKS_FRACTION). */
  private readonly streamAboveBytes: number;
  /** Flushes storing bytes now (storeExtents): their windows' ends wake writers waiting for memory. */
  private storesRunning = 0;
  /** Where the bytes of buffered writes live (reused memory: see fs/slab-pool.ts). */
  readonly slabs: SlabPool;
  /** Closed files waiting for the next close batch (see close). */
  private closed = new Set<OpenFile>();
  /** Settles when the files now in `closed` are flushed; null: none waiting. */
  private closedBatch: { promise: Promise<void>; resolve: () => void } | null = null;
  /** Files of the close batch being flushed. */
  private closedInFlight = 0;
  private closeTimer: NodeJS.Timeout | null = null;
  private readonly lateErrors = new Map<number, Error>();
  /** Told, by inode, when a flush of an open file starts (the transport takes back a close it answers itself). */
  onStoreStart: (ino: number) => void = () => undefined;
  /** Bytes of multi-part batches joined in a lane before their store write (copied a second time). */
  joinedBytes = 0;
  /** Bytes of multi-part batches the store took as they lie (not copied again). */
  partsStoredBytes = 0;
  /** Disk space reserved for buffered bytes (DESIGN §5 "Space for buffered bytes"). */
  readonly space: SpaceLedger;

  constructor(
    private readonly store: StorePort,
    readonly opts: WriteBackOptions,
  ) {
    this.space = new SpaceLedger(store);
    const slabBytes = slabBytesFor(opts.bufferBytesMax);
    // Every slab stays in the pool once made (at most the bound's worth): one dropped would stay
    // resident until the garbage collector next ran.
    this.slabs = new SlabPool(slabBytes, Math.ceil(opts.bufferBytesMax / slabBytes) + 1, () =>
      this.wakeMemoryWaiters(),
    );
    // Lanes take at most 1/LANES_SHARE_DIVISOR of the bound: fewer chunks per window under a small
    // bound (at least one: a merge needs a whole chunk, even past a tiny -o buffer_mb).
    const lanesShareBytes = Math.floor(opts.bufferBytesMax / LANES_SHARE_DIVISOR);
    this.windowChunks = Math.max(1, Math.min(BATCH_CHUNKS_MAX, Math.floor(lanesShareBytes / opts.chunkSizeBytes)));
    const laneBytes = opts.chunkSizeBytes * this.windowChunks;
    this.lanes = new FlushLanes(
      laneBytes,
      Math.max(1, Math.min(FLUSH_LANES_MAX, Math.floor(lanesShareBytes / laneBytes))),
    );
    this.lanesCountedMaxBytes = Math.min(lanesShareBytes, this.lanes.lanesMax * laneBytes);
    this.streamAboveBytes = Math.floor((opts.bufferBytesMax - this.lanesCountedMaxBytes) * STREAM_FULL_CHUNKS_FRACTION);
  }

  get bufferedBytes(): number {
    return this.totalBytes;
  }
  /**
   * Memory the buffer holds, counted against its bound: its bytes (or more when slabs are pinned by
   * a few live pieces; bytes being stored keep their slabs until stored) and the flush lanes.
   */
  get heldBytes(): number {
    return (
      Math.max(this.totalBytes, this.slabs.heldBytes) + Math.min(this.lanes.allocatedBytes, this.lanesCountedMaxBytes)
    );
  }

  /**
   * Buffer a write. src is the binding's buffer, valid until the caller answers: its bytes are
   * copied in place over an extent already buffered, else into pooled memory. Done at once
   * (undefined) unless memory pressure makes it wait for a flush (a promise). Either way it is
   * accepted, not durable. No promise per write on the common path: it is the mount's hottest call.
   * Bytes that grow what the file holds first reserve their disk space (fs/space-ledger.ts: from a
   * sample of the disks' free space, no syscall per write); when it is not there the write fails
   * with ENOSPC and buffers nothing.
   */
  write(file: OpenFile, offsetBytes: number, src: Buffer, lengthBytes: number): Promise<void> | undefined {
    if (this.space.enabled) {
      const bytes = this.spaceFor(file, offsetBytes, lengthBytes);
      const reserved = this.space.tryReserve(bytes);
      if (reserved !== true) return this.writeWithSpace(file, offsetBytes, src, lengthBytes);
      file.reservedBytes += Math.max(0, bytes);
    }
    return this.writeReserved(file, offsetBytes, src, lengthBytes);
  }

  /** Disk bytes a write needs reserved beyond what the file has reserved (<= 0: none). */
  private spaceFor(file: OpenFile, offsetBytes: number, lengthBytes: number): number {
    const covered = file.buffer.isEmpty ? 0 : file.buffer.coverage(offsetBytes, offsetBytes + lengthBytes);
    if (covered === lengthBytes) return 0; // an overwrite of buffered bytes takes no more space
    const held = file.buffer.bytes + file.flightBytes + lengthBytes - covered;
    return this.space.need(file, held) - file.reservedBytes;
  }

  /** A write whose reservation needs a new sample of the free space, or fails with ENOSPC. */
  private async writeWithSpace(file: OpenFile, offsetBytes: number, src: Buffer, lengthBytes: number): Promise<void> {
    const bytes = this.spaceFor(file, offsetBytes, lengthBytes);
    await this.space.reserve(
      bytes,
      () => `write of ${lengthBytes} bytes at ${offsetBytes} to ${this.pathText(file.ino)}(file ${file.ino})`,
    );
    file.reservedBytes += Math.max(0, bytes);
    await this.writeReserved(file, offsetBytes, src, lengthBytes);
  }

  /**
   * Bytes the file holds (buffered or in flight) need less space than it reserved (stored, dropped,
   * or reserved twice by writes that raced): the rest goes back.
   */
  private trimSpace(file: OpenFile): void {
    if (file.reservedBytes === 0) return;
    const keep = this.space.need(file, file.buffer.bytes + file.flightBytes);
    if (keep >= file.reservedBytes) return;
    this.space.release(file.reservedBytes - keep);
    file.reservedBytes = keep;
  }

  private writeReserved(
    file: OpenFile,
    offsetBytes: number,
    src: Buffer,
    lengthBytes: number,
  ): Promise<void> | undefined {
    if (this.heldBytes + lengthBytes > this.opts.bufferBytesMax)
      return this.writeUnderPressure(file, offsetBytes, src, lengthBytes);
    this.accept(file, offsetBytes, src, lengthBytes);
    return undefined;
  }

  private async writeUnderPressure(
    file: OpenFile,
    offsetBytes: number,
    src: Buffer,
    lengthBytes: number,
  ): Promise<void> {
    for (
      let round = 0;
      this.heldBytes + lengthBytes > this.opts.bufferBytesMax && round < PRESSURE_ROUNDS_MAX;
      round++
    ) {
      await this.waitForMemory();
    }
    this.accept(file, offsetBytes, src, lengthBytes);
  }

  private accept(file: OpenFile, offsetBytes: number, src: Buffer, lengthBytes: number): void {
    if (!file.buffer.overwrite(offsetBytes, src, lengthBytes) && !this.append(file, offsetBytes, src, lengthBytes)) {
      const before = file.buffer.bytes;
      const piece = this.slabs.copy(src, lengthBytes);
      file.buffer.insert(offsetBytes, piece.data, piece.slab);
      this.totalBytes += file.buffer.bytes - before;
    }
    this.dirty.add(file);
    file.sizeBytes = Math.max(file.sizeBytes, offsetBytes + lengthBytes);
    file.mtimeNs = nowNs();
    file.mtimeSetNs = null; // a write after utimens: the flush's "now" is right again
    this.queueFullChunks(file, offsetBytes, lengthBytes);
    if (file.timer === null) {
      file.timer = setTimeout(() => {
        file.timer = null;
        this.background(file, () => this.flush(file));
      }, this.opts.flushDelayMs);
      file.timer.unref();
    }
  }

  /**
   * A write right after a buffered extent whose bytes end where the slab's free space starts (a log
   * writer's appends): copied there and the extent grown, so a run of tiny appends holds one extent
   * and costs its bytes (3 million 4-byte appends). False: not such a write.
   */
  private append(file: OpenFile, offsetBytes: number, src: Buffer, lengthBytes: number): boolean {
    const e = file.buffer.endingAt(offsetBytes, lengthBytes);
    if (e === null) return false;
    const grown = this.slabs.extend(e.data, e.slab, src, lengthBytes);
    if (grown === null) return false;
    file.buffer.grow(e, grown);
    this.totalBytes += lengthBytes;
    return true;
  }

  /**
   * Read [offsetBytes, +lengthBytes) as the user sees it (stored bytes under buffered ones) straight
   * into target (the binding's buffer: no buffer per read). Returns the byte count (short at EOF):
   * at once (no promise) when no flush or truncate runs on the file and what the buffer does not
   * cover is cached in the store (store/file-io.ts readInto), else a promise under the file's
   * shared lock. A failed
   * shard is served around inside the store, where it failed; nothing here reads again.
   */
  readInto(file: OpenFile, offsetBytes: number, target: Buffer, lengthBytes: number): number | Promise<number> {
    // Idle: no flush or truncate runs, so the buffer and the stored bytes agree until the store read returns.
    const now = file.lock.sharedIfIdle(() => this.readLocked(file, offsetBytes, target, lengthBytes));
    return now ?? file.lock.shared(async () => this.readLocked(file, offsetBytes, target, lengthBytes));
  }

  /** readInto's work under the file's shared lock (or with the lock idle and no promise taken). */
  private readLocked(
    file: OpenFile,
    offsetBytes: number,
    target: Buffer,
    lengthBytes: number,
  ): number | Promise<number> {
    // A follower buffers nothing, and its size at open may be the writer's old one: the store's
    // read stops at the size committed now, and a short read is the end of the file (no zeros).
    if (this.store.followsWriter === true)
      return this.store.readInto(file.ino, offsetBytes, target.subarray(0, Math.min(lengthBytes, target.length)));
    const n = Math.max(0, Math.min(lengthBytes, target.length, file.sizeBytes - offsetBytes));
    if (n === 0) return 0;
    const out = target.subarray(0, n);
    const covered = file.buffer.isEmpty ? 0 : file.buffer.coverage(offsetBytes, offsetBytes + n);
    if (covered === n) {
      file.buffer.overlay(out, offsetBytes);
      return n;
    }
    // Up to the mount's size: chunks stored past the committed size are read too.
    const stored = (got: number): number => {
      assert(got <= n, 'write-back: the store read no more than asked');
      out.fill(0, got); // short at the stored EOF: a buffered size beyond it reads as zeros
      if (covered > 0) file.buffer.overlay(out, offsetBytes);
      return n;
    };
    const got = this.store.readInto(file.ino, offsetBytes, out, 0, file.sizeBytes);
    return typeof got === 'number' ? stored(got) : got.then(stored);
  }

  /**
   * Write everything buffered for the file to the store (durable when it resolves); then report a
   * failed background flush of the file (fsync, and close of a large file).
   */
  async flush(file: OpenFile): Promise<void> {
    await file.lock.exclusive(() => this.flushLocked(file, this.takeAll(file)));
    this.reportError(file);
  }

  /**
   * close(2) of one descriptor (FUSE flush): reports a failed earlier background flush, then stores
   * what is buffered. Close is not fsync (POSIX; DESIGN §5: data is durable at fsync), so a file of
   * at most one chunk is stored in the background, with the other files closed within
   * CLOSE_BATCH_DELAY_MS: a writer of many small files (tar -x, cp -r) does not wait one container
   * append per file (about two device flushes), and their needles share one append
   * (store/small/needle-io.ts). The prefix rule holds as for any flush, and an error is reported by the
   * file's next fsync or close (release keeps it: see settle). Larger files, and closes past
   * CLOSE_FLUSHES_MAX waiting, are stored before close returns.
   */
  async close(file: OpenFile): Promise<void> {
    this.reportError(file);
    if (file.buffer.isEmpty || this.closed.has(file)) return;
    if (!this.joinsCloseBatch(file)) await this.flush(file);
  }

  /** A file of at most one chunk, with room in the close batches. */
  private fitsCloseBatch(file: OpenFile): boolean {
    return file.buffer.bytes <= this.opts.chunkSizeBytes && this.closed.size + this.closedInFlight < CLOSE_FLUSHES_MAX;
  }

  /** The file joins the next close batch (false: it does not fit one; see close). */
  private joinsCloseBatch(file: OpenFile): boolean {
    if (!this.fitsCloseBatch(file)) return false;
    this.closed.add(file);
    if (this.closedBatch === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.closedBatch = { promise, resolve };
    }
    this.scheduleClosed();
    return true;
  }

  /**
   * A close (FUSE flush) of the file now would report nothing and only put it in a close batch, and
   * its release may do that instead (settle): the binding may answer its FLUSH (DESIGN §6 "Answers
   * in C", native/fuse3/clean_closes.h). Asked as a write to it is answered: one handle (its release
   * follows the close), no error kept, no flush of it running (one that starts later calls
   * onStoreStart first, which takes the mark back). A transaction group's error for it is taken into
   * flushError here, so the close goes to JavaScript and reports it.
   */
  closesToBatch(file: OpenFile): boolean {
    if (file.handles !== 1 || file.buffer.isEmpty || this.closed.has(file) || !this.fitsCloseBatch(file)) return false;
    file.flushError ??= this.store.takeWriteError?.(file.ino) ?? null;
    if (file.flushError !== null || this.lateErrors.has(file.ino)) return false;
    return file.lock.idle && file.storing.length === 0;
  }

  /** One close batch at a time, CLOSE_BATCH_DELAY_MS after the first file of the next one closed. */
  private scheduleClosed(): void {
    if (this.closeTimer !== null || this.closedInFlight > 0 || this.closed.size === 0) return;
    this.closeTimer = setTimeout(() => {
      this.closeTimer = null;
      void this.flushClosed();
    }, CLOSE_BATCH_DELAY_MS);
    this.closeTimer.unref();
  }

  /** Flush the closed files together (their store writes run concurrently: one needle append). */
  private async flushClosed(): Promise<void> {
    const files = [...this.closed];
    const batch = this.closedBatch;
    this.closed = new Set();
    this.closedBatch = null;
    this.closedInFlight = files.length;
    try {
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < files.length) {
          const file = files[next++];
          await (unreachable(file) ? this.discard(file) : this.flushQuietly(file));
        }
      };
      await Promise.all(Array.from({ length: Math.min(CLOSE_BATCH_CONCURRENCY, files.length) }, worker));
    } finally {
      this.closedInFlight = 0;
      batch?.resolve();
      this.scheduleClosed();
    }
  }

  /**
   * A rename is about to put this file over another (fs/ops-names.ts storeBeforeReplace): store what
   * it has buffered now, its close batch included. A failure is kept for the file's next fsync or
   * close, as for any background flush; the rename goes on.
   */
  async storeBeforeReplace(file: OpenFile): Promise<void> {
    if (this.closed.has(file)) await this.closedBatch?.promise;
    await this.flushQuietly(file);
  }

  /**
   * The last release of a file: wait until everything buffered is stored (its close batch
   * included). A failure is not thrown (the kernel drops release errors) but kept for the file's
   * next fsync or close, here or, once the file state is forgotten, per inode (LATE_ERRORS_MAX).
   */
  async settle(file: OpenFile): Promise<void> {
    // Its close answered in C (closesToBatch): it joins a batch here, as its FLUSH would have.
    if (!file.buffer.isEmpty && !this.closed.has(file)) this.joinsCloseBatch(file);
    if (this.closed.has(file)) await this.closedBatch?.promise;
    await this.flushQuietly(file);
    if (file.flushError === null || file.handles > 0 || !file.buffer.isEmpty) return;
    if (this.lateErrors.size >= LATE_ERRORS_MAX) this.lateErrors.delete(this.lateErrors.keys().next().value as number);
    this.lateErrors.set(file.ino, file.flushError);
    file.flushError = null;
  }

  /**
   * A close (FUSE flush) of the file now would neither store nor report anything. A group's error
   * (store.takeWriteError) is not asked: only a new file is asked, and inode numbers are never reused.
   */
  closesClean(file: OpenFile): boolean {
    return file.buffer.isEmpty && file.flushError === null && !this.lateErrors.has(file.ino) && !this.closed.has(file);
  }

  /**
   * Throw (once) the error of a failed background flush of the file, or of a transaction group's
   * close that could not keep its bytes (DESIGN §5).
   */
  private reportError(file: OpenFile): void {
    const err = file.flushError ?? this.lateErrors.get(file.ino) ?? this.store.takeWriteError?.(file.ino) ?? null;
    file.flushError = null;
    this.lateErrors.delete(file.ino);
    if (err !== null) throw err;
  }

  /**
   * utimens of a file with buffered bytes: they are stored later with this mtime, not with the
   * flush's "now" (so tar and cp -a need not wait for a flush before close). Under the file's lock,
   * so no flush is between picking its mtime and committing it.
   */
  async setMtime(file: OpenFile, mtimeNs: bigint): Promise<void> {
    await file.lock.exclusive(async () => {
      file.mtimeSetNs = file.buffer.isEmpty ? null : mtimeNs;
      file.mtimeNs = null;
    });
  }

  /** Truncate: drop buffered bytes past the size, store the rest, then cut the stored file. */
  async truncate(file: OpenFile, sizeBytes: number): Promise<void> {
    await file.lock.exclusive(async () => {
      const before = file.buffer.bytes;
      file.buffer.truncate(sizeBytes);
      this.totalBytes -= before - file.buffer.bytes;
      // The bytes past a smaller size left memory: no store write may commit a size over them.
      file.sizeBytes = Math.min(file.sizeBytes, sizeBytes);
      await this.flushLocked(file, this.takeAll(file));
      await this.store.truncate(file.ino, sizeBytes);
      file.sizeBytes = sizeBytes;
      file.storedSizeBytes = sizeBytes;
    });
  }

  /** Everything buffered for the file; no chunk of it is waiting for the whole-chunk flush any more. */
  private takeAll(file: OpenFile): Extent[] {
    file.fullChunks.clear();
    return file.buffer.takeAll();
  }

  /** Store the extents taken out of the file's buffer, then give their memory back. */
  private async flushLocked(file: OpenFile, extents: Extent[]): Promise<void> {
    // This store may fail, and a close of the open file must then report it (closesToBatch).
    if (file.handles > 0) this.onStoreStart(file.ino);
    // Until the store commits them, these bytes are still the file's data to st_blocks and SEEK_DATA.
    let bytes = 0;
    for (const e of extents) {
      pushRange(file.storing, e.offsetBytes, e.offsetBytes + e.data.length);
      bytes += e.data.length;
    }
    file.flightBytes += bytes;
    try {
      await this.storeExtents(file, extents);
    } finally {
      file.storing = [];
      releaseExtents(extents);
      // Stored or dropped (a failed flush): their reservation ends (DESIGN §5 "Space for buffered bytes").
      file.flightBytes -= bytes;
      this.trimSpace(file);
    }
  }

  /**
   * The mtime and ctime the mount shows now (fs/core.ts overlay), committed with the bytes so that
   * storing them never moves the file's times (DESIGN §5 "One view": rsync and make saw a
   * change 0.1 s after close). Undefined: the inode is gone (the store write fails on its own).
   */
  private commitTimes(file: OpenFile): CommitTimes | undefined {
    const row = this.store.ns.getattr(file.ino);
    if (row === null) return undefined;
    const mtimeNs = file.mtimeSetNs ?? file.mtimeNs ?? row.mtimeNs;
    const ctimeNs = file.mtimeNs !== null && file.mtimeNs > row.ctimeNs ? file.mtimeNs : row.ctimeNs;
    return { mtimeNs, ctimeNs };
  }

  private async storeExtents(file: OpenFile, extents: Extent[]): Promise<void> {
    const mtimeBefore = file.mtimeNs;
    if (file.timer !== null && file.buffer.isEmpty) {
      clearTimeout(file.timer);
      file.timer = null;
    }
    let bytes = 0;
    for (const e of extents) bytes += e.data.length;
    this.totalBytes -= bytes;
    const runs = toRuns(extents, this.opts.chunkSizeBytes);
    const hadExtents = extents.length > 0;
    const times = hadExtents ? this.commitTimes(file) : undefined;
    const progress = { released: 0 };
    this.storesRunning++;
    try {
      await this.storeWindows(file, extents, runs, times, progress);
    } finally {
      this.storesRunning--;
      extents.splice(0, progress.released); // released already: flushLocked releases the rest
      this.wakeMemoryWaiters();
    }
    if (file.buffer.isEmpty) {
      this.dirty.delete(file);
      file.mtimeSetNs = null; // committed with the bytes
    }
    // The store's commit stamped the times the mount showed: the row answers now. Writes that
    // arrived meanwhile keep theirs.
    if (hadExtents && file.mtimeNs === mtimeBefore) file.mtimeNs = null;
  }

  /**
   * The runs of one flush, window by window (at most windowChunks chunks each, in one flush
   * lane when a window needs one): adjacent pieces go to the store in one call, which writes their chunks concurrently.
   * progress.released: how many of the (offset-ordered) extents were released after their window.
   */
  private async storeWindows(
    file: OpenFile,
    extents: Extent[],
    runs: Run[],
    times: CommitTimes | undefined,
    progress: { released: number },
  ): Promise<void> {
    const unstored = new UnstoredRuns(runs);
    for (let i = 0, windows = 0; i < runs.length && windows < WINDOWS_MAX; windows++) {
      const j = this.windowEnd(runs, i);
      const window = new LaneWindow(this.lanes, runs.slice(i, j), this.opts.chunkSizeBytes);
      const windowEndBytes = runs[j - 1].offsetBytes + runs[j - 1].lengthBytes;
      // The store reads the window's slabs as they lie (writeBatch): none may be emptied before it settled.
      const pinned = extentsBefore(extents, progress.released, windowEndBytes);
      for (const e of pinned) e.slab?.pin();
      try {
        const merged = await this.mergeScattered(file, window);
        for (const batch of coalesce(merged, this.opts.chunkSizeBytes * this.windowChunks)) {
          const endBytes = batch.offsetBytes + batch.lengthBytes;
          const sizeBytes = this.sizeToCommit(file, unstored.firstAtOrAfter(file.storedSizeBytes, endBytes));
          await this.writeBatch(file, batch, sizeBytes, times, window);
          file.storedSizeBytes = Math.max(file.storedSizeBytes, sizeBytes);
        }
      } finally {
        window.release();
        for (const e of pinned) e.slab?.unpin();
      }
      // The extents wholly in this window are stored: their slab memory is free for writers now,
      // not when the whole flush ends (a 128 MiB flush held its writers for all of it).
      while (
        progress.released < extents.length &&
        extents[progress.released].offsetBytes + extents[progress.released].data.length <= windowEndBytes
      ) {
        extents[progress.released].slab?.release(extents[progress.released].data.length);
        progress.released++;
      }
      i = j;
    }
  }

  /**
   * DESIGN §5 prefix rule: the size a store write may commit. It stops at the first byte at or past
   * the committed size that is still held only in memory (buffered, or in a later batch of this
   * flush), and never passes the file's size. Buffered bytes below the committed size are
   * overwrites: a crash leaves the old bytes there, which the rule allows. firstUnstoredBytes: the
   * first such byte of this flush's runs after the batch about to be written.
   */
  private sizeToCommit(file: OpenFile, firstUnstoredBytes: number): number {
    const stored = file.storedSizeBytes;
    const held = Math.min(firstUnstoredBytes, file.buffer.firstAtOrAfter(stored));
    return Math.max(stored, Math.min(file.sizeBytes, held));
  }

  /**
   * One store.write of a batch. Its parts (32 writes of 128 KiB per chunk) go to the store as they
   * lie when it takes them (store.writeParts: a plain replica layout hashes and writes the slab
   * slices, DESIGN §5 "Write-back pieces"); the slabs are pinned until it settled (storeWindows).
   * Else they are joined in the window's lane buffer (fs/flush-lanes.ts), not a fresh Buffer.concat:
   * first-touch page faults on fresh memory made the concat the mount's largest CPU cost (measured
   * in this VM: 143 ms fresh vs 12 ms reused per 32 MiB). A part merged there already
   * (mergeScattered) is in its place and not copied. Reuse is safe because the store keeps no
   * reference to the data once write() settles.
   */
  private async writeBatch(
    file: OpenFile,
    batch: Run,
    sizeBytes: number,
    times: CommitTimes | undefined,
    window: LaneWindow,
  ): Promise<void> {
    const capBytes = this.opts.chunkSizeBytes * this.windowChunks;
    if (batch.parts.length === 1 || batch.lengthBytes > capBytes || batch.lengthBytes <= STAGING_MIN_BYTES) {
      await this.store.write(file.ino, batch.offsetBytes, runBytes(batch), sizeBytes, times);
      return;
    }
    const asTheyLie = this.store.writeParts?.(file.ino, batch.offsetBytes, batch.parts, sizeBytes, times);
    if (asTheyLie !== undefined && asTheyLie !== null) {
      this.partsStoredBytes += batch.lengthBytes;
      await asTheyLie;
      return;
    }
    const joined = await window.view(batch.offsetBytes, batch.lengthBytes);
    let at = 0;
    for (const part of batch.parts) {
      const inPlace = part.buffer === joined.buffer && part.byteOffset === joined.byteOffset + at;
      if (!inPlace) part.copy(joined, at);
      at += part.length;
    }
    assert(at === batch.lengthBytes, 'write-back: batch parts add up to its length');
    this.joinedBytes += batch.lengthBytes;
    await this.store.write(file.ino, batch.offsetBytes, joined, sizeBytes, times);
  }

  /**
   * Many small runs in one chunk (random writes) become one whole-chunk write: the chunk is read,
   * the runs laid over it, and the store writes it whole (spec §8.1) instead of one read-modify-write
   * per run (§8.2). The chunk is read into its place in the window's lane buffer (a reused buffer:
   * two fresh 4 MiB buffers per merged chunk cost ~30 ms of page faults on this VM).
   */
  private async mergeScattered(file: OpenFile, window: LaneWindow): Promise<Run[]> {
    const cs = this.opts.chunkSizeBytes;
    const runs = window.runs;
    const out: Run[] = [];
    for (let i = 0; i < runs.length; ) {
      const chunk = Math.floor(runs[i].offsetBytes / cs);
      let j = i;
      while (j < runs.length && Math.floor(runs[j].offsetBytes / cs) === chunk) j++;
      if (j - i < MERGE_RUNS_MIN) {
        for (let k = i; k < j; k++) out.push(runs[k]);
      } else {
        const start = chunk * cs;
        const lengthBytes = this.mergedLength(file, chunk, runs[j - 1]);
        const view = await window.view(start, lengthBytes);
        const got = await this.store.readInto(file.ino, start, view, 0, file.sizeBytes);
        view.fill(0, got); // past the stored end: zeros (a hole the buffer extends over)
        for (let k = i; k < j; k++) {
          let at = runs[k].offsetBytes - start;
          for (const part of runs[k].parts) {
            part.copy(view, at);
            at += part.length;
          }
        }
        out.push({ offsetBytes: start, lengthBytes, parts: [view] });
      }
      i = j;
    }
    return out;
  }

  /**
   * How far a merged whole-chunk write of chunk c reaches: its stored length or the end of its last
   * run, whichever is further, within the file. Not to the file's size: a chunk's tail past both is
   * a hole and stays one, as allocation answers predicted it (store/meta/allocated.ts).
   */
  private mergedLength(file: OpenFile, c: number, lastRun: Run): number {
    const start = c * this.opts.chunkSizeBytes;
    const runEnd = lastRun.offsetBytes + lastRun.lengthBytes - start;
    const stored = this.store.chunkLengthBytes?.(file.ino, c) ?? this.opts.chunkSizeBytes;
    return Math.min(this.opts.chunkSizeBytes, file.sizeBytes - start, Math.max(stored, runEnd));
  }

  /** End (exclusive) of the run window starting at i: the runs of at most windowChunks chunks. */
  private windowEnd(runs: Run[], i: number): number {
    const cs = this.opts.chunkSizeBytes;
    let chunks = 0;
    let last = -1;
    let j = i;
    for (; j < runs.length; j++) {
      const c = Math.floor(runs[j].offsetBytes / cs);
      if (c !== last) {
        if (chunks === this.windowChunks) break;
        chunks++;
        last = c;
      }
    }
    return j;
  }

  /**
   * A write that completed a chunk queues it for a whole-chunk write once the buffered bytes pass
   * streamAboveBytes; one background task per file takes every chunk completed by then, so a fast sequential writer
   * hands the store several chunks per call.
   */
  private queueFullChunks(file: OpenFile, offsetBytes: number, lengthBytes: number): void {
    const cs = this.opts.chunkSizeBytes;
    const end = offsetBytes + lengthBytes;
    for (let c = Math.floor(offsetBytes / cs); (c + 1) * cs <= end; c++) {
      if (this.chunkComplete(file, c)) file.fullChunks.add(c);
    }
    // Below that share of the limit whole chunks stay in memory, so a file rewritten while it fits meets its
    // rewrites there (like the kernel's background writeback threshold); above it they stream out.
    if (file.fullChunks.size === 0 || file.fullFlushScheduled || this.totalBytes <= this.streamAboveBytes) return;
    file.fullFlushScheduled = true;
    this.background(file, () =>
      file.lock.exclusive(() => {
        file.fullFlushScheduled = false;
        const chunks = [...file.fullChunks].sort((a, b) => a - b);
        file.fullChunks.clear();
        const extents: Extent[] = [];
        for (const c of chunks) extents.push(...file.buffer.take(c * cs, (c + 1) * cs));
        return this.flushLocked(file, extents);
      }),
    );
  }

  /**
   * Chunk c is whole in memory, or its first part is stored and the buffer holds the rest (below the
   * committed size every byte is stored): a chunk whose first part a timer or pressure flush stored
   * is completed as one write with the full chunks after it, never left behind in memory while they
   * are stored (which would hold the committed size back: DESIGN §5 prefix rule).
   */
  private chunkComplete(file: OpenFile, c: number): boolean {
    const start = c * this.opts.chunkSizeBytes;
    const end = start + this.opts.chunkSizeBytes;
    const from = file.storedSizeBytes > start && file.storedSizeBytes < end ? file.storedSizeBytes : start;
    return file.buffer.coverage(from, end) === end - from;
  }

  /**
   * Wait until some memory may be free: a slab emptied (a flush window stored, possibly of a flush
   * already running: no waiting for its end) or the pressure flush of the largest buffer ended.
   * With no file to flush every held byte is being stored, and its window's end wakes the writer.
   */
  private waitForMemory(): Promise<void> {
    assert(this.memoryWaiters.length < MEMORY_WAITERS_MAX, 'write-back: too many writers waiting for memory');
    const woken = new Promise<void>((resolve) => this.memoryWaiters.push(resolve));
    if (this.pressure === null) {
      const biggest = this.largest();
      if (biggest !== undefined) {
        this.pressure = this.flushQuietly(biggest).finally(() => {
          this.pressure = null;
          this.wakeMemoryWaiters();
        });
      } else if (this.storesRunning === 0) {
        this.wakeMemoryWaiters(); // nothing buffered, nothing being stored: no wait frees more (a write larger than the bound)
      }
    }
    return woken;
  }

  private wakeMemoryWaiters(): void {
    const waiters = this.memoryWaiters;
    if (waiters.length === 0) return;
    this.memoryWaiters = [];
    for (const w of waiters) w();
  }

  private largest(): OpenFile | undefined {
    let best: OpenFile | undefined;
    for (const f of this.files()) if (best === undefined || f.buffer.bytes > best.buffer.bytes) best = f;
    return best !== undefined && best.buffer.bytes > 0 ? best : undefined;
  }

  private files(): OpenFile[] {
    return [...this.dirty];
  }

  /** Flush every file (unmount, statfs-consistent shutdown); one failure does not skip the others. */
  async flushAll(): Promise<void> {
    let first: unknown = null;
    for (const f of this.files()) {
      try {
        await this.flush(f);
      } catch (err) {
        first ??= err;
      }
    }
    if (first !== null) throw first;
  }

  /**
   * Drop what is buffered for a file no one can reach any more (see unreachable): as the kernel drops
   * the dirty pages of a deleted file, its bytes never reach the store (a temporary
   * file unlinked within its close batch costs no container append).
   */
  private async discard(file: OpenFile): Promise<void> {
    await file.lock.exclusive(async () => {
      const extents = this.takeAll(file);
      // Out of the count as a store write takes them out (storeExtents): left in, the count only
      // grew, and past the bound every write relieved pressure first (seen: 19-41 MiB counted as
      // buffered after a stress of temporary files, all of them gone).
      for (const e of extents) this.totalBytes -= e.data.length;
      releaseExtents(extents);
      this.trimSpace(file);
    });
  }

  private async flushQuietly(file: OpenFile): Promise<void> {
    try {
      await file.lock.exclusive(() => this.flushLocked(file, this.takeAll(file)));
    } catch (err) {
      this.fail(file, err);
    }
  }

  private background(file: OpenFile, fn: () => Promise<void>): void {
    fn().catch((err) => this.fail(file, err));
  }

  private fail(file: OpenFile, err: unknown): void {
    file.flushError = err instanceof Error ? err : new Error(String(err));
    this.opts.log(`flush of ${this.pathText(file.ino)}(file ${file.ino}) failed: ${file.flushError.message}`);
  }

  /** The file's path and a space for a log line, or nothing when the metadata cannot say (its server away). */
  private pathText(ino: number): string {
    try {
      const path = this.store.pathOf(ino);
      return path === null ? '' : `${path} `;
    } catch {
      return '';
    }
  }
}

/**
 * A file without names and without open handles: nothing can read its bytes again (a new open
 * needs a name, mmap and dup hold a handle), so storing them would be wasted work; its data is
 * deleted at its last release or forget (fs/core.ts).
 */
function unreachable(file: OpenFile): boolean {
  return file.unlinked && file.handles === 0;
}

/**
 * One flush window's place in its lane buffer: the window's k-th chunk (in offset order) has the
 * k-th chunk-sized slot, so the bytes of adjacent chunks are adjacent there too, and a batch
 * (coalesced from touching runs, so from adjacent chunks) is one contiguous view of it.
 */
export class LaneWindow {
  private readonly slots = new Map<number, number>();
  private lane: FlushLane | null = null;
  private acquiring: Promise<FlushLane> | null = null;
  constructor(
    private readonly lanes: FlushLanes,
    readonly runs: Run[],
    private readonly chunkSizeBytes: number,
  ) {
    for (const r of runs) {
      const c = Math.floor(r.offsetBytes / chunkSizeBytes);
      if (!this.slots.has(c)) this.slots.set(c, this.slots.size);
    }
    assert(this.slots.size * chunkSizeBytes <= lanes.laneBytes, 'write-back: a window fits a lane');
  }

  /**
   * The lane's bytes for file range [offsetBytes, +lengthBytes) (within this window's chunks). The
   * lane is taken at the first view: a window of single-part batches (a close batch's small files)
   * takes none, so such flushes still run CLOSE_BATCH_CONCURRENCY at once.
   */
  async view(offsetBytes: number, lengthBytes: number): Promise<Buffer> {
    if (this.lane === null) {
      this.acquiring ??= Promise.resolve(this.lanes.acquire());
      this.lane = await this.acquiring;
    }
    const cs = this.chunkSizeBytes;
    const c = Math.floor(offsetBytes / cs);
    const slot = this.slots.get(c);
    assert(slot !== undefined, `write-back: chunk ${c} is in the flush window`);
    const at = slot * cs + (offsetBytes - c * cs);
    assert(at + lengthBytes <= this.lane.bytes, 'write-back: a batch fits its lane');
    return this.lane.buffer.subarray(at, at + lengthBytes);
  }

  /** Give the lane back (the window's store writes have settled). */
  release(): void {
    if (this.lane !== null) this.lanes.release(this.lane);
    this.lane = null;
  }
}

/**
 * The runs of one flush not yet stored, for the prefix rule: runs are offset-ordered and stored in
 * order, and both arguments only grow during a flush (it holds the file's lock), so one cursor
 * answers every batch in O(runs) total.
 */
export class UnstoredRuns {
  private next = 0;
  constructor(private readonly runs: Run[]) {}

  /** The first byte at or after fromBytes of the runs starting at or after storedEndBytes (Infinity: none). */
  firstAtOrAfter(fromBytes: number, storedEndBytes: number): number {
    const runs = this.runs;
    while (
      this.next < runs.length &&
      (runs[this.next].offsetBytes < storedEndBytes ||
        runs[this.next].offsetBytes + runs[this.next].lengthBytes <= fromBytes)
    )
      this.next++;
    return this.next < runs.length ? Math.max(runs[this.next].offsetBytes, fromBytes) : Infinity;
  }
}

/** The extents from index `from` (offset-ordered) that start before endBytes. */
function extentsBefore(extents: Extent[], from: number, endBytes: number): Extent[] {
  let to = from;
  while (to < extents.length && extents[to].offsetBytes < endBytes) to++;
  return extents.slice(from, to);
}
