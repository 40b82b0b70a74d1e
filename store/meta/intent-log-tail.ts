// Where replay of the intent log starts (DESIGN §5; docs/intent-log.md): the sequence number and
// file offset of the oldest record not yet folded into the shards, and the id of the log file they
// are in (a log file whose id the metadata does not name holds nothing it needs). Rows of the counters table,
// committed with the metadata; a lost update only makes replay start earlier (replay is idempotent),
// and log space is reused only behind a tail that a full commit made durable (store/chunks/intent-log.ts).
import { Db } from './meta';
import { dataOpsOf } from './engine-open';
import type { CounterValues } from './counter-rows';
import { ChainPoint } from '../../src/intent-chain';

const SEQ_ROW = 'intent_log_tail_seq';
const OFFSET_ROW = 'intent_log_tail_offset';
const ID_ROW = 'intent_log_id';

export class IntentLogTail {
  private readonly s: CounterValues;
  constructor(private readonly db: Db) {
    this.s = dataOpsOf(db).counterValues();
  }

  /** The stored tail, or null when no log was written yet. */
  get(): ChainPoint | null {
    const rows = this.s.pair(SEQ_ROW, OFFSET_ROW);
    const seq = rows.find((r) => r.name === SEQ_ROW);
    const off = rows.find((r) => r.name === OFFSET_ROW);
    if (seq === undefined || off === undefined) return null;
    return { seq: BigInt(seq.value), offsetBytes: Number(off.value) };
  }

  /** The id of the log file this metadata's tail is in, or null: none was bound yet. */
  logId(): bigint | null {
    const v = this.s.value(ID_ROW);
    return v === undefined ? null : BigInt.asUintN(64, v);
  }

  /** A new log file: its id and its first tail, in one commit of their own. */
  bind(logId: bigint, start: ChainPoint): void {
    this.db.transaction(() => {
      this.s.set(ID_ROW, BigInt.asIntN(64, logId));
      this.set(start);
    })();
  }

  /** Call in a transaction. */
  set(p: ChainPoint): void {
    this.s.set(SEQ_ROW, p.seq);
    this.s.set(OFFSET_ROW, p.offsetBytes);
  }
}
