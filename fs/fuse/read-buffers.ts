// Buffers for read replies, reused: a read fills one, its reply copies it into the kernel at once
// (fuse_reply_buf writes synchronously), and it goes back to the pool. Saves an allocation of up to
// 1 MiB per read.
import { BufferPool } from '../../src/buffer-pool';

export const READ_BUFFER_BYTES = 1 << 20;
/** Kept between reads: as many as reads usually run at once (the kernel's async reads, a few jobs). */
export const READ_BUFFERS_KEPT_MAX = 16;

export class ReadBuffers extends BufferPool {
  constructor() {
    super(READ_BUFFER_BYTES, READ_BUFFERS_KEPT_MAX);
  }
}
