// Table `prealloc` in the SQL both SQL engines share (DESIGN §9 "Operations"): the statements behind
// store/meta/prealloc.ts's PreallocRows, prepared once; the three that need max/min of two values
// (GREATEST/LEAST on PostgreSQL) are the engine's own (sqlite/, postgres/prealloc-sql.ts).
import type { Db } from '../sql-engine';
import type { PreallocExtra, PreallocRows } from '../prealloc';
import type { SqlDialect } from './dialect';

/** The statements an engine spells its own way. */
export interface PreallocSql {
  /** (ino, chunk_index, length): the row made, or its length raised to length. */
  grow: string;
  /** (length, ino, chunk_index): the row's length lowered to length. */
  clip: string;
  /** (@ino, @size, @cs, @needle): per row, what it adds over the chunk's stored length below the size, and past it. */
  extra: string;
}

export class SqlPreallocRows implements PreallocRows {
  private readonly s;
  constructor(db: Db, dialect: SqlDialect) {
    const own = dialect.prealloc;
    this.s = {
      upsert: db.prepare(own.grow),
      dropFrom: db.prepare('DELETE FROM prealloc WHERE ino = ? AND chunk_index >= ?'),
      dropRange: db.prepare('DELETE FROM prealloc WHERE ino = ? AND chunk_index >= ? AND chunk_index < ?'),
      clip: db.prepare(own.clip),
      length: db.prepare('SELECT length FROM prealloc WHERE ino = ? AND chunk_index = ?'),
      from: db.prepare(
        'SELECT chunk_index, length FROM prealloc WHERE ino = ? AND chunk_index >= ? ORDER BY chunk_index',
      ),
      extra: db.prepare(own.extra),
      inos: db.prepare('SELECT DISTINCT ino FROM prealloc'),
    };
  }
  inodes(): number[] {
    return (this.s.inos.all() as Array<{ ino: bigint }>).map((r) => Number(r.ino));
  }
  grow(ino: number, chunkIndex: number, lengthBytes: number): void {
    this.s.upsert.run(ino, chunkIndex, lengthBytes);
  }
  dropFrom(ino: number, fromChunk: number): void {
    this.s.dropFrom.run(ino, fromChunk);
  }
  dropRange(ino: number, firstChunk: number, endChunk: number): void {
    this.s.dropRange.run(ino, firstChunk, endChunk);
  }
  clip(ino: number, chunkIndex: number, lengthBytes: number): void {
    this.s.clip.run(lengthBytes, ino, chunkIndex);
  }
  length(ino: number, chunkIndex: number): number {
    const r = this.s.length.get(ino, chunkIndex) as { length: bigint } | undefined;
    return r === undefined ? 0 : Number(r.length);
  }
  from(ino: number, fromChunk: number): Array<[number, number]> {
    return (this.s.from.all(ino, fromChunk) as Array<{ chunk_index: bigint; length: bigint }>).map((r) => [
      Number(r.chunk_index),
      Number(r.length),
    ]);
  }
  extra(ino: number, sizeBytes: number, cs: number, needleBytes: number): PreallocExtra {
    const r = this.s.extra.get({ ino, size: sizeBytes, cs, needle: needleBytes }) as { inside: bigint; beyond: bigint };
    return { insideBytes: Number(r.inside), beyondBytes: Number(r.beyond) };
  }
}
