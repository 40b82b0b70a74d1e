// Per-file write-back buffer (DESIGN §5, issue 4): writes land in memory, are visible to reads at
// once, and reach the store on fsync, flush/close, memory pressure, a short timer, and as soon as a
// whole chunk is buffered (so sequential writes stream as whole-chunk writes, spec §8.1).
// Memory is bounded: past the limit a write waits until the largest buffer has been flushed.
// Chunks may be stored out of order, so every store write commits a size that stops at the first
// byte still held only in memory (DESIGN §5 prefix rule): a crash leaves a prefix of each file.
import { OpenFile } from './handles';
import { Extent, Run, releaseExtents, runBytes, toRuns } from './extent-map';
import { SLAB_BYTES_DEFAULT, SlabPool } from './slab-pool';
import { allocLarge } from '../src/huge-buffer';
import type { StorePort } from './store-port';
import { nowNs } from '../store/meta';
import { pathOfIno } from '../store/ino-path';
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
/** At most this many chunks per store.write call (the store writes them concurrently). */
const BATCH_CHUNKS_MAX = 8;
/** A bound on the windows of one flush (each holds >= 1 run; a buffer holds far fewer runs). */
const WINDOWS_MAX = 1 << 24;
/** Staging buffers kept for reuse between flushes (each chunkSize * BATCH_CHUNKS_MAX bytes). */
const STAGING_KEPT_MAX = 2;

