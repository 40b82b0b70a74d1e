// The Slice pointers of small files, in the SQL both SQL engines speak alike (DESIGN §9 "Operations"): the statements behind
// store/meta/slice-rows.ts, prepared once.
import { Slice } from '../../../src/slice';
import type { Db } from '../sql-engine';
import { SliceRows, SliceValues, sliceOf } from '../slice-rows';

export class SqlSliceRows implements SliceRows {
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
    return sliceOf(this.s.get.get(ino) as SliceValues | undefined);
  }
  set(ino: number, slice: Slice | null): void {
    if (slice === null) this.s.set.run(null, null, null, null, ino);
    else this.s.set.run(slice.containerId, slice.offsetBytes, slice.lengthBytes, slice.cookie, ino);
  }
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
