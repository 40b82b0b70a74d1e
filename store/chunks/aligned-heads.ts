// Page-aligned buffers for the head (header + hash table, spec §2-§4) of a whole-shard write that
// bypasses the page cache (O_DIRECT, DESIGN §5 "Direct shard writes"): O_DIRECT takes only aligned
// memory, and a JavaScript Buffer's address is unknown unless allocHuge made it. One huge buffer is
// cut into HEAD_SLOT_BYTES slots, lent to one write each; when none is free (or a head is larger),
// the write goes through the page cache instead.
import { allocHuge, HUGE_PAGE_BYTES } from '../../src/huge-buffer';
import { assert } from '../../src/errors';

/**
 * A slot holds the head of a shard of up to (64 KiB - 4 KiB) / 32 = 1,920 bitrot blocks: a 4 MiB
 * chunk in 4 KiB blocks needs 1,024. Larger heads take the page-cache path.
 */
export const HEAD_SLOT_BYTES = 64 << 10;
const SLOTS = HUGE_PAGE_BYTES / HEAD_SLOT_BYTES;

export class AlignedHeads {
  private memory: Buffer | null = null;
  private readonly free: number[] = [];

  /** A zeroed, aligned view of lengthBytes for one write, or null (none free, or too long). */
  take(lengthBytes: number): Buffer | null {
    if (lengthBytes > HEAD_SLOT_BYTES) return null;
    if (this.memory === null) {
      this.memory = allocHuge(HUGE_PAGE_BYTES);
      for (let i = SLOTS - 1; i >= 0; i--) this.free.push(i);
    }
    const slot = this.free.pop();
    if (slot === undefined) return null;
    const view = this.memory.subarray(slot * HEAD_SLOT_BYTES, slot * HEAD_SLOT_BYTES + lengthBytes);
    view.fill(0);
    return view;
  }

  /** A view from take() back (once). */
  give(view: Buffer): void {
    assert(this.memory !== null && view.buffer === this.memory.buffer, 'aligned heads: a view of the pool');
    const slot = view.byteOffset / HEAD_SLOT_BYTES;
    assert(Number.isInteger(slot) && !this.free.includes(slot), 'aligned heads: given back once');
    this.free.push(slot);
  }
}
