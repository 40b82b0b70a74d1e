// Buffers for read replies, reused: a read fills one, its reply copies it into the kernel at once
// (fuse_reply_buf writes synchronously), and it goes back to the pool. Saves an allocation of up to
// 1 MiB per read.
export const READ_BUFFER_BYTES = 1 << 20;
/** Kept between reads: as many as reads usually run at once (the kernel's async reads, a few jobs). */
export const READ_BUFFERS_KEPT_MAX = 16;

export class ReadBuffers {
  private readonly free: Buffer[] = [];

  /** A buffer of at least lengthBytes (a fresh one when larger than the pooled size). */
  take(lengthBytes: number): Buffer {
    if (lengthBytes > READ_BUFFER_BYTES) return Buffer.allocUnsafe(lengthBytes);
    return this.free.pop() ?? Buffer.allocUnsafe(READ_BUFFER_BYTES);
  }

  give(buf: Buffer): void {
    if (buf.length === READ_BUFFER_BYTES && this.free.length < READ_BUFFERS_KEPT_MAX) this.free.push(buf);
  }
}
