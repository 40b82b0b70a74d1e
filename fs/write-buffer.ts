// Per-file write-back buffer (DESIGN §5, issue 4): writes land in memory, are visible to reads at
// once, and reach the store on fsync, flush/close, memory pressure, a short timer, and as soon as a
// whole chunk is buffered (so sequential writes stream as whole-chunk writes, spec §8.1).
// Memory is bounded: past the limit a write waits until the largest buffer has been flushed.
import { OpenFile } from './handles';
import { Extent, toRuns } from './extent-map';
import type { StorePort } from './store-port';
import { nowNs } from '../store/meta';

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

export class WriteBack {
  private totalBytes = 0;
  /** Files with buffered bytes. */
  private readonly dirty = new Set<OpenFile>();
  private pressure: Promise<void> | null = null;

  constructor(private readonly store: StorePort, readonly opts: WriteBackOptions) {}

  get bufferedBytes(): number { return this.totalBytes; }

  /** Buffer a write (data is the caller's copy). Resolves when it is accepted, not when durable. */
  async write(file: OpenFile, offsetBytes: number, data: Buffer): Promise<void> {
    for (let round = 0; this.totalBytes + data.length > this.opts.bufferBytesMax && round < PRESSURE_ROUNDS_MAX; round++) {
      await this.relievePressure();
    }
    const before = file.buffer.bytes;
    file.buffer.insert(offsetBytes, data);
    this.dirty.add(file);
    this.totalBytes += file.buffer.bytes - before;
    file.sizeBytes = Math.max(file.sizeBytes, offsetBytes + data.length);
    file.mtimeNs = nowNs();
    this.flushFullChunks(file, offsetBytes, data.length);
    if (file.timer === null) {
      file.timer = setTimeout(() => { file.timer = null; this.background(file, () => this.flush(file)); }, this.opts.flushDelayMs);
      file.timer.unref();
    }
  }

  /** Read [offsetBytes, +lengthBytes) as the user sees it: stored bytes under buffered ones. */
  async read(file: OpenFile, offsetBytes: number, lengthBytes: number): Promise<Buffer> {
    return file.lock.shared(async () => {
      const n = Math.max(0, Math.min(lengthBytes, file.sizeBytes - offsetBytes));
      if (n === 0) return Buffer.alloc(0);
      const out = Buffer.alloc(n);
      if (file.buffer.coverage(offsetBytes, offsetBytes + n) < n) {
        const stored = await this.store.read(file.ino, offsetBytes, n);
        stored.copy(out, 0, 0, Math.min(stored.length, n)); // short at the stored EOF: the rest is zeros
      }
      file.buffer.overlay(out, offsetBytes);
      return out;
    });
  }

  /** Write everything buffered for the file to the store (durable when it resolves). */
  async flush(file: OpenFile): Promise<void> {
    await file.lock.exclusive(() => this.flushLocked(file, file.buffer.takeAll()));
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
      await this.flushLocked(file, file.buffer.takeAll());
      await this.store.truncate(file.ino, sizeBytes);
      file.sizeBytes = sizeBytes;
    });
  }

  private async flushLocked(file: OpenFile, extents: Extent[]): Promise<void> {
    if (file.timer !== null && file.buffer.isEmpty) { clearTimeout(file.timer); file.timer = null; }
    let bytes = 0;
    for (const e of extents) bytes += e.data.length;
    this.totalBytes -= bytes;
    for (const piece of await this.mergeScattered(file, toRuns(extents, this.opts.chunkSizeBytes))) {
      await this.store.write(file.ino, piece.offsetBytes, piece.data);
    }
    if (file.buffer.isEmpty) this.dirty.delete(file);
    if (file.mtimeNs !== null && extents.length > 0) {
      const t = file.mtimeNs;
      this.store.ns.setattr(file.ino, { mtimeNs: t, ctimeNs: t });
      if (file.mtimeNs === t) file.mtimeNs = null;
    }
  }

  /**
   * Many small runs in one chunk (random writes) become one whole-chunk write: the chunk is read,
   * the runs laid over it, and the store writes it whole (spec §8.1) instead of one read-modify-write
   * per run (§8.2).
   */
  private async mergeScattered(file: OpenFile, runs: Extent[]): Promise<Extent[]> {
    const cs = this.opts.chunkSizeBytes;
    const out: Extent[] = [];
    for (let i = 0; i < runs.length;) {
      const chunk = Math.floor(runs[i].offsetBytes / cs);
      let j = i;
      while (j < runs.length && Math.floor(runs[j].offsetBytes / cs) === chunk) j++;
      if (j - i < MERGE_RUNS_MIN) {
        for (let k = i; k < j; k++) out.push(runs[k]);
      } else {
        const start = chunk * cs;
        const lengthBytes = Math.min(cs, file.sizeBytes - start);
        const whole = Buffer.alloc(lengthBytes);
        const stored = await this.store.read(file.ino, start, lengthBytes);
        stored.copy(whole, 0, 0, Math.min(stored.length, lengthBytes));
        for (let k = i; k < j; k++) runs[k].data.copy(whole, runs[k].offsetBytes - start);
        out.push({ offsetBytes: start, data: whole });
      }
      i = j;
    }
    return out;
  }

  /** A write that completed a chunk starts writing that whole chunk now. */
  private flushFullChunks(file: OpenFile, offsetBytes: number, lengthBytes: number): void {
    const cs = this.opts.chunkSizeBytes;
    const end = offsetBytes + lengthBytes;
    for (let c = Math.floor(offsetBytes / cs); (c + 1) * cs <= end; c++) {
      const start = c * cs;
      if (file.buffer.coverage(start, start + cs) !== cs) continue;
      this.background(file, () => file.lock.exclusive(() => this.flushLocked(file, file.buffer.take(start, start + cs))));
    }
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
    try { await file.lock.exclusive(() => this.flushLocked(file, file.buffer.takeAll())); } catch (err) { this.fail(file, err); }
  }

  private background(file: OpenFile, fn: () => Promise<void>): void {
    fn().catch((err) => this.fail(file, err));
  }

  private fail(file: OpenFile, err: unknown): void {
    file.flushError = err instanceof Error ? err : new Error(String(err));
    this.opts.log(`flush of inode ${file.ino} failed: ${file.flushError.message}`);
  }
}
