// Reusable scratch buffers for verified reads (Store.readInto). In this VM fresh memory
// is expensive: Buffer.allocUnsafe(4096) + copy ~15 us and a fresh 128 KiB buffer
// ~350 us (page faults), against ~0.4 / 1.5 us for a reused buffer. A buffer is owned
// by one taker until it is given back, so two reads in flight never share one.
// Whole-shard reads (a random-write flush reads each chunk it merges whole: fs/write-buffer.ts
// mergeScattered) are kept too, in a few large buffers: fresh, each was 4 MiB of garbage that
// stayed resident until a collection (up to 60 MiB of the mount's peak RSS). So are the chunks an
// intent rewrite folds (store/chunks/intent-rewrite.ts). A free large buffer unused for a while
// gives its pages back (src/idle-release.ts): the tier's memory is resident only while it is used.
import { assert } from '../../src/errors';
import { HUGE_PAGE_BYTES, allocLarge } from '../../src/huge-buffer';
import { IdleRelease } from '../../src/idle-release';

/** Pooled buffers at most; more concurrent takers get fresh buffers. */
export const SCRATCH_BUFFERS_MAX = 16;
/** Larger requests are not pooled (a whole-chunk read allocates as before). */
export const SCRATCH_BUFFER_BYTES_MAX = 1 << 20;
/** Larger requests up to this size are kept in the large tier (a 4 MiB chunk's whole shard and its hash entries fit). */
export const LARGE_BUFFER_BYTES_MAX = 8 << 20;
/**
 * The large tier's bound, all its free buffers together: the applier's 8 chunk rewrites of 4 MiB at
 * once (store/chunks/applier.ts), or two merging flush windows. Free buffers past it are dropped to
 * the collector; those kept cost no memory once idle (IDLE_RELEASE_MS).
 */
export const LARGE_POOL_BYTES_MAX = 32 << 20;
/** Smallest pooled size: a 4 KiB read's 16 KiB span plus its hash entries fits, with room. */
export const SCRATCH_BUFFER_BYTES_MIN = 64 * 1024;

function pooledSize(minBytes: number): number {
  let size = SCRATCH_BUFFER_BYTES_MIN;
  for (let loop = 0; loop < 32 && size < minBytes; loop++) size *= 2; // powers of two: few distinct sizes
  return size;
}

/** Large buffers are whole huge pages (src/huge-buffer.ts): one page fault per 2 MiB when first filled. */
function largeSize(minBytes: number): number {
  return Math.ceil(minBytes / HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES;
}

/** The free buffer of the smallest length >= minBytes in list, or -1. */
function bestFit(list: Buffer[], minBytes: number): number {
  let best = -1;
  for (let i = 0; i < list.length; i++) {
    const len = list[i].length;
    if (len >= minBytes && (best < 0 || len < list[best].length)) best = i;
  }
  return best;
}

export class ScratchPool {
  private readonly free: Buffer[] = [];
  private readonly largeFree: Buffer[] = [];
  private largeFreeBytes = 0;

  constructor(
    readonly buffersMax = SCRATCH_BUFFERS_MAX,
    readonly bufferBytesMax = SCRATCH_BUFFER_BYTES_MAX,
    readonly largeBytesMax = LARGE_BUFFER_BYTES_MAX,
    readonly largePoolBytesMax = LARGE_POOL_BYTES_MAX,
    readonly idle = new IdleRelease(),
  ) {
    assert(
      buffersMax >= 0 && bufferBytesMax >= 0 && largeBytesMax >= 0 && largePoolBytesMax >= 0,
      'scratch pool bounds are non-negative',
    );
  }

  /** Free buffers held (for tests and status). */
  get freeCount(): number {
    return this.free.length;
  }

  /** Free large buffers held (for tests and status). */
  get largeFreeCount(): number {
    return this.largeFree.length;
  }

  /** A buffer of at least minBytes, owned by the caller until give(). */
  take(minBytes: number): Buffer {
    assert(Number.isSafeInteger(minBytes) && minBytes >= 0, 'scratch: bad size');
    if (minBytes > this.bufferBytesMax) return this.takeLarge(minBytes);
    const best = bestFit(this.free, minBytes);
    const buf =
      best >= 0
        ? this.free.splice(best, 1)[0]
        : Buffer.allocUnsafeSlow(Math.min(pooledSize(minBytes), this.bufferBytesMax));
    assert(buf.length >= minBytes && !this.free.includes(buf), 'scratch: the buffer is big enough and no longer free');
    return buf;
  }

  private takeLarge(minBytes: number): Buffer {
    if (minBytes > this.largeBytesMax) return Buffer.allocUnsafeSlow(minBytes);
    const best = bestFit(this.largeFree, minBytes);
    if (best < 0) return allocLarge(largeSize(minBytes));
    const buf = this.largeFree.splice(best, 1)[0];
    this.largeFreeBytes -= buf.length;
    this.idle.unpark(buf);
    return buf;
  }

  /** Return a buffer from take(); kept if the pool has room (a larger one replaces the smallest). */
  give(buf: Buffer): void {
    assert(!this.free.includes(buf) && !this.largeFree.includes(buf), 'scratch: buffer given back twice');
    if (buf.length > this.bufferBytesMax) {
      // Within the tier's bound, else dropped (more whole-shard reads at once than it keeps).
      if (buf.length <= this.largeBytesMax && this.largeFreeBytes + buf.length <= this.largePoolBytesMax) {
        this.largeFree.push(buf);
        this.largeFreeBytes += buf.length;
        this.idle.park(buf); // huge pages (allocLarge): released if not taken again soon
      }
      return;
    }
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
