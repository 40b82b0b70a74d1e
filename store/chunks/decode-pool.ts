// Decoding transformed chunks off the JavaScript thread (DESIGN §10). A whole 4 MiB chunk takes
// milliseconds to decrypt and decompress; on the mount's one JavaScript thread that time stalls
// every FUSE request and leaves the disks idle. Large payloads go to a few worker threads (started
// on first use, never keeping the process alive); small ones decode inline, where a round trip to
// a worker would cost more than the decode.
import { availableParallelism } from 'node:os';
import * as nodePath from 'node:path';
import { Worker } from 'node:worker_threads';
import { decodePayload } from '../../src/chunk-codec';
import { ChunkIdentity, DecryptError } from '../../src/chunk-cipher';
import { ChunkTransforms } from '../../src/chunk-transforms';
import { ErrorSite, FormatError, assert } from '../../src/errors';
import { DecodeJob, DecodeReply } from './decode-protocol';
import { PayloadPool } from './payload-pool';

/** Decode threads at most (the machine's cores, at most this many). */
export const DECODE_WORKERS_MAX = 2;
/** Payloads below this decode inline (a worker round trip costs about as much). */
export const DECODE_INLINE_BELOW_BYTES = 64 << 10;
/** Jobs queued on the pool at most; more wait for a slot (readers are bounded above, this is the guard). */
export const DECODE_JOBS_MAX = 64;

interface Pending { resolve: (raw: Buffer) => void; reject: (err: Error) => void; contentLenBytes: number; site: ErrorSite }

/** A payload in shared memory (from the pool's PayloadPool) while a worker decodes it. */
function isShared(b: Buffer): boolean {
  return b.buffer instanceof SharedArrayBuffer;
}

class DecodeThread {
  readonly pending = new Map<number, Pending>();
  private readonly worker: Worker;
  constructor(storeKey: Buffer | null, onExit: (t: DecodeThread, err: Error) => void) {
    this.worker = new Worker(nodePath.join(__dirname, 'decode-worker.js'), { workerData: { storeKey } });
    this.worker.unref();
    this.worker.on('message', (r: DecodeReply) => this.settle(r));
    this.worker.on('error', (err) => onExit(this, err));
    this.worker.on('exit', (code) => onExit(this, new Error(`decode worker exited with code ${code}`)));
  }
  post(job: DecodeJob, p: Pending): void {
    this.pending.set(job.jobId, p);
    this.worker.postMessage(job);
  }
  private settle(r: DecodeReply): void {
    const p = this.pending.get(r.jobId);
    assert(p !== undefined, 'decode reply for a job in flight');
    this.pending.delete(r.jobId);
    if ('error' in r) {
      p.reject(r.error.decrypt ? new DecryptError(p.site) : new FormatError(r.error.field, r.error.detail, p.site));
      return;
    }
    const raw = Buffer.from(r.raw);
    if (raw.length !== p.contentLenBytes) p.reject(new FormatError('content_len', `decoded ${raw.length} bytes, content_len is ${p.contentLenBytes}`, p.site));
    else p.resolve(raw);
  }
  failAll(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
  terminate(): Promise<number> {
    return this.worker.terminate();
  }
}

/** The mount's decode threads. */
export class DecodePool {
  private readonly threads: DecodeThread[] = [];
  private nextJobId = 1;
  private closed = false;
  private readonly size = Math.max(1, Math.min(DECODE_WORKERS_MAX, availableParallelism()));
  private readonly payloads = new PayloadPool();

  constructor(private readonly storeKey: Buffer | null) {}

  /**
   * The raw bytes of a verified stored payload (the tag checked before any byte is returned). A
   * payload in shared memory (takePayload) may go to a worker, and is free again when this settles.
   */
  decode(t: ChunkTransforms, flags: number, stored: Buffer, contentLenBytes: number, id: ChunkIdentity, site: ErrorSite): Promise<Buffer> {
    if (!isShared(stored) || stored.length < DECODE_INLINE_BELOW_BYTES || this.closed || this.jobs() >= DECODE_JOBS_MAX) {
      try {
        return Promise.resolve(decodePayload(t, flags, stored, contentLenBytes, id, this.storeKey, site));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const thread = this.leastBusy();
    const jobId = this.nextJobId++;
    return new Promise<Buffer>((resolve, reject) => {
      const job = { jobId, transforms: t, flags, stored: stored.buffer as SharedArrayBuffer, storedLenBytes: stored.length, contentLenBytes, id };
      assert(stored.byteOffset === 0, 'a pooled payload starts its shared buffer');
      thread.post(job, { resolve, reject, contentLenBytes, site });
    });
  }

  /** A buffer for a stored payload of lengthBytes (exactly), to decode(), then givePayload(). */
  takePayload(lengthBytes: number): Buffer {
    if (lengthBytes < DECODE_INLINE_BELOW_BYTES) return Buffer.allocUnsafe(lengthBytes);
    return this.payloads.take(lengthBytes).subarray(0, lengthBytes);
  }
  givePayload(b: Buffer): void {
    if (isShared(b)) this.payloads.give(Buffer.from(b.buffer as SharedArrayBuffer));
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
