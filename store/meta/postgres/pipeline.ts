// Statements of one transaction sent together (round trips to PostgreSQL). Inside a
// transaction, a statement whose result nobody has asked for yet (BEGIN, SAVEPOINT, an INSERT or
// UPDATE run for its effect) waits here, and goes with the next statement whose result is needed (a
// read, COMMIT) in one libpq pipeline: one round trip for all of them, in order, so a read sees
// every write before it. A queued statement's result (changes, the RETURNING key) is there once it
// is read: asking for it sends the queue. A queued statement that fails fails the statement that
// sent it, so the operation fails and its transaction rolls back, as when it failed at once.
// Outside a transaction nothing waits: a write in autocommit is committed when it returns (DESIGN §5).
// A transaction none of whose statements was sent before its end goes without BEGIN and COMMIT: the
// statements up to a pipeline's sync point run as one implicit transaction, which the sync point
// commits, or rolls back whole when one fails (PostgreSQL's extended protocol): the server runs a
// third of the statements for an operation of one write (PgDb.transaction, dropLeadingBegin).
import { RunInfo } from '../sql-engine';
import { LibpqConnection, PgResult } from './libpq';
import { CachedResult } from './result';

/** Statements one transaction may queue before they are sent anyway (a bound on memory). */
export const PIPELINE_QUEUE_MAX = 256;
/** Transaction control that needs an explicit transaction block. */
const SAVEPOINT_TEXT = /^(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT) /;
/** Results read after the sync point before giving up on finding it (the server sends one). */
const SYNC_RESULTS_MAX = 4;

export type { PgResult } from './libpq';

export interface PgCall {
  name: string;
  text: string;
  values: Array<string | null>;
}

/** The connection's current result is good, or it throws (PgDb's check: a PgError naming text). */
export type ResultCheck = (text: string) => void;

/** A queued statement's RunInfo: reading it sends the queue first. */
class QueuedRun implements RunInfo {
  done: RunInfo | null = null;
  constructor(private readonly send: () => void) {}
  private result(): RunInfo {
    if (this.done === null) this.send();
    if (this.done === null) throw new Error('metadata SQL: a queued statement was sent without its result');
    return this.done;
  }
  get changes(): number {
    return this.result().changes;
  }
  get lastInsertRowid(): number | bigint {
    return this.result().lastInsertRowid;
  }
}

/** What run() gives: the rows changed, and the first column of the first row RETURNING gave (SQLite's lastInsertRowid). */
export function runInfoOf(pq: PgResult): RunInfo {
  const changes = Number(pq.cmdTuples() || 0);
  const lastInsertRowid = pq.ntuples() > 0 && !pq.getisnull(0, 0) ? BigInt(pq.getvalue(0, 0)) : 0;
  return { changes, lastInsertRowid };
}

/** What a queued read's answer is handed to (PgDb.prefetch): a copy, readable after the pipeline. */
export type ResultSink = (result: CachedResult) => void;

const READ_RUN_INFO: RunInfo = { changes: 0, lastInsertRowid: 0 };

export class PgPipeline {
  private queue: Array<{ call: PgCall; run: QueuedRun; sink: ResultSink | null }> = [];

  get pending(): number {
    return this.queue.length;
  }

  /** The first queued statement's name (is the transaction's BEGIN still unsent?). */
  firstName(): string | undefined {
    return this.queue[0]?.call.name;
  }

  /** Queue call; send runs the queue (PgDb.flush); sink gets its result, when it succeeds. */
  add(call: PgCall, send: () => void, sink: ResultSink | null = null): RunInfo {
    const run = new QueuedRun(send);
    this.queue.push({ call, run, sink });
    if (this.queue.length >= PIPELINE_QUEUE_MAX) send();
    return run;
  }

  /**
   * The queue starts with its transaction's BEGIN (nothing of it was sent yet) and holds no
   * savepoint (those need a transaction block): drop that BEGIN and say so. The queue then runs as
   * one implicit transaction up to the sync point, which commits it (PostgreSQL's extended protocol).
   */
  dropLeadingBegin(beginName: string): boolean {
    if (this.queue.length < 2 || this.queue[0].call.name !== beginName) return false;
    if (this.queue.some((q) => SAVEPOINT_TEXT.test(q.call.text))) return false;
    this.queue.shift();
    return true;
  }

  /** Forget the queue (its transaction rolls back: what it held never has to run). */
  drop(): void {
    this.queue = [];
  }

  /**
   * Send the queue and last (if any) in one pipeline and read every result; last's is returned.
   * The first failure is thrown once the pipeline is read to its end (the connection is usable).
   */
  send(pq: LibpqConnection, check: ResultCheck, last: PgCall | null): PgResult | null {
    const queue = this.queue;
    this.queue = [];
    const calls = last === null ? queue.map((q) => q.call) : [...queue.map((q) => q.call), last];
    if (!pq.enterPipelineMode()) throw new Error(`metadata SQL: libpq refused pipeline mode: ${pq.errorMessage()}`);
    let failure: unknown = null;
    let result: PgResult | null = null;
    try {
      for (const c of calls)
        if (!pq.sendQueryPrepared(c.name, c.values))
          throw new Error(`metadata SQL: sending a statement failed: ${pq.errorMessage()}`);
      if (!pq.pipelineSync()) throw new Error(`metadata SQL: sending the pipeline failed: ${pq.errorMessage()}`);
      for (let i = 0; i < calls.length; i++) {
        if (!pq.getResult()) throw new Error(`metadata SQL: no result for a pipelined statement: ${pq.errorMessage()}`);
        try {
          check(calls[i].text);
          if (i < queue.length) {
            const sink = queue[i].sink;
            // A read queued for its rows (no RunInfo of it is read: its first column need not be a number).
            queue[i].run.done = sink === null ? runInfoOf(pq) : READ_RUN_INFO;
            if (failure === null) sink?.(CachedResult.of(pq));
          } else result = CachedResult.of(pq); // copied before the pipeline reads on past it
        } catch (err) {
          failure ??= err; // the ones after it come back PGRES_PIPELINE_ABORTED
        }
        pq.getResult(); // the end of this statement's results (NULL)
      }
      // An implicit transaction (dropLeadingBegin) commits at the sync point: a failure there comes before it.
      try {
        this.readSync(pq, check);
      } catch (err) {
        failure ??= err;
      }
    } finally {
      pq.exitPipelineMode();
    }
    if (failure !== null) throw failure;
    return result;
  }

  /** Read up to the sync point; an error before it (the implicit commit's) is thrown once the sync point is read. */
  private readSync(pq: LibpqConnection, check: ResultCheck): void {
    let failure: unknown = null;
    for (let i = 0; i < SYNC_RESULTS_MAX; i++) {
      if (!pq.getResult()) continue;
      if (pq.resultStatus() === 'PGRES_PIPELINE_SYNC') {
        if (failure !== null) throw failure;
        return;
      }
      try {
        check("COMMIT (at the pipeline's sync point)");
      } catch (err) {
        failure ??= err;
      }
    }
    throw failure ?? new Error(`metadata SQL: the pipeline's sync point did not come back: ${pq.errorMessage()}`);
  }
}
