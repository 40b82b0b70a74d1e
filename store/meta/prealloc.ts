// fallocate's allocations (schema v7): the store writes sparsely, so fallocate
// (mode 0 or KEEP_SIZE) stores no bytes, but the space it allocated is part of what the file holds
// (st_blocks, as on ext4: writing into it later does not grow the file's blocks). It is kept per
// chunk in the same terms as data (store/meta/allocated.ts, DESIGN §5 "One view"): a chunk touched by a
// fallocate at [a, b) holds [chunk start, b) in it, exactly as a write there would, and reads zeros
// where nothing was stored. SEEK_DATA therefore sees it as data, like a write of zeros: a later
// write into it then changes no SEEK answer (the store cannot split a chunk into written and
// unwritten parts). A row is a metadata change like any other (committed at once, flushed with the
// next commit, DESIGN §5), so it survives a remount; an inode's rows go with it (trigger, v7).
import type { Db } from './sql-engine';
import { FsError } from '../fs-error';
import type { FallocateReads } from './data-ops';
import { dataOpsOf } from './engine-open';

/** Chunk rows one fallocate may add (4 TiB of 4 MiB chunks): one row per chunk, written in one transaction. */
export const PREALLOC_CHUNKS_MAX = 1 << 20;

/** Allocated bytes beyond the stored chunks: inside the size (not yet counted) and past it (KEEP_SIZE). */
export interface PreallocExtra {
  insideBytes: number;
  beyondBytes: number;
}

/** Table `prealloc`, as an engine reads and writes it (sql/prealloc-rows.ts for both SQL engines). */
export interface PreallocRows {
  /** The inodes that have rows. */
  inodes(): number[];
  /** The chunk's row made, or its length raised to lengthBytes. */
  grow(ino: number, chunkIndex: number, lengthBytes: number): void;
  /** Rows at chunk index >= fromChunk. */
  dropFrom(ino: number, fromChunk: number): void;
  /** Rows at chunk indexes [firstChunk, endChunk). */
  dropRange(ino: number, firstChunk: number, endChunk: number): void;
  /** The chunk's length lowered to lengthBytes. */
  clip(ino: number, chunkIndex: number, lengthBytes: number): void;
  /** The chunk's allocated length (0: no row). */
  length(ino: number, chunkIndex: number): number;
  /** [chunk index, allocated length] from fromChunk on, ascending. */
  from(ino: number, fromChunk: number): Array<[number, number]>;
  /** Summed over the file's rows: what each adds over its chunk's stored length below sizeBytes, and past it. */
  extra(ino: number, sizeBytes: number, cs: number, needleBytes: number): PreallocExtra;
}

export class Preallocated {
  private readonly s: PreallocRows;
  /** Inodes that may have rows (a superset: rows of a deleted inode go by trigger), so most files cost no query. */
  private readonly inos = new Set<number>();
  private readonly rows: FallocateReads;

  constructor(private readonly db: Db) {
    this.rows = dataOpsOf(db).fallocateReads();
    this.s = dataOpsOf(db).preallocRows();
    for (const ino of this.s.inodes()) this.inos.add(ino);
  }

  has(ino: number): boolean {
    return this.inos.has(ino);
  }

  /** fallocate of [offsetBytes, endBytes): every chunk it touches holds [its start, the range's end in it). */
  add(ino: number, offsetBytes: number, endBytes: number): void {
    const cs = this.chunkSizeOf(ino);
    const first = Math.floor(offsetBytes / cs);
    const last = Math.ceil(endBytes / cs); // exclusive
    if (last - first > PREALLOC_CHUNKS_MAX) {
      throw new FsError(
        'ENOSPC',
        `fallocate of ${last - first} chunks of inode ${ino}: at most ${PREALLOC_CHUNKS_MAX} per call`,
      );
    }
    this.db.transaction(() => {
      for (let c = first; c < last; c++) this.s.grow(ino, c, Math.min(cs, endBytes - c * cs));
    })();
    this.inos.add(ino);
  }

  /** A punched or zeroed [offsetBytes, endBytes): the chunks wholly inside it are allocated no more. */
  dropWhole(ino: number, offsetBytes: number, endBytes: number): void {
    if (!this.inos.has(ino)) return;
    const cs = this.chunkSizeOf(ino);
    const first = Math.ceil(offsetBytes / cs);
    const last = Math.floor(endBytes / cs);
    if (last > first) this.s.dropRange(ino, first, last);
  }

  /** A truncate to sizeBytes is not a growth of the committed size (then it frees what lies past it, as on ext4). */
  shrinks(ino: number, sizeBytes: number): boolean {
    if (!this.inos.has(ino)) return false;
    const size = this.rows.committedSize(ino);
    return size !== undefined && sizeBytes <= size;
  }

  /** Frees what was allocated past sizeBytes (a truncate that does not grow the file; KEEP_SIZE space too). */
  clip(ino: number, sizeBytes: number): void {
    if (!this.inos.has(ino)) return;
    const cs = this.chunkSizeOf(ino);
    const straddling = Math.floor(sizeBytes / cs);
    this.db.transaction(() => {
      this.s.dropFrom(ino, Math.ceil(sizeBytes / cs));
      if (sizeBytes % cs !== 0) this.s.clip(ino, straddling, sizeBytes - straddling * cs);
    })();
  }

  /** The allocated length of chunk c (0: none). */
  length(ino: number, c: number): number {
    if (!this.inos.has(ino)) return 0;
    return this.s.length(ino, c);
  }

  /** [chunk index, allocated length] from fromChunk on, ascending. */
  from(ino: number, fromChunk: number): Array<[number, number]> {
    if (!this.inos.has(ino)) return [];
    return this.s.from(ino, fromChunk);
  }

  /**
   * What the rows add to the stored chunks of a file of sizeBytes (chunk size cs); needleBytes: a
   * needle's length, which counts as chunk 0 (store/meta/allocated.ts).
   */
  extra(ino: number, sizeBytes: number, cs: number, needleBytes: number): PreallocExtra {
    if (!this.inos.has(ino)) return { insideBytes: 0, beyondBytes: 0 };
    return this.s.extra(ino, sizeBytes, cs, needleBytes);
  }

  private chunkSizeOf(ino: number): number {
    const cs = this.rows.fileChunkSize(ino);
    if (cs === undefined) throw new FsError('EINVAL', `inode ${ino} is not a regular file`);
    return cs;
  }
}
