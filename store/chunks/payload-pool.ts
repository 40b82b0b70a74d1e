// Reusable shared-memory buffers for transformed chunks (DESIGN §10): stored payloads while they
// are read and decoded, and decoded chunks while the decoded cache holds them. In this VM a fresh
// 4 MiB buffer costs milliseconds of page faults (store/chunks/scratch-pool.ts), more than
// decrypting it; a reused one costs nothing. Shared memory, so a decode thread reads the payload
// and writes the raw bytes in place while the mount waits. Each is owned by one taker until given
// back; the pool keeps free buffers only, at most buffersMax.
import { assert } from '../../src/errors';

/** Free buffers kept at most (the chunks in flight: read-ahead plus waiting readers, payload and raw each). */
export const PAYLOAD_BUFFERS_MAX = 8;
/** Sizes are rounded up to this, so payloads of one chunk size share buffers. */
const PAYLOAD_ROUND_BYTES = 64 << 10;

export class PayloadPool {
  private readonly free: SharedArrayBuffer[] = [];

  constructor(readonly buffersMax = PAYLOAD_BUFFERS_MAX) {}

  /** A view of exactly lengthBytes at the start of a shared buffer, owned until give(). */
  take(lengthBytes: number): Buffer {
    assert(Number.isSafeInteger(lengthBytes) && lengthBytes >= 0, 'payload pool: bad size');
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const len = this.free[i].byteLength;
      if (len >= lengthBytes && (best < 0 || len < this.free[best].byteLength)) best = i;
    }
    const sab =
      best >= 0
        ? this.free.splice(best, 1)[0]
        : new SharedArrayBuffer(Math.ceil(Math.max(1, lengthBytes) / PAYLOAD_ROUND_BYTES) * PAYLOAD_ROUND_BYTES);
    return Buffer.from(sab, 0, lengthBytes);
  }

  /** A view from take() back; its buffer is kept while the pool has room (a larger one replaces the smallest). */
  give(view: Buffer): void {
    const sab = view.buffer as SharedArrayBuffer;
    assert(
      sab instanceof SharedArrayBuffer && !this.free.includes(sab),
      'payload pool: a buffer of the pool, given back once',
    );
    if (this.free.length < this.buffersMax) {
      this.free.push(sab);
      return;
    }
    let smallest = 0;
    for (let i = 1; i < this.free.length; i++)
      if (this.free[i].byteLength < this.free[smallest].byteLength) smallest = i;
    if (this.free[smallest].byteLength < sab.byteLength) this.free[smallest] = sab;
  }
}
