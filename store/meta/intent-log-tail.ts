// Where replay of the intent log starts (DESIGN §5; docs/intent-log.md): the sequence number and
// file offset of the oldest record not yet folded into the shards. Two rows of the counters table,
// committed with the metadata; a lost update only makes replay start earlier (replay is idempotent),
// and log space is reused only behind a tail that a full commit made durable (store/chunks/intent-log.ts).
import { Db } from './meta';
import { ChainPoint } from '../../src/intent-chain';

const SEQ_ROW = 'intent_log_tail_seq';
const OFFSET_ROW = 'intent_log_tail_offset';

export class IntentLogTail {
  private readonly s;
  constructor(db: Db) {
    this.s = {
      get: db.prepare('SELECT name, value FROM counters WHERE name IN (?, ?)'),
      set: db.prepare('INSERT INTO counters(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value'),
    };
  }

  /** The stored tail, or null when no log was written yet. */
  get(): ChainPoint | null {
    const rows = this.s.get.all(SEQ_ROW, OFFSET_ROW) as Array<{ name: string; value: bigint | number }>;
    const seq = rows.find((r) => r.name === SEQ_ROW);
    const off = rows.find((r) => r.name === OFFSET_ROW);
    if (seq === undefined || off === undefined) return null;
    return { seq: BigInt(seq.value), offsetBytes: Number(off.value) };
  }

  /** Call in a transaction. */
  set(p: ChainPoint): void {
    this.s.set.run(SEQ_ROW, p.seq);
    this.s.set.run(OFFSET_ROW, p.offsetBytes);
  }
}
