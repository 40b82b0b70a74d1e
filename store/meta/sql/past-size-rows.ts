// Table `past_size` in the SQL both SQL engines speak alike (DESIGN §9 "Operations"): the statements
// behind store/meta/past-size.ts's PastSizeRows, prepared once.
import type { Db } from '../sql-engine';
import type { PastSizeRows } from '../past-size';

type Row = Record<string, bigint>;

export class SqlPastSizeRows implements PastSizeRows {
  private readonly s;
  constructor(db: Db) {
    this.s = {
      lastLive: db.prepare(
        'SELECT chunk_index, logical_len FROM chunks WHERE ino = ? AND version > 0 ORDER BY chunk_index DESC LIMIT 1',
      ),
      mark: db.prepare('INSERT INTO past_size(ino) VALUES (?) ON CONFLICT DO NOTHING'),
      clear: db.prepare('DELETE FROM past_size WHERE ino = ?'),
      all: db.prepare('SELECT ino FROM past_size ORDER BY ino'),
    };
  }
  lastLive(ino: number): { chunkIndex: number; logicalLenBytes: number } | undefined {
    const r = this.s.lastLive.get(ino) as Row | undefined;
    return r === undefined ? undefined : { chunkIndex: Number(r.chunk_index), logicalLenBytes: Number(r.logical_len) };
  }
  mark(ino: number): void {
    this.s.mark.run(ino);
  }
  clear(ino: number): void {
    this.s.clear.run(ino);
  }
  all(): number[] {
    return (this.s.all.all() as Row[]).map((r) => Number(r.ino));
  }
}
