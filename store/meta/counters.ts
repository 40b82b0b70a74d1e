// Persistent counters (status() reports bitrot errors, failovers,
// reconstructions, heals). Bumps are cheap single-row upserts. A damaged shard is counted once, when
// it is newly queued for heal (store/chunks/chunk-env.ts); the reads served around it are counted
// apart, in memory and written at most once a second (with a disk offline that is every read).
import { Db } from './meta';
import { dataOpsOf } from './engine-open';
import type { CounterRows } from './counter-rows';

export const COUNTER_NAMES = [
  'bitrot_errors',
  'missing_shards',
  'header_mismatches',
  'io_errors',
  'failovers',
  'reconstructions',
  'heals',
  'heal_failures',
  'unrecoverable_reads',
  'intents_resolved',
  'degraded_writes',
  'needle_mismatches',
  'reads_served_around',
] as const;
/** Batched counts reach the database at most this often (and at close). */
const BATCH_FLUSH_MS = 1000;
export type CounterName = (typeof COUNTER_NAMES)[number];

export class Counters {
  /** A read-only opener counts nothing (its database refuses writes). */
  recordsNothing = false;
  private readonly rows: CounterRows;
  constructor(db: Db) {
    this.rows = dataOpsOf(db).counterRows();
  }
  private readonly pending = new Map<CounterName, number>();
  private flushedMs = 0;
  bump(name: CounterName, by = 1): void {
    if (this.recordsNothing) return;
    this.rows.add(name, by);
  }
  /** bump for events of the read path: counted here, written by a later flush (BATCH_FLUSH_MS at most, or close). */
  bumpBatched(name: CounterName): void {
    if (this.recordsNothing) return;
    this.pending.set(name, (this.pending.get(name) ?? 0) + 1);
    if (Date.now() - this.flushedMs >= BATCH_FLUSH_MS) this.flush();
  }
  /** Writes the batched counts. */
  flush(): void {
    this.flushedMs = Date.now();
    for (const [name, n] of this.pending) this.rows.add(name, n);
    this.pending.clear();
  }
  all(): Record<CounterName, number> {
    const out = Object.fromEntries(COUNTER_NAMES.map((n) => [n, 0])) as Record<CounterName, number>;
    for (const row of this.rows.all()) {
      if ((COUNTER_NAMES as readonly string[]).includes(row.name)) out[row.name as CounterName] = row.value;
    }
    for (const [name, n] of this.pending) out[name] += n;
    return out;
  }
}
