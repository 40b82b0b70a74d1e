// The data path's operations on an inode row on PostgreSQL (DESIGN §9 "Operations"): the statements
// behind store/meta/file-rows.ts, prepared once. Reads are answered from the inode row the lease
// holder keeps (PgDb.inodeRow); each write says what it wrote there (row-cache.ts, DESIGN §9 "Fewer
// round trips"), so a data commit whose row is kept needs no RETURNING to wait for.
import { NEXT_INO_SQL } from './schema';
import type { Db, SqlStatement } from '../sql-engine';
import { CommitTimes, timeColumns } from '../commit-times';
import { FileRow, FileRowValues, FileRows, InternalFile, fileRowOf, internalValues } from '../file-rows';
import { PgDb } from './engine';
import { rowValues, rowObject } from './decode';
import { InodeChange, applyChange, asText, changing } from './inode-change';
import { assert } from '../../../src/errors';

/** The columns of FileRows.get (FileRowValues). */
const FILE_ROW_COLUMNS = [
  'type',
  'size',
  'nlink',
  'layout',
  'chunk_size',
  'bitrot_block',
  'ec_block_size',
  'placement_seed',
  'cluster_map_epoch',
  'slice_container',
  'slice_offset',
  'slice_length',
  'slice_cookie',
] as const;
const LAYOUT_COLUMNS = ['layout'] as const;
const CTIME_COLUMNS = ['ctime_ns'] as const;
const SIZE_COLUMNS = ['size'] as const;
const CHUNK_SIZE_COLUMNS = ['type', 'chunk_size'] as const;

/** What a data commit's times write (SET_TIMES_SQL): mtime as given, ctime never back. */
function timesChange([mNs, mFar, cNs]: [bigint, string | null, bigint]): InodeChange {
  return { mtime_ns: asText(mNs), mtime_far: mFar, ctime_ns: { max: cNs } };
}

/** The SET items of timeColumns' three values (store/meta/commit-times.ts): ctime never goes back. */
const SET_TIMES_SQL = 'mtime_ns = ?, mtime_far = ?, ctime_ns = GREATEST(ctime_ns, ?)';

