// Table `counters` in the SQL both SQL engines speak alike (DESIGN §9 "Operations"): the statements
// behind store/meta/counter-rows.ts, prepared once.
import type { Db } from '../sql-engine';
import type { CounterRows, CounterValues } from '../counter-rows';

export class SqlCounterRows implements CounterRows {
  private readonly bump;
  private readonly rows;
  constructor(db: Db) {
    this.bump = db.prepare(
      'INSERT INTO counters(name, value) VALUES (?, ?) ' +
        'ON CONFLICT(name) DO UPDATE SET value = counters.value + excluded.value',
    );
    this.rows = db.prepare('SELECT name, value FROM counters');
  }
  add(name: string, by: number): void {
    this.bump.run(name, by);
  }
  all(): Array<{ name: string; value: number }> {
    return (this.rows.all() as Array<{ name: string; value: bigint }>).map((r) => ({
      name: r.name,
      value: Number(r.value),
    }));
  }
}

export class SqlCounterValues implements CounterValues {
  private readonly s;
  constructor(db: Db) {
    this.s = {
      get: db.prepare('SELECT name, value FROM counters WHERE name IN (?, ?)'),
      id: db.prepare('SELECT value FROM counters WHERE name = ?'),
      set: db.prepare(`INSERT INTO counters(name, value) VALUES (?, ?)
                       ON CONFLICT(name) DO UPDATE SET value = excluded.value`),
    };
  }
  pair(a: string, b: string): Array<{ name: string; value: bigint }> {
    return (this.s.get.all(a, b) as Array<{ name: string; value: bigint | number }>).map((r) => ({
      name: r.name,
      value: BigInt(r.value),
    }));
  }
  value(name: string): bigint | undefined {
    const r = this.s.id.get(name) as { value: bigint | number } | undefined;
    return r === undefined ? undefined : BigInt(r.value);
  }
  set(name: string, value: bigint | number): void {
    this.s.set.run(name, value);
  }
}
