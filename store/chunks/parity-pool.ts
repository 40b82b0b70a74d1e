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
import { HUGE_PAGE_BYTES, allocHuge } from '../../src/huge-buffer';

/**
 * Memory the pool makes at most, all sizes together: the parity of 16 whole 4 MiB ec:4+2 chunks
 * (the mount's two flush windows of 8 chunks, 2 MiB of parity each). Past it a take gets a fresh
 * buffer that is dropped when given back (as before this pool).
 */
export const PARITY_POOL_BYTES_MAX = 32 << 20;
/** Pieces larger than this are not pooled (a huge chunk size's parity is allocated per write). */
export const PARITY_PIECE_BYTES_MAX = 8 << 20;

/**
 * Pieces are made in lengths rounded up to this (a fragment of an ec:4+2 erasure block, spec §10's 1
 * MiB), so a chunk of any length finds a piece: a merged random write's chunk is often not whole
 * erasure blocks (its parity and padded tail fragments of odd lengths), and exact lengths made a class
 * per chunk. A take is served by the shortest free piece that holds it, of any class: after a
 * sequential write the pool holds 1 MiB pieces only, and those serve shorter takes.
 */
export const PARITY_PIECE_STEP_BYTES = 256 << 10;

export class ParityPool {
  /** Free pieces by length (a multiple of PARITY_PIECE_STEP_BYTES). */
  private readonly free = new Map<number, Buffer[]>();
  /** The pooled piece behind each buffer taken from it (the piece, or its first bytes). */
  private readonly lent = new WeakMap<Buffer, Buffer>();
  /** Memory this pool allocated (huge blocks carved into pieces), kept for the store's life. */
  allocatedBytes = 0;
  /** Pieces taken and not given back. */
  takenCount = 0;
  /** Takes served with fresh unpooled memory (the bound was reached). */
  unpooledTakes = 0;

  constructor(readonly poolBytesMax = PARITY_POOL_BYTES_MAX) {
    assert(poolBytesMax >= 0, 'parity pool: bad bound');
  }

  /** A buffer of exactly lengthBytes (page-aligned when pooled), owned by the caller until give(). */
  take(lengthBytes: number): Buffer {
    assert(Number.isSafeInteger(lengthBytes) && lengthBytes > 0, 'parity pool: bad size');
    this.takenCount++;
    const pieceBytes = Math.ceil(lengthBytes / PARITY_PIECE_STEP_BYTES) * PARITY_PIECE_STEP_BYTES;
    const reused = this.shortestFree(pieceBytes);
    if (reused !== undefined) return this.lend(reused, lengthBytes);
    const block = Math.ceil(pieceBytes / HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES;
    if (lengthBytes > PARITY_PIECE_BYTES_MAX || this.allocatedBytes + block > this.poolBytesMax) {
      this.unpooledTakes++;
      return Buffer.allocUnsafeSlow(lengthBytes);
    }
    // One huge block cut into as many page-aligned pieces of this class as fit; the rest go free.
    const mem = allocHuge(block);
    this.allocatedBytes += block;
    const pieces: Buffer[] = [];
    for (let at = 0; at + pieceBytes <= block; at += pieceBytes) pieces.push(mem.subarray(at, at + pieceBytes));
    const first = pieces.shift()!;
    if (pieces.length > 0) this.free.set(pieceBytes, [...(this.free.get(pieceBytes) ?? []), ...pieces]);
    return this.lend(first, lengthBytes);
  }

  /** A buffer from take() back (nothing may read or write it after). */
  give(buf: Buffer): void {
    assert(this.takenCount > 0, 'parity pool: given back more often than taken');
    this.takenCount--;
    const piece = this.lent.get(buf);
    if (piece === undefined) return; // unpooled: the collector frees it
    this.lent.delete(buf);
    const list = this.free.get(piece.length) ?? [];
    assert(!list.includes(piece), 'parity pool: a piece given back twice');
    list.push(piece);
    this.free.set(piece.length, list);
  }

  /** The free piece of the shortest length >= pieceBytes, taken off its list. */
  private shortestFree(pieceBytes: number): Buffer | undefined {
    let best: number | null = null;
    for (const [len, list] of this.free) {
      if (len >= pieceBytes && list.length > 0 && (best === null || len < best)) best = len;
    }
    return best === null ? undefined : this.free.get(best)!.pop();
  }

  /** The first lengthBytes of piece, noted as taken from it. */
  private lend(piece: Buffer, lengthBytes: number): Buffer {
    const view = lengthBytes === piece.length ? piece : piece.subarray(0, lengthBytes);
    this.lent.set(view, piece);
    return view;
  }
}
