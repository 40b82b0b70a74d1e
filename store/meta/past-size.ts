// Files that may hold chunk bytes stored past their committed size (DESIGN §5 prefix rule): the
// write-back buffer stores chunks out of order, and the size committed with a write stops at the
// first byte still held only in memory, so chunks beyond it can be live in the chunk map. They are
// not part of the file: recovery at open trims every file listed here (store/upkeep/recovery.ts), so after
// a crash a later extension reads zeros there. Kept exact at every commit, so the list is the work
// in flight, not a scan of the store. Its rows are the engine's operations (PastSizeRows;
// sql/past-size-rows.ts for both SQL engines).
import { Db } from './meta';
import { dataOpsOf } from './engine-open';

/** Table `past_size` and the chunk map's read it needs, as an engine answers them. */
export interface PastSizeRows {
  /** The file's last live chunk (version > 0): its index and logical length; undefined for none. */
  lastLive(ino: number): { chunkIndex: number; logicalLenBytes: number } | undefined;
  mark(ino: number): void;
  clear(ino: number): void;
  /** By inode. */
  all(): number[];
}

export class PastSize {
  private readonly s: PastSizeRows;
  constructor(db: Db) {
    this.s = dataOpsOf(db).pastSizeRows();
  }

  /** End of the file's last live chunk data (0: no chunk). */
  storedEndBytes(ino: number, chunkSizeBytes: number): number {
    const r = this.s.lastLive(ino);
    return r === undefined ? 0 : r.chunkIndex * chunkSizeBytes + r.logicalLenBytes;
  }

  /** After a commit that set the size (call in its transaction): list the file iff chunk bytes lie past it. */
  note(ino: number, chunkSizeBytes: number, sizeBytes: number): void {
    if (this.storedEndBytes(ino, chunkSizeBytes) > sizeBytes) this.s.mark(ino);
    else this.s.clear(ino);
  }

  clear(ino: number): void {
    this.s.clear(ino);
  }

  list(): number[] {
    return this.s.all();
  }
}
