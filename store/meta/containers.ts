// Table `containers` (spec §11.1, DESIGN §5 "Small files"), owned by this class. A container is an
// internal file that holds needles: an inode of type 'file' with no directory entry (so no listing
// shows it) and a row here: its pack class (the target layout of the files packed into it), state,
// append offset and dead bytes. Its layout while open: store/small/pack-class.ts.
import { Db } from './meta';

export type ContainerState = 'open' | 'full' | 'sealing' | 'sealed';

export interface ContainerRow {
  id: number;
  packClass: string;
  state: ContainerState;
  usedBytes: number;
  deadBytes: number;
  capacityBytes: number;
  /** A container being rewritten in its target layout ('sealing'): the one it replaces. */
  sealedFrom: number | null;
}

type Row = Record<string, bigint | string | null>;

function rowOf(r: Row): ContainerRow {
  return {
    id: Number(r.id),
    packClass: String(r.pack_class),
    state: r.state as ContainerState,
    usedBytes: Number(r.used_bytes),
    deadBytes: Number(r.dead_bytes),
    capacityBytes: Number(r.capacity_bytes),
    sealedFrom: r.sealed_from === null ? null : Number(r.sealed_from),
  };
}

/** The one owner of table `containers`. Callers group its changes with theirs in one transaction. */
export class Containers {
  private readonly s;
  constructor(db: Db) {
    this.s = {
      get: db.prepare('SELECT * FROM containers WHERE id = ?'),
      open: db.prepare(`SELECT * FROM containers WHERE pack_class = ? AND state = 'open' ORDER BY id LIMIT 1`),
      insert: db.prepare(
        'INSERT INTO containers(id, pack_class, state, used_bytes, dead_bytes, capacity_bytes, sealed_from) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      used: db.prepare('UPDATE containers SET used_bytes = ?, dead_bytes = dead_bytes + ? WHERE id = ?'),
      dead: db.prepare('UPDATE containers SET dead_bytes = dead_bytes + ? WHERE id = ?'),
      state: db.prepare('UPDATE containers SET state = ? WHERE id = ?'),
      remove: db.prepare('DELETE FROM containers WHERE id = ?'),
      inState: db.prepare('SELECT * FROM containers WHERE state = ? ORDER BY id'),
      all: db.prepare('SELECT * FROM containers ORDER BY id'),
      // PostgreSQL: the ratio is a float (an untyped parameter next to a BIGINT would be read as one).
      compactable: db.prepare({
        sqlite: `SELECT * FROM containers WHERE state = @state AND dead_bytes >= @ratio * used_bytes
          AND dead_bytes >= min(@deadMin, @ratio * capacity_bytes) ORDER BY dead_bytes DESC LIMIT @limit`,
        postgres: `SELECT * FROM containers WHERE state = @state AND dead_bytes >= CAST(@ratio AS float8) * used_bytes
          AND dead_bytes >= LEAST(@deadMin, CAST(@ratio AS float8) * capacity_bytes) ORDER BY dead_bytes DESC LIMIT @limit`,
      }),
    };
  }
  get(id: number): ContainerRow | null {
    const r = this.s.get.get(id) as Row | undefined;
    return r === undefined ? null : rowOf(r);
  }
  openOf(packClass: string): ContainerRow | null {
    const r = this.s.open.get(packClass) as Row | undefined;
    return r === undefined ? null : rowOf(r);
  }
  add(row: ContainerRow): void {
    this.s.insert.run(
      row.id,
      row.packClass,
      row.state,
      row.usedBytes,
      row.deadBytes,
      row.capacityBytes,
      row.sealedFrom,
    );
  }
  /** An append committed: the new append offset; gapBytes (chunk-boundary padding, DESIGN §3) are dead at once. */
  setUsed(id: number, usedBytes: number, gapBytes: number): void {
    this.s.used.run(usedBytes, gapBytes, id);
  }
  /** A needle turned dead (unlink, overwrite, moved to chunks, compacted away). */
  addDead(id: number, bytes: number): void {
    this.s.dead.run(bytes, id);
  }
  setState(id: number, state: ContainerState): void {
    this.s.state.run(state, id);
  }
  remove(id: number): void {
    this.s.remove.run(id);
  }
  inState(state: ContainerState): ContainerRow[] {
    return (this.s.inState.all(state) as Row[]).map(rowOf);
  }
  all(): ContainerRow[] {
    return (this.s.all.all() as Row[]).map(rowOf);
  }
  /**
   * Containers in this state with dead/used >= ratio and at least deadBytesMin (or, for small test
   * containers, ratio x capacity) dead (spec §11.5),
   * most dead first. By used bytes, not capacity: a container retired before it filled (its dead
   * bytes held space) counts what it holds.
   */
  compactable(state: ContainerState, ratio: number, deadBytesMin: number, limit: number): ContainerRow[] {
    return (this.s.compactable.all({ state, ratio, deadMin: deadBytesMin, limit }) as Row[]).map(rowOf);
  }
}
