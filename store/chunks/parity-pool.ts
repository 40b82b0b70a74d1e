// Reusable buffers for the parity shards of whole-chunk EC writes (spec §6, DESIGN §5 "Write-back
// pieces"). They came from the codec pool's payload buffers, which keep 8 free: a sequential
// ec:4+2 write has up to 16 chunks in flight (two flush windows of 8), 32 parity shards of 1 MiB,
// so each window dropped about 8 MiB to the garbage collector, which freed it only when it next
// ran. Measured (2 GiB fio sequential write through the mount, ec:4+2, memory polled every 0.2 s):
// 80-98 MiB of ArrayBuffers live at the mount's peak (replica:3: 3-4 MiB), peak RSS 287-327 MiB.
// Here every buffer made is kept (up to PARITY_POOL_BYTES_MAX), so a steady write reuses the same
// memory and makes no garbage. Pieces are carved from huge pages (src/huge-buffer.ts), page-aligned:
// a parity shard of whole 4 KiB pages is written past the page cache like the data shards.
import { assert } from '../../src/errors';
import { DIRECT_ALIGN_BYTES, HUGE_PAGE_BYTES, allocHuge } from '../../src/huge-buffer';

/**
 * Memory the pool makes at most, all sizes together: the parity of 16 whole 4 MiB ec:4+2 chunks
 * (the mount's two flush windows of 8 chunks, 2 MiB of parity each). Past it a take gets a fresh
 * buffer that is dropped when given back (as before this pool).
 */
export const PARITY_POOL_BYTES_MAX = 32 << 20;
/** Pieces larger than this are not pooled (a huge chunk size's parity is allocated per write). */
export const PARITY_PIECE_BYTES_MAX = 8 << 20;

export class ParityPool {
  /** Free pieces by exact length. */
  private readonly free = new Map<number, Buffer[]>();
  /** Pieces this pool made (given back to it once each). */
  private readonly pooled = new WeakSet<Buffer>();
  /** Memory this pool allocated (huge blocks carved into pieces), kept for the store's life. */
  allocatedBytes = 0;
  /** Pieces taken and not given back. */
  takenCount = 0;
  /** Takes served with fresh unpooled memory (the bound was reached). */
  unpooledTakes = 0;

  constructor(readonly poolBytesMax = PARITY_POOL_BYTES_MAX) {
    assert(poolBytesMax >= 0, 'parity pool: bad bound');
  }

  /** A buffer of exactly lengthBytes, owned by the caller until give(). */
  take(lengthBytes: number): Buffer {
    assert(Number.isSafeInteger(lengthBytes) && lengthBytes > 0, 'parity pool: bad size');
    this.takenCount++;
    const list = this.free.get(lengthBytes);
    const reused = list?.pop();
    if (reused !== undefined) return reused;
    const block = Math.ceil(lengthBytes / HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES;
    if (lengthBytes > PARITY_PIECE_BYTES_MAX || this.allocatedBytes + block > this.poolBytesMax) {
      this.unpooledTakes++;
      return Buffer.allocUnsafeSlow(lengthBytes);
    }
    // One huge block cut into as many page-aligned pieces of this length as fit; the rest go free.
    const mem = allocHuge(block);
    this.allocatedBytes += block;
    const step = Math.ceil(lengthBytes / DIRECT_ALIGN_BYTES) * DIRECT_ALIGN_BYTES;
    const pieces: Buffer[] = [];
    for (let at = 0; at + lengthBytes <= block; at += step) pieces.push(mem.subarray(at, at + lengthBytes));
    for (const p of pieces) this.pooled.add(p);
    const first = pieces.shift()!;
    if (pieces.length > 0) this.free.set(lengthBytes, [...(list ?? []), ...pieces]);
    return first;
  }

  /** A buffer from take() back (nothing may read or write it after). */
  give(buf: Buffer): void {
    assert(this.takenCount > 0, 'parity pool: given back more often than taken');
    this.takenCount--;
    if (!this.pooled.has(buf)) return; // unpooled: the collector frees it
    const list = this.free.get(buf.length) ?? [];
    assert(!list.includes(buf), 'parity pool: a piece given back twice');
    list.push(buf);
    this.free.set(buf.length, list);
  }
}
