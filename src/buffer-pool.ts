// A small pool of same-sized buffers, reused instead of allocated per request: a fresh large buffer
// costs page faults on every use, and this VM's page faults are slow (16% of the mount's CPU in an
// encrypted sequential read before its stored-bytes buffers were pooled, 5 Dec). Larger requests
// get a buffer of their own, which is not kept.
import { assert } from './errors';

export class BufferPool {
  private readonly free: Buffer[] = [];

  /** keptMax: buffers kept between uses, as many as usually are in use at once. */
  constructor(
    readonly bufferBytes: number,
    readonly keptMax: number,
  ) {
    assert(bufferBytes > 0 && keptMax > 0, `buffer pool: ${keptMax} buffers of ${bufferBytes} bytes`);
  }

  /** A buffer of at least lengthBytes (a fresh one when larger than the pooled size). */
  take(lengthBytes: number): Buffer {
    if (lengthBytes > this.bufferBytes) return Buffer.allocUnsafe(lengthBytes);
    return this.free.pop() ?? Buffer.allocUnsafe(this.bufferBytes);
  }

  /** Back to the pool when it came from it and the pool is not full; else left to the collector. */
  give(buf: Buffer): void {
    if (buf.length === this.bufferBytes && this.free.length < this.keptMax) this.free.push(buf);
  }

  get keptCount(): number {
    return this.free.length;
  }
}
