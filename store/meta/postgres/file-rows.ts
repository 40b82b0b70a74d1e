// The data path's operations on an inode row on PostgreSQL (DESIGN §9 "Operations", "Fewer round
// trips"): the shared statements (sql/file-rows.ts), with reads answered from the inode row the lease
// holder keeps (PgDb.inodeRow) and each write saying what it wrote there (row-cache.ts), so a data
// commit whose row is kept needs no RETURNING to wait for.
import type { CommitTimes } from '../commit-times';
import { timeColumns } from '../commit-times';
import { FileRow, FileRowValues, InternalFile, fileRowOf } from '../file-rows';
import type { SqlStatement } from '../sql-engine';
import { SqlFileRows, setTimesSql } from '../sql/file-rows';
import { POSTGRES_DIALECT } from './dialect';
import { PgDb } from './engine';
import { rowValues, rowObject } from './decode';
import { InodeChange, applyChange, asText, changing } from './inode-change';

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
const SET_TIMES_SQL = setTimesSql(POSTGRES_DIALECT);
/** A deleted file's xattrs, orphan mark and inode row in one statement (each statement costs the server its own execution). */
const DROP_FILE_SQL = `WITH x AS (DELETE FROM xattrs WHERE ino = @ino), o AS (DELETE FROM orphans WHERE ino = @ino)
  DELETE FROM inodes WHERE ino = @ino`;
const GROWN_SQL = POSTGRES_DIALECT.greatestSql('size', '?');

/** What a data commit's times write (the shared SET of timeColumns): mtime as given, ctime never back. */
function timesChange([mNs, mFar, cNs]: [bigint, string | null, bigint]): InodeChange {
  return { mtime_ns: asText(mNs), mtime_far: mFar, ctime_ns: { max: cNs } };
}

export class PgFileRows extends SqlFileRows {
  /** The grows of a kept row: the size after is known here, nothing to wait for (no RETURNING). */
  private readonly kept: { grow: SqlStatement; growSize: SqlStatement };
  /** Prepared here: a prepare waits for every reply unread (engine.ts), a delete should not. */
  private readonly dropFileStatement: SqlStatement;
  constructor(private readonly pg: PgDb) {
    super(pg, POSTGRES_DIALECT);
    this.kept = {
      grow: pg.prepare(`UPDATE inodes SET size = ${GROWN_SQL}, ${SET_TIMES_SQL} WHERE ino = ?`),
      growSize: pg.prepare(`UPDATE inodes SET size = ${GROWN_SQL} WHERE ino = ?`),
    };
    this.dropFileStatement = pg.prepare(DROP_FILE_SQL);
  }

  override get(ino: number): FileRow | undefined {
    const r = this.pg.inodeRow(ino);
    return r === null ? undefined : fileRowOf(rowObject(r, FILE_ROW_COLUMNS) as FileRowValues);
  }
  override layoutText(ino: number): string | undefined {
    const r = this.pg.inodeRow(ino);
    return r === null ? undefined : String(rowValues(r, LAYOUT_COLUMNS)[0]);
  }
  override sizeBytes(ino: number): number {
    const r = this.pg.inodeRow(ino);
    return r === null ? 0 : Number(rowValues(r, SIZE_COLUMNS)[0]);
  }
  override chunkSizeBytes(ino: number): number | undefined {
    const r = this.pg.inodeRow(ino);
    if (r === null) return undefined;
    const [type, chunkSize] = rowValues(r, CHUNK_SIZE_COLUMNS);
    return type === 'file' ? Number(chunkSize) : undefined;
  }
  override grow(ino: number, sizeBytes: number, times: CommitTimes | null): number {
    const t = timeColumns(times);
    const change = { size: { max: BigInt(sizeBytes) }, ...timesChange(t) };
    return this.grown(
      ino,
      change,
      () => this.kept.grow.run(sizeBytes, ...t, ino),
      () => Number((this.s.grow.get(sizeBytes, ...t, ino) as { size: bigint }).size),
    );
  }
  override growSize(ino: number, sizeBytes: number): number {
    const change = { size: { max: BigInt(sizeBytes) } };
    return this.grown(
      ino,
      change,
      () => this.kept.growSize.run(sizeBytes, ino),
      () => super.growSize(ino, sizeBytes),
    );
  }

  /** A size grown: told by the kept row (the UPDATE queued) or by the server's RETURNING; the row patched. */
  private grown(ino: number, change: InodeChange, queued: () => unknown, returning: () => number): number {
    const c = this.pg.rowCache;
    const kept = c.inode(ino);
    if (kept === undefined || kept === null) {
      const sizeBytes = this.pg.following(returning);
      c.patchInode(ino, changing(change));
      return sizeBytes;
    }
    this.pg.following(queued);
    c.patchInode(ino, changing(change));
    return Number(rowValues(kept, SIZE_COLUMNS)[0]);
  }

  override setSizeStamped(ino: number, sizeBytes: number, times: CommitTimes | null): void {
    // timeColumns reads the clock for null times: once, for the statement and the kept row alike.
    const t = timeColumns(times);
    this.pg.following(() => this.s.setSizeStamped.run(sizeBytes, ...t, ino));
    this.pg.rowCache.patchInode(ino, changing({ size: asText(sizeBytes), ...timesChange(t) }));
  }
  override stamp(ino: number, times: CommitTimes | null): void {
    const t = timeColumns(times);
    this.pg.following(() => this.s.stamp.run(...t, ino));
    this.pg.rowCache.patchInode(ino, changing(timesChange(t)));
  }
  override stampIfNewer(ino: number, times: CommitTimes): void {
    const t = timeColumns(times);
    this.pg.following(() => this.s.stampIfNewer.run(...t, ino, times.ctimeNs));
    const change = timesChange(t);
    // Only when the row's ctime is older (the statement's WHERE).
    this.pg.rowCache.patchInode(ino, (r) =>
      BigInt(rowValues(r, CTIME_COLUMNS)[0] as bigint) < times.ctimeNs ? applyChange(r, change) : r,
    );
  }
  override setSize(ino: number, sizeBytes: number, tNs: bigint | null): void {
    this.pg.following(() => super.setSize(ino, sizeBytes, tNs));
    const times: InodeChange = tNs === null ? {} : { mtime_ns: asText(tNs), ctime_ns: asText(tNs) };
    this.pg.rowCache.patchInode(ino, changing({ size: asText(sizeBytes), ...times }));
  }
  override touch(ino: number, tNs: bigint): void {
    this.pg.following(() => super.touch(ino, tNs));
    this.pg.rowCache.patchInode(ino, changing({ mtime_ns: asText(tNs), ctime_ns: asText(tNs) }));
  }
  /** Nothing is kept of the new row: it is read when asked. */
  override insertInternal(f: InternalFile): number {
    return this.pg.following(() => super.insertInternal(f));
  }
  override dropInternal(ino: number): void {
    this.pg.following(() => super.dropInternal(ino));
    this.pg.rowCache.inodeGone(ino);
  }
  override dropFile(ino: number): void {
    this.pg.following(() => this.dropFileStatement.run({ ino }));
    this.pg.rowCache.inodeGone(ino);
  }
}
