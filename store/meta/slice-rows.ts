// The Slice pointer of a small file (spec §11.3): four columns of its inode row, and nothing else
// (no data in the database). The one owner of the slice_* columns of table `inodes`.
import { Slice } from '../../src/slice';
import { Db } from './meta';

type Row = Record<string, bigint | null>;

export class SliceRows {
  private readonly s;
  constructor(db: Db) {
    this.s = {
      get: db.prepare('SELECT slice_container, slice_offset, slice_length, slice_cookie FROM inodes WHERE ino = ?'),
      set: db.prepare(
        'UPDATE inodes SET slice_container = ?, slice_offset = ?, slice_length = ?, slice_cookie = ? WHERE ino = ?',
      ),
      setIf: db.prepare(`UPDATE inodes SET slice_container = ?, slice_offset = ?, slice_length = ?, slice_cookie = ?
                         WHERE ino = ? AND slice_container = ? AND slice_offset = ? AND slice_cookie = ?`),
      move: db.prepare('UPDATE inodes SET slice_container = ? WHERE slice_container = ?'),
      count: db.prepare('SELECT count(*) AS n FROM inodes WHERE slice_container = ?'),
      live: db.prepare('SELECT sum(slice_length) AS n FROM inodes WHERE slice_container = ?'),
    };
  }
  get(ino: number): Slice | null {
    const r = this.s.get.get(ino) as Row | undefined;
    if (r === undefined || r.slice_container === null) return null;
    return {
      containerId: BigInt(r.slice_container),
      offsetBytes: BigInt(r.slice_offset!),
      lengthBytes: Number(r.slice_length),
      cookie: Number(r.slice_cookie),
    };
  }
  /** null: the file holds no needle (empty, or stored in chunks of its own). */
  set(ino: number, slice: Slice | null): void {
    if (slice === null) this.s.set.run(null, null, null, null, ino);
    else this.s.set.run(slice.containerId, slice.offsetBytes, slice.lengthBytes, slice.cookie, ino);
  }
  /** Repoint ino to `to` only if it still points at `from` (compaction's liveness rule, spec §11.5). */
  setIf(ino: number, from: Slice, to: Slice): boolean {
    return (
      this.s.setIf.run(
        to.containerId,
        to.offsetBytes,
        to.lengthBytes,
        to.cookie,
        ino,
        from.containerId,
        from.offsetBytes,
        from.cookie,
      ).changes === 1
    );
  }
  /** Every slice of container `from` now names `to` (a seal's rewrite keeps offsets). */
  moveAll(from: number, to: number): number {
    return this.s.move.run(to, from).changes;
  }
  countIn(containerId: number): number {
    return Number((this.s.count.get(containerId) as { n: bigint }).n);
  }
  liveBytesIn(containerId: number): number {
    return Number((this.s.live.get(containerId) as { n: bigint | null }).n ?? 0n);
  }
}
