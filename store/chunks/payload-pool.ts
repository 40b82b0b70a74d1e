// Reusable buffers for whole stored payloads of transformed chunks (DESIGN §10). In this VM a
// fresh 4 MiB buffer costs milliseconds of page faults (store/chunks/scratch-pool.ts), more than
// decrypting it; a reused one costs nothing. The buffers are shared memory, so a decode thread
// reads the payload in place while its reader waits; each is owned by one taker until given back.
import { assert } from '../../src/errors';

/** Pooled payload buffers at most (the chunks decoded at once: read-ahead plus readers). */
export const PAYLOAD_BUFFERS_MAX = 8;
/** Sizes are rounded up to this, so payloads of one chunk size share buffers. */
const PAYLOAD_ROUND_BYTES = 64 << 10;

export class PayloadPool {
  private readonly free: Buffer[] = [];

  constructor(readonly buffersMax = PAYLOAD_BUFFERS_MAX) {}

  /** A shared-memory buffer of at least minBytes (its first minBytes are the caller's), owned until give(). */
  take(minBytes: number): Buffer {
    assert(Number.isSafeInteger(minBytes) && minBytes >= 0, 'payload pool: bad size');
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const len = this.free[i].length;
      if (len >= minBytes && (best < 0 || len < this.free[best].length)) best = i;
    }
    if (best >= 0) return this.free.splice(best, 1)[0];
    const size = Math.ceil(Math.max(1, minBytes) / PAYLOAD_ROUND_BYTES) * PAYLOAD_ROUND_BYTES;
    return Buffer.from(new SharedArrayBuffer(size));
  }

  /** Return a buffer from take(); kept while the pool has room (a larger one replaces the smallest). */
  give(buf: Buffer): void {
    assert(!this.free.includes(buf), 'payload pool: buffer given back twice');
    if (this.free.length < this.buffersMax) {
      this.free.push(buf);
      return;
    }
    let smallest = 0;
    for (let i = 1; i < this.free.length; i++) if (this.free[i].length < this.free[smallest].length) smallest = i;
    if (this.free[smallest].length < buf.length) this.free[smallest] = buf;
  }
}
