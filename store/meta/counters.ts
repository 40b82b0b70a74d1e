// Persistent counters (issue 3: status() reports bitrot errors, failovers,
// reconstructions, heals). Bumps are cheap single-row upserts.
import { Db } from './meta';

export const COUNTER_NAMES = [
  'bitrot_errors', 'missing_shards', 'header_mismatches', 'io_errors', 'failovers', 'reconstructions',
  'heals', 'heal_failures', 'unrecoverable_reads', 'intents_resolved', 'degraded_writes', 'needle_mismatches',
] as const;
export type CounterName = (typeof COUNTER_NAMES)[number];

export class Counters {
  /** A read-only opener counts nothing (its database refuses writes). */
  recordsNothing = false;
  private readonly bumpStmt;
  private readonly allStmt;
  constructor(db: Db) {
    this.bumpStmt = db.prepare('INSERT INTO counters(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = counters.value + excluded.value');
    this.allStmt = db.prepare('SELECT name, value FROM counters');
  }
  bump(name: CounterName, by = 1): void {
    if (this.recordsNothing) return;
    this.bumpStmt.run(name, by);
  }
  all(): Record<CounterName, number> {
    const out = Object.fromEntries(COUNTER_NAMES.map((n) => [n, 0])) as Record<CounterName, number>;
    for (const row of this.allStmt.all() as Array<{ name: string; value: bigint }>) {
      if ((COUNTER_NAMES as readonly string[]).includes(row.name)) out[row.name as CounterName] = Number(row.value);
    }
    return out;
  }
}
