// The data path's operations on an inode row (DESIGN §9 "Operations"), in the SQL both SQL engines
// speak, each spelling what differs (its dialect.ts: the larger of two values, the key an INSERT gives
// back, the next inode number): the statements behind store/meta/file-rows.ts, prepared once. On
// PostgreSQL, postgres/file-rows.ts answers the reads from the row the lease holder keeps and says
// what each write wrote there.
import type { Db, SqlStatement } from '../sql-engine';
import type { SqlDialect } from './dialect';
import { CommitTimes, timeColumns } from '../commit-times';
import { FileRow, FileRowValues, FileRows, InternalFile, fileRowOf, internalValues } from '../file-rows';

/** The SET items of timeColumns' three values (store/meta/commit-times.ts): ctime never goes back. */
export function setTimesSql(d: SqlDialect): string {
  return `mtime_ns = ?, mtime_far = ?, ctime_ns = ${d.greatestSql('ctime_ns', '?')}`;
}

const INSERT_INTERNAL_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns,
  layout, chunk_size, bitrot_block, ec_block_size, placement_seed, cluster_map_epoch)`;
const INTERNAL_VALUES_SQL = `'file', @mode, 0, 0, 0, 1, NULL, @t, @t, @t, @t, @layout, @cs, @bb, @eb, @seed, @epoch`;

export class SqlFileRows implements FileRows {
  protected readonly s;
  /** The INSERT of an internal file numbered by Db.newIno; made on first use. */
  private insertNumbered: SqlStatement | null = null;
  constructor(
    protected readonly db: Db,
    d: SqlDialect,
  ) {
    const setTimes = setTimesSql(d);
    const grown = d.greatestSql('size', '?');
    this.s = {
      get: db.prepare(`SELECT type, size, nlink, layout, chunk_size, bitrot_block, ec_block_size, placement_seed, cluster_map_epoch,
                       slice_container, slice_offset, slice_length, slice_cookie FROM inodes WHERE ino = ?`),
      layout: db.prepare('SELECT layout FROM inodes WHERE ino = ?'),
      size: db.prepare('SELECT size FROM inodes WHERE ino = ?'),
      chunkSize: db.prepare("SELECT chunk_size FROM inodes WHERE ino = ? AND type = 'file'"),
      grow: db.prepare(`UPDATE inodes SET size = ${grown}, ${setTimes} WHERE ino = ? RETURNING size`),
      growSize: db.prepare(`UPDATE inodes SET size = ${grown} WHERE ino = ? RETURNING size`),
      setSizeStamped: db.prepare(`UPDATE inodes SET size = ?, ${setTimes} WHERE ino = ?`),
      stampIfNewer: db.prepare(`UPDATE inodes SET ${setTimes} WHERE ino = ? AND ctime_ns < ?`),
      stamp: db.prepare(`UPDATE inodes SET ${setTimes} WHERE ino = ?`),
      setSizeTouched: db.prepare('UPDATE inodes SET size = ?, mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
      setSizeOnly: db.prepare('UPDATE inodes SET size = ? WHERE ino = ?'),
      touch: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
      // The INSERT takes the next number itself when this side does not choose it, and gives it back:
      // by RETURNING (PostgreSQL), or as the rowid the driver tells (SQLite).
      insertInternal: db.prepare(
        `${INSERT_INTERNAL_SQL} VALUES (${d.nextInoSql}, ${INTERNAL_VALUES_SQL})${d.returningSql('ino')}`,
      ),
      dropInode: db.prepare('DELETE FROM inodes WHERE ino = ?'),
      dropXattrs: db.prepare('DELETE FROM xattrs WHERE ino = ?'),
      dropOrphan: db.prepare('DELETE FROM orphans WHERE ino = ?'),
    };
  }

  get(ino: number): FileRow | undefined {
    const r = this.s.get.get(ino) as FileRowValues | undefined;
    return r === undefined ? undefined : fileRowOf(r);
  }
  layoutText(ino: number): string | undefined {
    const r = this.s.layout.get(ino) as { layout: string } | undefined;
    return r === undefined ? undefined : String(r.layout);
  }
  sizeBytes(ino: number): number {
    const r = this.s.size.get(ino) as { size: bigint } | undefined;
    return r === undefined ? 0 : Number(r.size);
  }
  chunkSizeBytes(ino: number): number | undefined {
    const r = this.s.chunkSize.get(ino) as { chunk_size: bigint } | undefined;
    return r === undefined ? undefined : Number(r.chunk_size);
  }
  grow(ino: number, sizeBytes: number, times: CommitTimes | null): number {
    const r = this.s.grow.get(sizeBytes, ...timeColumns(times), ino) as { size: bigint };
    return Number(r.size);
  }
  growSize(ino: number, sizeBytes: number): number {
    const r = this.s.growSize.get(sizeBytes, ino) as { size: bigint };
    return Number(r.size);
  }
  setSizeStamped(ino: number, sizeBytes: number, times: CommitTimes | null): void {
    this.s.setSizeStamped.run(sizeBytes, ...timeColumns(times), ino);
  }
  stamp(ino: number, times: CommitTimes | null): void {
    this.s.stamp.run(...timeColumns(times), ino);
  }
  stampIfNewer(ino: number, times: CommitTimes): void {
    this.s.stampIfNewer.run(...timeColumns(times), ino, times.ctimeNs);
  }
  setSize(ino: number, sizeBytes: number, tNs: bigint | null): void {
    if (tNs === null) this.s.setSizeOnly.run(sizeBytes, ino);
    else this.s.setSizeTouched.run(sizeBytes, tNs, tNs, ino);
  }
  touch(ino: number, tNs: bigint): void {
    this.s.touch.run(tNs, tNs, ino);
  }
  insertInternal(f: InternalFile): number {
    const values = internalValues(f);
    // A number this side chose (PostgreSQL with the lease): every inode INSERT takes it from there then
    // (Db.newIno). SQLite chooses none (one process, one statement).
    const own = this.db.newIno(false);
    if (own === null) return Number(this.s.insertInternal.run(values).lastInsertRowid);
    this.insertNumbered ??= this.db.prepare(`${INSERT_INTERNAL_SQL} VALUES (@ino, ${INTERNAL_VALUES_SQL})`);
    this.insertNumbered.run({ ...values, ino: own });
    return own;
  }
  dropInternal(ino: number): void {
    this.s.dropInode.run(ino);
  }
  dropFile(ino: number): void {
    this.s.dropXattrs.run(ino);
    this.s.dropOrphan.run(ino);
    this.s.dropInode.run(ino);
  }
}
