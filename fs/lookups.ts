// The kernel's lookup count per inode (FUSE nlookup): every entry a transport hands the kernel
// (lookup, create, mknod, mkdir, symlink, link, each readdirplus entry) adds one, forget takes
// them back. An inode that lost its last name keeps its data while the kernel still knows it (an
// O_PATH descriptor can still fstat it), like an open file. Path-based transports never count.
import { posix } from './errno';

/** Far above the inodes a kernel caches; a bound so a forget bug cannot grow the map forever. */
export const LOOKUP_INODES_MAX = 1 << 24;

export class LookupCounts {
  private readonly counts = new Map<number, number>();
  /**
   * Lookups a transport answered without JS (fs/fuse/entry-table.ts) as [ino, count, ...], or null:
   * taken before every read or lowering of the counts, so they always are the kernel's.
   */
  private answeredElsewhere: () => Float64Array | null = () => null;

  /** Where lookups answered outside JS are taken from. */
  takeAnsweredFrom(fn: () => Float64Array | null): void {
    this.answeredElsewhere = fn;
  }

  /** Takes in the lookups answered outside JS now. */
  settle(): void {
    const pairs = this.answeredElsewhere();
    if (pairs === null) return;
    for (let k = 0; k + 1 < pairs.length; k += 2) this.add(pairs[k], pairs[k + 1]);
  }

  add(ino: number, n = 1): void {
    const now = this.counts.get(ino);
    if (now === undefined && this.counts.size >= LOOKUP_INODES_MAX)
      throw posix('ENFILE', 'too many inodes known to the kernel');
    this.counts.set(ino, (now ?? 0) + n);
  }

  /** Takes n back; true when the kernel no longer knows the inode. */
  forget(ino: number, n: number): boolean {
    this.settle();
    const left = (this.counts.get(ino) ?? 0) - n;
    if (left > 0) {
      this.counts.set(ino, left);
      return false;
    }
    this.counts.delete(ino);
    return true;
  }

  known(ino: number): boolean {
    this.settle();
    return this.counts.has(ino);
  }
  /** Every inode the kernel knows now. */
  inos(): IterableIterator<number> {
    this.settle();
    return this.counts.keys();
  }
  count(ino: number): number {
    this.settle();
    return this.counts.get(ino) ?? 0;
  }
  get size(): number {
    this.settle();
    return this.counts.size;
  }
}
