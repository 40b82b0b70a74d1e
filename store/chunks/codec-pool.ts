// Transformed chunks decoded and encoded off the JavaScript thread (DESIGN §10). A whole 4 MiB chunk
// takes milliseconds to decrypt and decompress, and more to compress (zstd level 3: about 10 ms
// here); on the mount's one JavaScript thread that time stalls every FUSE request and leaves the
// disks idle. Read-ahead decodes of large payloads and whole-chunk encodes go to a few worker
// threads (started on first use, never keeping the process alive); small payloads, and decodes a
// reader waits for, run inline, where a round trip to a worker costs more than it saves.
import { availableParallelism } from 'node:os';
import * as nodePath from 'node:path';
import { Worker } from 'node:worker_threads';
import { EncodedPayload, decodePayloadInto } from '../../src/chunk-codec';
import { ChunkIdentity, DecryptError } from '../../src/chunk-cipher';
import { ChunkTransforms } from '../../src/chunk-transforms';
import { segmentedLen } from '../../src/chunk-segments';
import { ErrorSite, FormatError, assert } from '../../src/errors';
import { CodecJob, CodecReply, DecodeJob, EncodeJob, Encoded } from './codec-protocol';
import { PayloadPool } from './payload-pool';

/** Codec threads at most (the machine's cores, at most this many). */
export const DECODE_WORKERS_MAX = 2;
/** Payloads below this decode (and contents below this encode) inline (a worker round trip costs about as much). */
export const DECODE_INLINE_BELOW_BYTES = 64 << 10;
/** Jobs queued on the codec threads at most; beyond, decodes run inline (read-ahead is bounded above, this is the guard). */
export const DECODE_JOBS_MAX = 64;
/**
 * Encodes on the codec threads at once, at most: one per thread. Past it a chunk encodes inline,
 * which holds the flush back as before. Unbounded (up to DECODE_JOBS_MAX), the flush lanes put
 * dozens of chunks in flight, each with a shared copy of its content and a payload buffer: peak
 * RSS 980 MiB against 365 on a sequential zstd write (fio, 5 Dec).
 */
export const ENCODES_IN_FLIGHT_MAX = DECODE_WORKERS_MAX;

interface Pending {
  resolve: (encoded: Encoded | null) => void;
  reject: (err: Error) => void;
  site: ErrorSite;
}

/** A buffer of the pool's (shared memory): a decode thread may use it. */
function isShared(b: Buffer): boolean {
  return b.buffer instanceof SharedArrayBuffer;
}

class DecodeThread {
  readonly pending = new Map<number, Pending>();
  private readonly worker: Worker;
  constructor(storeKey: Buffer | null, onExit: (t: DecodeThread, err: Error) => void) {
    this.worker = new Worker(nodePath.join(__dirname, 'codec-worker.js'), { workerData: { storeKey } });
    this.worker.unref();
    this.worker.on('message', (r: CodecReply) => this.settle(r));
    this.worker.on('error', (err) => onExit(this, err));
    this.worker.on('exit', (code) => onExit(this, new Error(`codec worker exited with code ${code}`)));
  }
  post(job: CodecJob, p: Pending): void {
    this.pending.set(job.jobId, p);
    this.worker.postMessage(job);
  }
  private settle(r: CodecReply): void {
    const p = this.pending.get(r.jobId);
    assert(p !== undefined, 'codec reply for a job in flight');
    this.pending.delete(r.jobId);
    if (r.error === null) p.resolve(r.encoded);
    else
      p.reject(
        r.error.decrypt
          ? new DecryptError(p.site, r.error.segment)
          : new FormatError(r.error.field, r.error.detail, p.site),
      );
  }
  failAll(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
  terminate(): Promise<number> {
    return this.worker.terminate();
  }
}

/** The mount's codec threads. */
export class CodecPool {
  private readonly threads: DecodeThread[] = [];
  private nextJobId = 1;
  private closed = false;
  private readonly size = Math.max(1, Math.min(DECODE_WORKERS_MAX, availableParallelism()));
  /** Stored payloads and raw chunks (decoded ones come back when the decoded cache evicts them). */
  private readonly buffers = new PayloadPool();
  private scratch = Buffer.alloc(0);
  /** Encodes on the codec threads now (ENCODES_IN_FLIGHT_MAX). */
  private encodes = 0;

  constructor(private readonly storeKey: Buffer | null) {}

