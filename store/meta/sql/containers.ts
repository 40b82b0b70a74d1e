// Table `containers` in the SQL both SQL engines speak alike (DESIGN §9 "Operations"): the
// statements behind store/meta/containers.ts, prepared once; the engine's dialect spells LEAST and
// the float the compaction ratio is.
import type { Db } from '../sql-engine';
import type { ContainerRow, ContainerState, Containers } from '../containers';
import type { SqlDialect } from './dialect';

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

function statements(db: Db, d: SqlDialect) {
  const ratio = d.floatSql('@ratio');
  const deadMin = d.leastSql('@deadMin', `${ratio} * capacity_bytes`);
  return {
    get: db.prepare('SELECT * FROM containers WHERE id = ?'),
    open: db.prepare(`SELECT * FROM containers WHERE pack_class = ? AND state = 'open' ORDER BY id LIMIT 1`),
    insert: db.prepare(
      'INSERT INTO containers(id, pack_class, state, used_bytes, dead_bytes, capacity_bytes, sealed_from) ' +
        'VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    used: db.prepare('UPDATE containers SET used_bytes = ?, dead_bytes = dead_bytes + ? WHERE id = ?'),
    dead: db.prepare('UPDATE containers SET dead_bytes = dead_bytes + ? WHERE id = ?'),
    state: db.prepare('UPDATE containers SET state = ? WHERE id = ?'),
    remove: db.prepare('DELETE FROM containers WHERE id = ?'),
    inState: db.prepare('SELECT * FROM containers WHERE state = ? ORDER BY id'),
    all: db.prepare('SELECT * FROM containers ORDER BY id'),
    compactable: db.prepare(`SELECT * FROM containers WHERE state = @state AND dead_bytes >= ${ratio} * used_bytes
          AND dead_bytes >= ${deadMin} ORDER BY dead_bytes DESC LIMIT @limit`),
  };
}

export class SqlContainers implements Containers {
  private readonly s;
  constructor(db: Db, dialect: SqlDialect) {
    this.s = statements(db, dialect);
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
    const r = row;
    this.s.insert.run(r.id, r.packClass, r.state, r.usedBytes, r.deadBytes, r.capacityBytes, r.sealedFrom);
  }
  setUsed(id: number, usedBytes: number, gapBytes: number): void {
    this.s.used.run(usedBytes, gapBytes, id);
  }
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
  compactable(state: ContainerState, ratio: number, deadBytesMin: number, limit: number): ContainerRow[] {
    return (this.s.compactable.all({ state, ratio, deadMin: deadBytesMin, limit }) as Row[]).map(rowOf);
  }
}
