// The data path's view of an inode row (DESIGN §4): a regular file's layout, chunk parameters, size,
// slice and times, as the chunk writer, truncate, punch and small files read and commit them. The
// namespace's operations (./ops.ts) own creating, linking and attributes; this owns what storing bytes
// changes, so no module outside meta/ writes SQL. Callers group these with their
// other changes in one transaction.
import type { Db } from './meta';
import type { SqlStatement } from './sql-engine';
import { NEXT_INO_SQL, dbToU64, u64ToDb } from './meta';
import { CommitTimes, SET_TIMES_SQL, timeColumns } from './commit-times';

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

type Row = Record<string, bigint | string | null>;

const INSERT_INTERNAL_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns,
  layout, chunk_size, bitrot_block, ec_block_size, placement_seed, cluster_map_epoch)`;
const INTERNAL_VALUES_SQL = `'file', @mode, 0, 0, 0, 1, NULL, @t, @t, @t, @t, @layout, @cs, @bb, @eb, @seed, @epoch`;

function fileRowOf(r: Row): FileRow {
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

export class FileRows {
  private readonly s;
  /** The INSERT of an internal file numbered by Db.newIno; made on first use. */
  private insertNumbered: SqlStatement | null = null;
  constructor(private readonly db: Db) {
    this.s = {
      get: db.prepare(`SELECT type, size, nlink, layout, chunk_size, bitrot_block, ec_block_size, placement_seed, cluster_map_epoch,
                       slice_container, slice_offset, slice_length, slice_cookie FROM inodes WHERE ino = ?`),
      layout: db.prepare('SELECT layout FROM inodes WHERE ino = ?'),
      size: db.prepare('SELECT size FROM inodes WHERE ino = ?'),
      chunkSize: db.prepare("SELECT chunk_size FROM inodes WHERE ino = ? AND type = 'file'"),
      grow: db.prepare({
        sqlite: `UPDATE inodes SET size = max(size, ?), ${SET_TIMES_SQL.sqlite} WHERE ino = ? RETURNING size`,
        postgres: `UPDATE inodes SET size = GREATEST(size, ?), ${SET_TIMES_SQL.postgres} WHERE ino = ? RETURNING size`,
      }),
      growSize: db.prepare({
        sqlite: 'UPDATE inodes SET size = max(size, ?) WHERE ino = ? RETURNING size',
        postgres: 'UPDATE inodes SET size = GREATEST(size, ?) WHERE ino = ? RETURNING size',
      }),
      setSizeStamped: db.prepare({
        sqlite: `UPDATE inodes SET size = ?, ${SET_TIMES_SQL.sqlite} WHERE ino = ?`,
        postgres: `UPDATE inodes SET size = ?, ${SET_TIMES_SQL.postgres} WHERE ino = ?`,
      }),
      stampIfNewer: db.prepare({
        sqlite: `UPDATE inodes SET ${SET_TIMES_SQL.sqlite} WHERE ino = ? AND ctime_ns < ?`,
        postgres: `UPDATE inodes SET ${SET_TIMES_SQL.postgres} WHERE ino = ? AND ctime_ns < ?`,
      }),
      stamp: db.prepare({
        sqlite: `UPDATE inodes SET ${SET_TIMES_SQL.sqlite} WHERE ino = ?`,
        postgres: `UPDATE inodes SET ${SET_TIMES_SQL.postgres} WHERE ino = ?`,
      }),
      setSizeTouched: db.prepare('UPDATE inodes SET size = ?, mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
      setSizeOnly: db.prepare('UPDATE inodes SET size = ? WHERE ino = ?'),
      touch: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
      // PostgreSQL gives the new number back by RETURNING (SQLite: lastInsertRowid).
      insertInternal: db.prepare({
        sqlite: `${INSERT_INTERNAL_SQL} VALUES (${NEXT_INO_SQL.sqlite}, ${INTERNAL_VALUES_SQL})`,
        postgres: `${INSERT_INTERNAL_SQL} VALUES (${NEXT_INO_SQL.postgres}, ${INTERNAL_VALUES_SQL}) RETURNING ino`,
      }),
      dropInode: db.prepare('DELETE FROM inodes WHERE ino = ?'),
      dropXattrs: db.prepare('DELETE FROM xattrs WHERE ino = ?'),
      dropOrphan: db.prepare('DELETE FROM orphans WHERE ino = ?'),
    };
  }

  /** The row, or undefined when no such inode exists. */
  get(ino: number): FileRow | undefined {
    const r = this.s.get.get(ino) as Row | undefined;
    return r === undefined ? undefined : fileRowOf(r);
  }
  /** The stored layout text (a commit checks it did not change under a write), or undefined. */
  layoutText(ino: number): string | undefined {
    const r = this.s.layout.get(ino) as { layout: string } | undefined;
    return r === undefined ? undefined : String(r.layout);
  }
  /** The committed size; 0 for an inode that is gone. */
  sizeBytes(ino: number): number {
    const r = this.s.size.get(ino) as { size: bigint } | undefined;
    return r === undefined ? 0 : Number(r.size);
  }
  /** The chunk size of a regular file, or undefined when ino is not one. */
  chunkSizeBytes(ino: number): number | undefined {
    const r = this.s.chunkSize.get(ino) as { chunk_size: bigint } | undefined;
    return r === undefined ? undefined : Number(r.chunk_size);
  }
  /** A data commit: the size grows to at least sizeBytes, the times stamped (commit-times.ts); the size after. */
  grow(ino: number, sizeBytes: number, times: CommitTimes | null): number {
    const r = this.s.grow.get(sizeBytes, ...timeColumns(times), ino) as { size: bigint };
    return Number(r.size);
  }
  /** A transaction group's commit: the size grows to at least sizeBytes (its times were stamped at the write); the size after. */
  growSize(ino: number, sizeBytes: number): number {
    const r = this.s.growSize.get(sizeBytes, ino) as { size: bigint };
    return Number(r.size);
  }
  /** A data commit that sets the size (a small file's rewrite), times stamped as grow(). */
  setSizeStamped(ino: number, sizeBytes: number, times: CommitTimes | null): void {
    this.s.setSizeStamped.run(sizeBytes, ...timeColumns(times), ino);
  }
  /** A data commit that changes no size: the times stamped as grow(). */
  stamp(ino: number, times: CommitTimes | null): void {
    this.s.stamp.run(...timeColumns(times), ino);
  }
  /** Replay of a logged write (DESIGN §5): its times, unless a later change of the inode committed newer ones. */
  stampIfNewer(ino: number, times: CommitTimes): void {
    this.s.stampIfNewer.run(...timeColumns(times), ino, times.ctimeNs);
  }
  /** truncate: the new size, with mtime and ctime set to tNs, or (tNs null) the size alone. */
  setSize(ino: number, sizeBytes: number, tNs: bigint | null): void {
    if (tNs === null) this.s.setSizeOnly.run(sizeBytes, ino);
    else this.s.setSizeTouched.run(sizeBytes, tNs, tNs, ino);
  }
  /** mtime and ctime to tNs (punch hole). */
  touch(ino: number, tNs: bigint): void {
    this.s.touch.run(tNs, tNs, ino);
  }
  /** A new internal file (mode 0600, root-owned, no parent); its inode number. */
  insertInternal(f: InternalFile): number {
    const values = {
      mode: INTERNAL_FILE_MODE,
      t: f.timeNs,
      layout: f.layoutText,
      cs: f.chunkSizeBytes,
      bb: f.bitrotBlockBytes,
      eb: f.ecBlockSizeBytes,
      seed: u64ToDb(f.placementSeed),
      epoch: f.clusterMapEpoch,
    };
    // A number this side chose (PostgreSQL with the lease): every inode INSERT takes it from there then (Db.newIno).
    const own = this.db.newIno(false);
    if (own === null) return Number(this.s.insertInternal.run(values).lastInsertRowid);
    this.insertNumbered ??= this.db.prepare(`${INSERT_INTERNAL_SQL} VALUES (@ino, ${INTERNAL_VALUES_SQL})`);
    this.insertNumbered.run({ ...values, ino: own });
    return own;
  }
  /** An internal file's row goes (its chunks are queued for reclaim by the caller). */
  dropInternal(ino: number): void {
    this.s.dropInode.run(ino);
  }
  /** A deleted file's last rows: its xattrs, its orphan mark, its inode row. */
  dropFile(ino: number): void {
    this.s.dropXattrs.run(ino);
    this.s.dropOrphan.run(ino);
    this.s.dropInode.run(ino);
  }
}
