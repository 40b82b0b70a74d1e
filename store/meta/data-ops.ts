// The data path's and upkeep's questions of the inode rows (DESIGN §9 "Operations"), as typed calls,
// never as SQL: the SQL engines (sql/data-ops.ts, the statements they share) answer them with their
// own statements. Each domain's statements are prepared when its object is made (as their callers
// did before, so PostgreSQL's prepares take the same round trips), and their texts are the ones the
// PostgreSQL row cache (postgres/row-cache.ts) serves: a read it answered is answered still.
import type { FileRows } from './file-rows';
import type { SliceRows } from './slice-rows';
import type { ChunkRows } from './chunk-rows';
import type { Containers } from './containers';
import type { ReclaimRows } from './reclaim-queue';
import type { CounterRows, CounterValues } from './counter-rows';
import type { PastSizeRows } from './past-size';
import type { PreallocRows } from './prealloc';

/** What the leak scan (store/upkeep/leak-scan.ts, store/meta/freed-evidence.ts) asks of inode numbers. */
export interface InodeEvidence {
  /** The highest inode number ever handed out (0: none), deleted ones included (numbers are never reused). */
  highestIno(): number;
  inodeExists(ino: number): boolean;
  /** A chunk's live version (0: a hole) and the highest it ever had, or undefined for no row. */
  chunkVersions(ino: number, chunkIndex: number): { version: bigint; maxVersion: bigint } | undefined;
  /** Numbers up to ino count as handed out (DESIGN §4 "Restored metadata"): new inodes are numbered above. */
  raiseWatermark(ino: number): void;
  /**
   * A chunk's versions up to version count as handed out (DESIGN §4 "Restored metadata"): its next
   * version is numbered above (a row with no live version is made when it has none).
   */
  raiseMaxVersion(ino: number, chunkIndex: number, version: bigint): void;
}

/** What fallocate's rows (store/meta/prealloc.ts) ask of a file's row. */
export interface FallocateReads {
  /** The chunk size of a regular file; undefined for no inode or another type. */
  fileChunkSize(ino: number): number | undefined;
  /** The committed size of an inode (undefined: no such inode). */
  committedSize(ino: number): number | undefined;
}

/** The columns of a file's row st_blocks and SEEK answers need (store/meta/allocated.ts). */
export interface AllocatedRow {
  type: string;
  size: bigint;
  chunk_size: bigint;
  slice_container: bigint | null;
  slice_length: bigint | null;
}

/** What st_blocks and SEEK_DATA / SEEK_HOLE ask of an inode row (store/meta/allocated.ts). */
export interface AllocatedReads {
  /** The logical bytes of the file's live chunks (version > 0), summed. */
  liveChunkBytes(ino: number): number;
  /** The inode's row as stored (any type: the caller checks it), or undefined. */
  fileRow(ino: number): AllocatedRow | undefined;
}

/**
 * A live chunk and its file's layout (scrub sizes its pass by the shard bytes of each); payloadLenBytes:
 * what its shards hold (the stored length of a transformed chunk, DESIGN §10).
 */
export interface LiveChunk {
  ino: number;
  chunkIndex: number;
  logicalLenBytes: number;
  payloadLenBytes: number;
  layoutText: string;
}

/**
 * Whole-store walks for scrub, fsck and status (DESIGN §7, store/meta/surveys.ts): each is a pass
 * over a table, not a per-request path, so the statements are prepared per call.
 */
export interface InodeSurveys {
  /** Every live chunk (version > 0, DESIGN §4), by inode and chunk index. */
  liveChunks(): LiveChunk[];
  /** Every inode packed as a needle (spec §11.3), in container order so a walk reads each container forward. */
  packedInodes(): number[];
  /** Inodes no name, orphan mark or container row accounts for (fsck), at most limit. */
  unaccountedInodes(limit: number): number[];
  /** Container rows whose inode is gone (fsck), at most limit. */
  containerRowsWithoutInode(limit: number): number[];
  /** Regular files per layout, containers not counted (status). */
  layoutsInUse(): Array<{ layout: string; files: number }>;
}

/** An engine's data operations, one object per domain (made where its caller is). */
export interface DataOps {
  /** The data path's operations on an inode row (store/meta/file-rows.ts). */
  fileRows(): FileRows;
  /** Small files' Slice pointers (store/meta/slice-rows.ts). */
  sliceRows(): SliceRows;
  /** The chunk map's, intents' and heal queue's rows (store/meta/chunk-map.ts). */
  chunkRows(): ChunkRows;
  /** Table `containers` (store/meta/containers.ts). */
  containers(): Containers;
  /** Table `reclaim` (store/meta/reclaim-queue.ts). */
  reclaimRows(): ReclaimRows;
  /** Counts in table `counters` (store/meta/counters.ts). */
  counterRows(): CounterRows;
  /** Values set whole in table `counters` (store/meta/intent-log-tail.ts). */
  counterValues(): CounterValues;
  /** Table `past_size` (store/meta/past-size.ts). */
  pastSizeRows(): PastSizeRows;
  /** Table `prealloc` (store/meta/prealloc.ts). */
  preallocRows(): PreallocRows;
  inodeEvidence(): InodeEvidence;
  fallocateReads(): FallocateReads;
  allocatedReads(): AllocatedReads;
  surveys(): InodeSurveys;
}
