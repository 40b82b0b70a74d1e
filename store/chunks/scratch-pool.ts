// Reusable scratch buffers for verified reads (Store.readInto). In this VM fresh memory
// is expensive: Buffer.allocUnsafe(4096) + copy ~15 us and a fresh 128 KiB buffer
// ~350 us (page faults), against ~0.4 / 1.5 us for a reused buffer. A buffer is owned
// by one taker until it is given back, so two reads in flight never share one.
import { assert } from '../../src/errors';

/** Pooled buffers at most; more concurrent takers get fresh buffers. */
export const SCRATCH_BUFFERS_MAX = 16;
/** Larger requests are not pooled (a whole-chunk read allocates as before). */
export const SCRATCH_BUFFER_BYTES_MAX = 1 << 20;
/** Smallest pooled size: a 4 KiB read's 16 KiB span plus its hash entries fits, with room. */
export const SCRATCH_BUFFER_BYTES_MIN = 64 * 1024;

function pooledSize(minBytes: number): number {
  let size = SCRATCH_BUFFER_BYTES_MIN;
  for (let loop = 0; loop < 32 && size < minBytes; loop++) size *= 2; // powers of two: few distinct sizes
  return size;
}

export class ScratchPool {
  private readonly free: Buffer[] = [];

  constructor(readonly buffersMax = SCRATCH_BUFFERS_MAX, readonly bufferBytesMax = SCRATCH_BUFFER_BYTES_MAX) {
    assert(buffersMax >= 0 && bufferBytesMax >= 0, 'scratch pool bounds are non-negative');
  }

  /** Free buffers held (for tests and status). */
  get freeCount(): number {
    return this.free.length;
  }

  /** A buffer of at least minBytes, owned by the caller until give(). */
  take(minBytes: number): Buffer {
    assert(Number.isSafeInteger(minBytes) && minBytes >= 0, 'scratch: bad size');
    if (minBytes > this.bufferBytesMax) return Buffer.allocUnsafeSlow(minBytes);
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const len = this.free[i].length;
      if (len >= minBytes && (best < 0 || len < this.free[best].length)) best = i;
    }
    const buf = best >= 0 ? this.free.splice(best, 1)[0] : Buffer.allocUnsafeSlow(Math.min(pooledSize(minBytes), this.bufferBytesMax));
    assert(buf.length >= minBytes && !this.free.includes(buf), 'scratch: the buffer is big enough and no longer free');
    return buf;
  }

  /** Return a buffer from take(); kept if the pool has room (a larger one replaces the smallest). */
  give(buf: Buffer): void {
    assert(!this.free.includes(buf), 'scratch: buffer given back twice');
    if (buf.length > this.bufferBytesMax) return;
    if (this.free.length < this.buffersMax) {
      this.free.push(buf);
      return;
    }
    let smallest = -1;
    for (let i = 0; i < this.free.length; i++) {
      if (smallest < 0 || this.free[i].length < this.free[smallest].length) smallest = i;
    }
    if (smallest >= 0 && this.free[smallest].length < buf.length) this.free[smallest] = buf;
  }
}
