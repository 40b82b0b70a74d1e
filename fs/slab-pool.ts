// Reusable memory for the bytes of buffered writes (the write-back buffer, DESIGN §5). Every FUSE write is
// copied out of the binding's buffer (it dies when we answer); a fresh Buffer per write costs its
// page faults, and on this VM those dominate: measured 15 us per 4 KiB and 350 us per 128 KiB fresh,
// against 0.4 us and 1.5 us into reused memory. So writes are carved from 2 MiB slabs, each slab
// counts its live bytes, and a sealed slab whose bytes were all flushed or overwritten goes back to
// a bounded free list, whose slabs give their pages back when unused for a while (src/idle-release.ts).
import { assert } from '../src/errors';
import { allocLarge } from '../src/huge-buffer';
import { IdleRelease } from '../src/idle-release';

/** One huge page (src/huge-buffer.ts): a slab costs one page fault, not 512. */
export const SLAB_BYTES_DEFAULT = 2 << 20;
const FREE_SLABS_MAX_DEFAULT = 32;

/** One slab: pieces are carved from its start; it is reusable once no piece is live. */
export class Slab {
  usedBytes = 0;
  liveBytes = 0;
  sealed = false;
  /** Store writes reading pieces of this slab as they lie (DESIGN §5 "Write-back pieces"): not emptied meanwhile. */
  storing = 0;
  constructor(
    readonly buf: Buffer,
    private readonly pool: SlabPool,
  ) {}

  pin(): void {
    this.storing++;
  }
  unpin(): void {
    assert(this.storing > 0, 'slab: unpinned more often than pinned');
    this.storing--;
  }

  /** Bytes of pieces of this slab that are no longer needed (flushed, overwritten, truncated). */
  release(bytes: number): void {
    assert(bytes >= 0 && bytes <= this.liveBytes, `slab: releasing ${bytes} of ${this.liveBytes} live bytes`);
    this.liveBytes -= bytes;
    if (this.liveBytes === 0) this.pool.emptied(this);
  }
}

export interface Piece {
  data: Buffer;
  slab: Slab | null;
}

export class SlabPool {
  private current: Slab | null = null;
  private readonly free: Slab[] = [];
  /** Slabs allocated and not on the free list (memory the buffered bytes pin). */
  private heldCount = 0;

  /** onEmptied: a held slab was emptied (its memory is free for new pieces: writers waiting for memory may go on). */
  constructor(
    readonly slabBytes = SLAB_BYTES_DEFAULT,
    private readonly freeSlabsMax = FREE_SLABS_MAX_DEFAULT,
    private readonly onEmptied?: () => void,
    readonly idle = new IdleRelease(),
  ) {
    assert(slabBytes > 0 && freeSlabsMax >= 0, 'slab pool: bad sizes');
  }

  /** Memory pinned by live pieces, in bytes (at least the live bytes; more when slabs are fragmented). */
  get heldBytes(): number {
    return this.heldCount * this.slabBytes;
  }
  get freeCount(): number {
    return this.free.length;
  }

  /** A copy of src[0, lengthBytes) in pooled memory (a plain Buffer when larger than a slab). */
  copy(src: Buffer, lengthBytes: number): Piece {
    assert(lengthBytes > 0 && lengthBytes <= src.length, 'slab pool: bad copy length');
    if (lengthBytes > this.slabBytes) {
      const data = Buffer.allocUnsafe(lengthBytes);
      src.copy(data, 0, 0, lengthBytes);
      return { data, slab: null };
    }
    const slab = this.slabWithRoom(lengthBytes);
    const data = slab.buf.subarray(slab.usedBytes, slab.usedBytes + lengthBytes);
    src.copy(data, 0, 0, lengthBytes);
    slab.usedBytes += lengthBytes;
    slab.liveBytes += lengthBytes;
    return { data, slab };
  }

  /**
   * piece (a view of a slab) followed by src[0, lengthBytes), as one longer view of the same memory,
   * when piece ends where its slab's free space starts and that slab has room: an append then costs
   * its bytes, not a new piece. Null otherwise (the caller copies a new piece).
   */
  extend(data: Buffer, slab: Slab | null | undefined, src: Buffer, lengthBytes: number): Buffer | null {
    if (slab === null || slab === undefined || slab !== this.current || slab.usedBytes + lengthBytes > this.slabBytes)
      return null;
    const start = data.byteOffset - slab.buf.byteOffset;
    if (data.buffer !== slab.buf.buffer || start + data.length !== slab.usedBytes) return null;
    src.copy(slab.buf, slab.usedBytes, 0, lengthBytes);
    slab.usedBytes += lengthBytes;
    slab.liveBytes += lengthBytes;
    return slab.buf.subarray(start, slab.usedBytes);
  }

  private slabWithRoom(lengthBytes: number): Slab {
    if (this.current !== null && this.current.usedBytes + lengthBytes <= this.slabBytes) return this.current;
    if (this.current !== null) {
      this.current.sealed = true;
      if (this.current.liveBytes === 0) this.emptied(this.current);
    }
    const reused = this.free.pop();
    if (reused !== undefined) this.idle.unpark(reused.buf);
    const slab = reused ?? new Slab(allocLarge(this.slabBytes), this);
    slab.usedBytes = 0;
    slab.liveBytes = 0;
    slab.sealed = false;
    this.heldCount++;
    this.current = slab;
    return slab;
  }

  /** Called by a slab whose last live byte was released. */
  emptied(slab: Slab): void {
    assert(slab.storing === 0, 'slab: emptied while a store write reads its pieces');
    if (!slab.sealed) {
      slab.usedBytes = 0; // the slab being carved: start over from its beginning
      return;
    }
    this.heldCount--;
    assert(this.heldCount >= 0, 'slab pool: held count below zero');
    if (this.free.length < this.freeSlabsMax) {
      this.free.push(slab);
      this.idle.park(slab.buf);
    }
    this.onEmptied?.();
  }
}