  /**
   * The raw bytes of a verified stored payload into target (exactly content_len; the GCM tag checked
   * before they are usable). Payloads and targets in shared memory (takePayload, takeRaw) go to a
   * worker when onWorker; both are the caller's again when this settles.
   */
  decode(
    t: ChunkTransforms,
    flags: number,
    stored: Buffer,
    target: Buffer,
    id: ChunkIdentity,
    site: ErrorSite,
    onWorker: boolean,
  ): Promise<void> {
    if (
      !onWorker ||
      !isShared(stored) ||
      !isShared(target) ||
      stored.length < DECODE_INLINE_BELOW_BYTES ||
      this.closed ||
      this.jobs() >= DECODE_JOBS_MAX
    ) {
      try {
        decodePayloadInto(t, flags, stored, target, id, this.storeKey, site, (n) => this.inlineScratch(n));
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err);
      }
    }
    assert(stored.byteOffset === 0 && target.byteOffset === 0, 'pooled buffers start their shared memory');
    const thread = this.leastBusy();
    const jobId = this.nextJobId++;
    const job: DecodeJob = {
      kind: 'decode',
      jobId,
      transforms: t,
      flags,
      stored: stored.buffer as SharedArrayBuffer,
      storedLenBytes: stored.length,
      raw: target.buffer as SharedArrayBuffer,
      contentLenBytes: target.length,
      id,
    };
    return new Promise<void>((resolve, reject) => thread.post(job, { resolve: () => resolve(), reject, site }));
  }

  /**
   * A whole chunk's content through its transforms on a codec thread (DESIGN §10), into a payload
   * buffer from alloc (pooled shared memory: takePayload), or null when it should run inline (small,
   * busy or closed). Resolves to the payload (flags 0: store content raw, no transform paid); the
   * content is copied into shared memory first, so the caller's buffer is never read off-thread.
   */
  encode(
    t: ChunkTransforms,
    content: Uint8Array,
    id: ChunkIdentity,
    site: ErrorSite,
    alloc: (lengthBytes: number) => Buffer,
  ): Promise<EncodedPayload> | null {
    if (
      content.length < DECODE_INLINE_BELOW_BYTES ||
      this.closed ||
      this.encodes >= Math.min(ENCODES_IN_FLIGHT_MAX, this.size) ||
      this.jobs() >= DECODE_JOBS_MAX
    )
      return null;
    const capacityBytes = t.encryption === null ? content.length : segmentedLen(content.length);
    const raw = this.takeRaw(content.length);
    const out = alloc(capacityBytes);
    if (!isShared(raw) || !isShared(out) || raw.byteOffset !== 0 || out.byteOffset !== 0) {
      this.give(raw);
      return null;
    }
    raw.set(content);
    this.encodes++;
    const thread = this.leastBusy();
    const job: EncodeJob = {
      kind: 'encode',
      jobId: this.nextJobId++,
      transforms: t,
      raw: raw.buffer as SharedArrayBuffer,
      contentLenBytes: content.length,
      out: out.buffer as SharedArrayBuffer,
      outCapacityBytes: capacityBytes,
      id,
    };
    return new Promise<Encoded | null>((resolve, reject) => thread.post(job, { resolve, reject, site }))
      .then((e) => {
        // Pair assertion with codec-worker.ts encode: a transformed payload fits out; flags 0 is raw.
        assert(
          e !== null && e.storedLenBytes <= capacityBytes && (e.flags === 0) === (e.storedLenBytes === 0),
          'codec encode reply fits its payload buffer',
        );
        return e.flags === 0
          ? { stored: Buffer.from(content.buffer, content.byteOffset, content.byteLength), flags: 0 }
          : { stored: out.subarray(0, e.storedLenBytes), flags: e.flags };
      })
      .finally(() => {
        this.encodes--;
        this.give(raw);
      });
  }

  /** A buffer for a stored payload of lengthBytes (exactly), to decode(), then give(). */
  takePayload(lengthBytes: number): Buffer {
    if (lengthBytes < DECODE_INLINE_BELOW_BYTES) return Buffer.allocUnsafe(lengthBytes);
    return this.buffers.take(lengthBytes);
  }
  /** A buffer for a chunk's raw bytes (content_len exactly), to decode() into, then give() once no reader holds it. */
  takeRaw(lengthBytes: number): Buffer {
    return this.takePayload(lengthBytes);
  }
  /** A buffer from takePayload or takeRaw back to the pool (nothing may read or write it after). */
  give(b: Buffer): void {
    if (isShared(b)) this.buffers.give(b);
  }

  /** The decrypted payload of an inline decode of a chunk also compressed (decodes on this thread never overlap). */
  private inlineScratch(lengthBytes: number): Buffer {
    if (this.scratch.length < lengthBytes) this.scratch = Buffer.allocUnsafeSlow(lengthBytes);
    return this.scratch;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.splice(0).map((t) => t.terminate()));
  }

  private jobs(): number {
    return this.threads.reduce((n, t) => n + t.pending.size, 0);
  }
  private leastBusy(): DecodeThread {
    if (this.threads.length < this.size) {
      const t = new DecodeThread(this.storeKey, (dead, err) => this.lost(dead, err));
      this.threads.push(t);
      return t;
    }
    return this.threads.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
  }
  /** A thread that died fails its jobs (their readers get the error); the next decode starts another. */
  private lost(t: DecodeThread, err: Error): void {
    const i = this.threads.indexOf(t);
    if (i >= 0) this.threads.splice(i, 1);
    t.failAll(err);
  }
}
