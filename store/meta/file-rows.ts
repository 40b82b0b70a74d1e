// The data path's view of an inode row (DESIGN §4): a regular file's layout, chunk parameters, size,
// slice and times, as the chunk writer, truncate, punch and small files read and commit them. The
// namespace's operations (./ops.ts) own creating, linking and attributes; this owns what storing bytes
// changes. Callers group these with their other changes in one transaction. The SQL engines implement
// them once, each spelling what differs (sql/file-rows.ts with the engine's dialect; DESIGN §9 "Operations").
import { dbToU64, u64ToDb } from './meta';
import type { CommitTimes } from './commit-times';

/** The layout and chunk parameters an inode row stores (DESIGN §4): the layout as text, parsed by the caller. */
export interface StoredLayout {
  layoutText: string;
  chunkSizeBytes: number;
  bitrotBlockBytes: number;
  ecBlockSizeBytes: number;
  placementSeed: bigint;
  clusterMapEpoch: number;
}

/** A regular file's row as the data path needs it. */
export interface FileRow extends StoredLayout {
  type: string;
  sizeBytes: number;
  nlink: number;
  /** Spec §11.3 Slice pointer columns; containerId null when the file is not packed. */
  slice: { containerId: bigint; offsetBytes: bigint; lengthBytes: number; cookie: number } | null;
}

/** A new internal inode (a container, spec §11.1): no directory entry, owner-only. */
export interface InternalFile extends StoredLayout {
  timeNs: bigint;
}

/** Internal files (containers) are regular files private to the store's owner. */
const INTERNAL_FILE_MODE = 0o100600;

/** A row as an engine reads it: the columns of FileRows.get's statement. */
export type FileRowValues = Record<string, bigint | string | null>;

/** The named parameters of an internal file's INSERT (@mode, @t, @layout, @cs, @bb, @eb, @seed, @epoch). */
export function internalValues(f: InternalFile): Record<string, number | bigint | string> {
  return {
    mode: INTERNAL_FILE_MODE,
    t: f.timeNs,
    layout: f.layoutText,
    cs: f.chunkSizeBytes,
    bb: f.bitrotBlockBytes,
    eb: f.ecBlockSizeBytes,
    seed: u64ToDb(f.placementSeed),
    epoch: f.clusterMapEpoch,
  };
}

export function fileRowOf(r: FileRowValues): FileRow {
  const slice =
    r.slice_container === null
      ? null
      : {
          containerId: BigInt(r.slice_container),
          offsetBytes: BigInt(r.slice_offset!),
          lengthBytes: Number(r.slice_length),
          cookie: Number(r.slice_cookie),
        };
  return {
    type: String(r.type),
    sizeBytes: Number(r.size),
    nlink: Number(r.nlink),
    layoutText: String(r.layout),
    chunkSizeBytes: Number(r.chunk_size),
    bitrotBlockBytes: Number(r.bitrot_block),
    ecBlockSizeBytes: Number(r.ec_block_size),
    placementSeed: dbToU64(r.placement_seed as bigint),
    clusterMapEpoch: Number(r.cluster_map_epoch),
    slice,
  };
}

/** The data path's operations on an inode row (one engine's statements, prepared once). */
export interface FileRows {
  /** The row, or undefined when no such inode exists. */
  get(ino: number): FileRow | undefined;
  /** The stored layout text (a commit checks it did not change under a write), or undefined. */
  layoutText(ino: number): string | undefined;
  /** The committed size; 0 for an inode that is gone. */
  sizeBytes(ino: number): number;
  /** The chunk size of a regular file, or undefined when ino is not one. */
  chunkSizeBytes(ino: number): number | undefined;
  /** A data commit: the size grows to at least sizeBytes, the times stamped (commit-times.ts); the size after. */
  grow(ino: number, sizeBytes: number, times: CommitTimes | null): number;
  /** A group's commit: the size grows to at least sizeBytes (times stamped at the write); the size after. */
  growSize(ino: number, sizeBytes: number): number;
  /** A data commit that sets the size (a small file's rewrite), times stamped as grow(). */
  setSizeStamped(ino: number, sizeBytes: number, times: CommitTimes | null): void;
  /** A data commit that changes no size: the times stamped as grow(). */
  stamp(ino: number, times: CommitTimes | null): void;
  /** Replay of a logged write (DESIGN §5): its times, unless a later change of the inode committed newer ones. */
  stampIfNewer(ino: number, times: CommitTimes): void;
  /** truncate: the new size, with mtime and ctime set to tNs, or (tNs null) the size alone. */
  setSize(ino: number, sizeBytes: number, tNs: bigint | null): void;
  /** mtime and ctime to tNs (punch hole). */
  touch(ino: number, tNs: bigint): void;
  /** A new internal file (mode 0600, root-owned, no parent); its inode number. */
  insertInternal(f: InternalFile): number;
  /** An internal file's row goes (its chunks are queued for reclaim by the caller). */
  dropInternal(ino: number): void;
  /** A deleted file's last rows: its xattrs, its orphan mark, its inode row. */
  dropFile(ino: number): void;
}