const INSERT_INTERNAL_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns,
  layout, chunk_size, bitrot_block, ec_block_size, placement_seed, cluster_map_epoch)`;
const INTERNAL_VALUES_SQL = `'file', @mode, 0, 0, 0, 1, NULL, @t, @t, @t, @t, @layout, @cs, @bb, @eb, @seed, @epoch`;

export class PgFileRows implements FileRows {
  private readonly s;
  private readonly db: PgDb;
  /** The INSERT of an internal file numbered by Db.newIno; made on first use. */
  private insertNumbered: SqlStatement | null = null;
  constructor(db: Db) {
    assert(db instanceof PgDb, 'file rows of a PostgreSQL connection');
    this.db = db;
    this.s = {
      grow: db.prepare(`UPDATE inodes SET size = GREATEST(size, ?), ${SET_TIMES_SQL} WHERE ino = ? RETURNING size`),
      growSize: db.prepare('UPDATE inodes SET size = GREATEST(size, ?) WHERE ino = ? RETURNING size'),
      // The same, for a row kept (PgDb.inodeRow): the size after is known here, nothing to wait for.
      growKept: db.prepare(`UPDATE inodes SET size = GREATEST(size, ?), ${SET_TIMES_SQL} WHERE ino = ?`),
      growSizeKept: db.prepare('UPDATE inodes SET size = GREATEST(size, ?) WHERE ino = ?'),
      setSizeStamped: db.prepare(`UPDATE inodes SET size = ?, ${SET_TIMES_SQL} WHERE ino = ?`),
      stampIfNewer: db.prepare(`UPDATE inodes SET ${SET_TIMES_SQL} WHERE ino = ? AND ctime_ns < ?`),
      stamp: db.prepare(`UPDATE inodes SET ${SET_TIMES_SQL} WHERE ino = ?`),
      setSizeTouched: db.prepare('UPDATE inodes SET size = ?, mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
      setSizeOnly: db.prepare('UPDATE inodes SET size = ? WHERE ino = ?'),
      touch: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
      // The server gives the new number back by RETURNING (when this side does not choose it).
      insertInternal: db.prepare(
        `${INSERT_INTERNAL_SQL} VALUES (${NEXT_INO_SQL}, ${INTERNAL_VALUES_SQL}) RETURNING ino`,
      ),
      dropInode: db.prepare('DELETE FROM inodes WHERE ino = ?'),
      dropXattrs: db.prepare('DELETE FROM xattrs WHERE ino = ?'),
      dropOrphan: db.prepare('DELETE FROM orphans WHERE ino = ?'),
    };
  }

  get(ino: number): FileRow | undefined {
    const r = this.db.inodeRow(ino);
    return r === null ? undefined : fileRowOf(rowObject(r, FILE_ROW_COLUMNS) as FileRowValues);
  }
  layoutText(ino: number): string | undefined {
    const r = this.db.inodeRow(ino);
    return r === null ? undefined : String(rowValues(r, LAYOUT_COLUMNS)[0]);
  }
  sizeBytes(ino: number): number {
    const r = this.db.inodeRow(ino);
    return r === null ? 0 : Number(rowValues(r, SIZE_COLUMNS)[0]);
  }
  chunkSizeBytes(ino: number): number | undefined {
    const r = this.db.inodeRow(ino);
    if (r === null) return undefined;
    const [type, chunkSize] = rowValues(r, CHUNK_SIZE_COLUMNS);
    return type === 'file' ? Number(chunkSize) : undefined;
  }
  grow(ino: number, sizeBytes: number, times: CommitTimes | null): number {
    const t = timeColumns(times);
    const change = { size: { max: BigInt(sizeBytes) }, ...timesChange(t) };
    return this.grown(
      ino,
      change,
      () => this.s.growKept.run(sizeBytes, ...t, ino),
      () => this.s.grow.get(sizeBytes, ...t, ino),
    );
  }
  growSize(ino: number, sizeBytes: number): number {
    const change = { size: { max: BigInt(sizeBytes) } };
    return this.grown(
      ino,
      change,
      () => this.s.growSizeKept.run(sizeBytes, ino),
      () => this.s.growSize.get(sizeBytes, ino),
    );
  }

  /** A size grown: told by the kept row (the UPDATE queued) or by the server's RETURNING; the row patched. */
  private grown(ino: number, change: InodeChange, queued: () => unknown, returning: () => unknown): number {
    const c = this.db.rowCache;
    const kept = c.inode(ino);
    if (kept === undefined || kept === null) {
      const r = this.db.following(returning) as { size: bigint };
      c.patchInode(ino, changing(change));
      return Number(r.size);
    }
    this.db.following(queued);
    c.patchInode(ino, changing(change));
    return Number(rowValues(kept, SIZE_COLUMNS)[0]);
  }

  setSizeStamped(ino: number, sizeBytes: number, times: CommitTimes | null): void {
    const t = timeColumns(times);
    this.db.following(() => this.s.setSizeStamped.run(sizeBytes, ...t, ino));
    this.db.rowCache.patchInode(ino, changing({ size: asText(sizeBytes), ...timesChange(t) }));
  }
  stamp(ino: number, times: CommitTimes | null): void {
    const t = timeColumns(times);
    this.db.following(() => this.s.stamp.run(...t, ino));
    this.db.rowCache.patchInode(ino, changing(timesChange(t)));
  }
  stampIfNewer(ino: number, times: CommitTimes): void {
    const t = timeColumns(times);
    this.db.following(() => this.s.stampIfNewer.run(...t, ino, times.ctimeNs));
    const change = timesChange(t);
    // Only when the row's ctime is older (the statement's WHERE).
    this.db.rowCache.patchInode(ino, (r) =>
      BigInt(rowValues(r, CTIME_COLUMNS)[0] as bigint) < times.ctimeNs ? applyChange(r, change) : r,
    );
  }
  setSize(ino: number, sizeBytes: number, tNs: bigint | null): void {
    if (tNs === null) this.db.following(() => this.s.setSizeOnly.run(sizeBytes, ino));
    else this.db.following(() => this.s.setSizeTouched.run(sizeBytes, tNs, tNs, ino));
    const times: InodeChange = tNs === null ? {} : { mtime_ns: asText(tNs), ctime_ns: asText(tNs) };
    this.db.rowCache.patchInode(ino, changing({ size: asText(sizeBytes), ...times }));
  }
  touch(ino: number, tNs: bigint): void {
    this.db.following(() => this.s.touch.run(tNs, tNs, ino));
    this.db.rowCache.patchInode(ino, changing({ mtime_ns: asText(tNs), ctime_ns: asText(tNs) }));
  }
  insertInternal(f: InternalFile): number {
    const values = internalValues(f);
    // A number this side chose (PostgreSQL with the lease): every inode INSERT takes it from there then (Db.newIno).
    // Nothing is kept of the new row: it is read when asked.
    const own = this.db.newIno(false);
    if (own === null) return this.db.following(() => Number(this.s.insertInternal.run(values).lastInsertRowid));
    this.insertNumbered ??= this.db.prepare(`${INSERT_INTERNAL_SQL} VALUES (@ino, ${INTERNAL_VALUES_SQL})`);
    this.db.following(() => this.insertNumbered!.run({ ...values, ino: own }));
    return own;
  }
  dropInternal(ino: number): void {
    this.db.following(() => this.s.dropInode.run(ino));
    this.db.rowCache.inodeGone(ino);
  }
  dropFile(ino: number): void {
    this.db.following(() => {
      this.s.dropXattrs.run(ino);
      this.s.dropOrphan.run(ino);
      this.s.dropInode.run(ino);
    });
    this.db.rowCache.inodeGone(ino);
  }
}
