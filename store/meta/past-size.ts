// Files that may hold chunk bytes stored past their committed size (DESIGN §5 prefix rule): the
// write-back buffer stores chunks out of order, and the size committed with a write stops at the
// first byte still held only in memory, so chunks beyond it can be live in the chunk map. They are
// not part of the file: recovery at open trims every file listed here (store/upkeep/recovery.ts), so after
// a crash a later extension reads zeros there. Kept exact at every commit, so the list is the work
// in flight, not a scan of the store.
import { Db } from './meta';

type Row = Record<string, bigint>;

export class PastSize {
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

  /** End of the file's last live chunk data (0: no chunk). */
  storedEndBytes(ino: number, chunkSizeBytes: number): number {
    const r = this.s.lastLive.get(ino) as Row | undefined;
    return r === undefined ? 0 : Number(r.chunk_index) * chunkSizeBytes + Number(r.logical_len);
  }

  /** After a commit that set the size (call in its transaction): list the file iff chunk bytes lie past it. */
  note(ino: number, chunkSizeBytes: number, sizeBytes: number): void {
    if (this.storedEndBytes(ino, chunkSizeBytes) > sizeBytes) this.s.mark.run(ino);
    else this.s.clear.run(ino);
  }

  clear(ino: number): void {
    this.s.clear.run(ino);
  }

  list(): number[] {
    return (this.s.all.all() as Row[]).map((r) => Number(r.ino));
  }
}