/** Join offset-ordered, touching runs into calls of at most batchBytesMax (still uncopied). */
export function coalesce(runs: Run[], batchBytesMax: number): Run[] {
  const out: Run[] = [];
  let cur: Run | null = null;
  for (const r of runs) {
    if (cur !== null && cur.offsetBytes + cur.lengthBytes === r.offsetBytes && cur.lengthBytes + r.lengthBytes <= batchBytesMax) {
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
  /** Reused chunk-sized buffers scattered runs are merged into (see mergeScattered). */
  private readonly chunkBuffers: Buffer[] = [];
  /** Reused buffers a multi-part batch is copied into before store.write (see writeBatch). */
  private readonly staging: Buffer[] = [];
  /** Where the bytes of buffered writes live (reused memory: see fs/slab-pool.ts). */
  readonly slabs: SlabPool;

  constructor(private readonly store: StorePort, readonly opts: WriteBackOptions) {
    this.slabs = new SlabPool(slabBytesFor(opts.bufferBytesMax));
  }

  get bufferedBytes(): number { return this.totalBytes; }
  /** Memory the buffer holds: its bytes, or more when slabs are pinned by a few live pieces. */
  get heldBytes(): number { return Math.max(this.totalBytes, this.slabs.heldBytes); }

  /**
   * Buffer a write. src is the binding's buffer, valid until the caller answers: its bytes are
   * copied in place over an extent already buffered, else into pooled memory. Done at once
   * (undefined) unless memory pressure makes it wait for a flush (a promise). Either way it is
   * accepted, not durable. No promise per write on the common path: it is the mount's hottest call.
   */
  write(file: OpenFile, offsetBytes: number, src: Buffer, lengthBytes: number): Promise<void> | undefined {
    if (this.heldBytes + lengthBytes > this.opts.bufferBytesMax) return this.writeUnderPressure(file, offsetBytes, src, lengthBytes);
    this.accept(file, offsetBytes, src, lengthBytes);
    return undefined;
  }

  private async writeUnderPressure(file: OpenFile, offsetBytes: number, src: Buffer, lengthBytes: number): Promise<void> {
    for (let round = 0; this.heldBytes + lengthBytes > this.opts.bufferBytesMax && round < PRESSURE_ROUNDS_MAX; round++) {
      await this.relievePressure();
    }
    this.accept(file, offsetBytes, src, lengthBytes);
  }

  private accept(file: OpenFile, offsetBytes: number, src: Buffer, lengthBytes: number): void {
    if (!file.buffer.overwrite(offsetBytes, src, lengthBytes)) {
      const before = file.buffer.bytes;
      const piece = this.slabs.copy(src, lengthBytes);
      file.buffer.insert(offsetBytes, piece.data, piece.slab);
      this.totalBytes += file.buffer.bytes - before;
    }
    this.dirty.add(file);
    file.sizeBytes = Math.max(file.sizeBytes, offsetBytes + lengthBytes);
    file.mtimeNs = nowNs();
    this.queueFullChunks(file, offsetBytes, lengthBytes);
    if (file.timer === null) {
      file.timer = setTimeout(() => { file.timer = null; this.background(file, () => this.flush(file)); }, this.opts.flushDelayMs);
      file.timer.unref();
    }
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
  private readLocked(file: OpenFile, offsetBytes: number, target: Buffer, lengthBytes: number): number | Promise<number> {
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

  /** Write everything buffered for the file to the store (durable when it resolves). */
  async flush(file: OpenFile): Promise<void> {
    await file.lock.exclusive(() => this.flushLocked(file, this.takeAll(file)));
    if (file.flushError !== null) {
      const err = file.flushError;
      file.flushError = null;
      throw err;
    }
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
    try {
      await this.storeExtents(file, extents);
    } finally {
      releaseExtents(extents);
    }
  }

  private async storeExtents(file: OpenFile, extents: Extent[]): Promise<void> {
    const mtimeBefore = file.mtimeNs;
    if (file.timer !== null && file.buffer.isEmpty) { clearTimeout(file.timer); file.timer = null; }
    let bytes = 0;
    for (const e of extents) bytes += e.data.length;
    this.totalBytes -= bytes;
    // Windows of at most BATCH_CHUNKS_MAX chunks: the buffers scattered chunks are merged into are
    // reused and bounded. Adjacent pieces go to the store in one call, which writes their chunks
    // concurrently.
    const runs = toRuns(extents, this.opts.chunkSizeBytes);
    const unstored = new UnstoredRuns(runs);
    for (let i = 0, windows = 0; i < runs.length && windows < WINDOWS_MAX; windows++) {
      const j = this.windowEnd(runs, i);
      const wholes: Buffer[] = [];
      try {
        const merged = await this.mergeScattered(file, runs.slice(i, j), wholes);
        for (const batch of coalesce(merged, this.opts.chunkSizeBytes * BATCH_CHUNKS_MAX)) {
          const endBytes = batch.offsetBytes + batch.lengthBytes;
          const sizeBytes = this.sizeToCommit(file, unstored.firstAtOrAfter(file.storedSizeBytes, endBytes));
          await this.writeBatch(file, batch, sizeBytes);
          file.storedSizeBytes = Math.max(file.storedSizeBytes, sizeBytes);
        }
      } finally {
        for (const w of wholes) if (this.chunkBuffers.length < BATCH_CHUNKS_MAX) this.chunkBuffers.push(w);
      }
      i = j;
    }
    if (file.buffer.isEmpty) this.dirty.delete(file);
    // The store's commit stamped mtime/ctime "now" (at most a flush delay after the writes): no
    // second metadata transaction (and fsync) per flush. Writes that arrived meanwhile keep theirs.
    if (extents.length > 0 && file.mtimeNs === mtimeBefore) file.mtimeNs = null;
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
   * One store.write of a batch. Its parts (32 writes of 128 KiB per chunk) are copied into a reused
   * staging buffer, not a fresh Buffer.concat: first-touch page faults on fresh memory made the concat
   * the mount's largest CPU cost (measured in this VM: 143 ms fresh vs 12 ms reused per 32 MiB).
   * Reuse is safe because the store keeps no reference to the data once write() settles.
   */
  private async writeBatch(file: OpenFile, batch: Run, sizeBytes: number): Promise<void> {
    const capBytes = this.opts.chunkSizeBytes * BATCH_CHUNKS_MAX;
    if (batch.parts.length === 1 || batch.lengthBytes > capBytes) {
      await this.store.write(file.ino, batch.offsetBytes, runBytes(batch), sizeBytes);
      return;
    }
    const buf = this.staging.pop() ?? allocLarge(capBytes);
    try {
      let at = 0;
      for (const part of batch.parts) { part.copy(buf, at); at += part.length; }
      assert(at === batch.lengthBytes, 'write-back: batch parts add up to its length');
      await this.store.write(file.ino, batch.offsetBytes, buf.subarray(0, at), sizeBytes);
    } finally {
      if (this.staging.length < STAGING_KEPT_MAX) this.staging.push(buf);
    }
  }

  /**
   * Many small runs in one chunk (random writes) become one whole-chunk write: the chunk is read,
   * the runs laid over it, and the store writes it whole (spec §8.1) instead of one read-modify-write
   * per run (§8.2).
   */
  private async mergeScattered(file: OpenFile, runs: Run[], wholes: Buffer[]): Promise<Run[]> {
    const cs = this.opts.chunkSizeBytes;
    const out: Run[] = [];
    for (let i = 0; i < runs.length;) {
      const chunk = Math.floor(runs[i].offsetBytes / cs);
      let j = i;
      while (j < runs.length && Math.floor(runs[j].offsetBytes / cs) === chunk) j++;
      if (j - i < MERGE_RUNS_MIN) {
        for (let k = i; k < j; k++) out.push(runs[k]);
      } else {
        const start = chunk * cs;
        const lengthBytes = Math.min(cs, file.sizeBytes - start);
        // A reused chunk buffer, filled by the store directly: two fresh 4 MiB buffers per merged
        // chunk cost ~30 ms of page faults on this VM.
        const whole = this.chunkBuffers.pop() ?? allocLarge(cs);
        wholes.push(whole);
        const view = whole.subarray(0, lengthBytes);
        const got = await this.store.readInto(file.ino, start, view, 0, file.sizeBytes);
        view.fill(0, got); // past the stored end: zeros (a hole the buffer extends over)
        for (let k = i; k < j; k++) {
          let at = runs[k].offsetBytes - start;
          for (const part of runs[k].parts) { part.copy(view, at); at += part.length; }
        }
        out.push({ offsetBytes: start, lengthBytes, parts: [view] });
      }
      i = j;
    }
    return out;
  }

  /** End (exclusive) of the run window starting at i: the runs of at most BATCH_CHUNKS_MAX chunks. */
  private windowEnd(runs: Run[], i: number): number {
    const cs = this.opts.chunkSizeBytes;
    let chunks = 0;
    let last = -1;
    let j = i;
    for (; j < runs.length; j++) {
      const c = Math.floor(runs[j].offsetBytes / cs);
      if (c !== last) {
        if (chunks === BATCH_CHUNKS_MAX) break;
        chunks++;
        last = c;
      }
    }
    return j;
  }


  /**
   * A write that completed a chunk queues it for a whole-chunk write once the buffer is over half full;
   * one background task per file takes every chunk completed by then, so a fast sequential writer
   * hands the store several chunks per call.
   */
  private queueFullChunks(file: OpenFile, offsetBytes: number, lengthBytes: number): void {
    const cs = this.opts.chunkSizeBytes;
    const end = offsetBytes + lengthBytes;
    for (let c = Math.floor(offsetBytes / cs); (c + 1) * cs <= end; c++) {
      if (this.chunkComplete(file, c)) file.fullChunks.add(c);
    }
    // Below half the limit whole chunks stay in memory, so a file rewritten while it fits meets its
    // rewrites there (like the kernel's background writeback threshold); above it they stream out.
    if (file.fullChunks.size === 0 || file.fullFlushScheduled || this.totalBytes <= this.opts.bufferBytesMax / 2) return;
    file.fullFlushScheduled = true;
    this.background(file, () => file.lock.exclusive(() => {
      file.fullFlushScheduled = false;
      const chunks = [...file.fullChunks].sort((a, b) => a - b);
      file.fullChunks.clear();
      const extents: Extent[] = [];
      for (const c of chunks) extents.push(...file.buffer.take(c * cs, (c + 1) * cs));
      return this.flushLocked(file, extents);
    }));
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

  private relievePressure(): Promise<void> {
    if (this.pressure === null) {
      this.pressure = (async () => {
        const biggest = this.largest();
        if (biggest !== undefined) await this.flushQuietly(biggest);
      })().finally(() => { this.pressure = null; });
    }
    return this.pressure;
  }

  private largest(): OpenFile | undefined {
    let best: OpenFile | undefined;
    for (const f of this.files()) if (best === undefined || f.buffer.bytes > best.buffer.bytes) best = f;
    return best !== undefined && best.buffer.bytes > 0 ? best : undefined;
  }

  private files(): OpenFile[] { return [...this.dirty]; }

  /** Flush every file (unmount, statfs-consistent shutdown). */
  async flushAll(): Promise<void> {
    for (const f of this.files()) await this.flush(f);
  }

  private async flushQuietly(file: OpenFile): Promise<void> {
    try { await file.lock.exclusive(() => this.flushLocked(file, this.takeAll(file))); } catch (err) { this.fail(file, err); }
  }

  private background(file: OpenFile, fn: () => Promise<void>): void {
    fn().catch((err) => this.fail(file, err));
  }

  private fail(file: OpenFile, err: unknown): void {
    file.flushError = err instanceof Error ? err : new Error(String(err));
    const path = pathOfIno(this.store.ns.db, file.ino);
    this.opts.log(`flush of ${path === null ? '' : `${path} `}(file ${file.ino}) failed: ${file.flushError.message}`);
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
    while (this.next < runs.length && (runs[this.next].offsetBytes < storedEndBytes || runs[this.next].offsetBytes + runs[this.next].lengthBytes <= fromBytes)) this.next++;
    return this.next < runs.length ? Math.max(runs[this.next].offsetBytes, fromBytes) : Infinity;
  }
}
