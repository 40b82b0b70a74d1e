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
// The lease holder's transactions go at their end without waiting for the reply (DESIGN §9
// "PostgreSQL round trips"): the operation is answered once its statements are sent, and replies.ts
// reads the replies as they come; a queued statement's RunInfo read after that reads its reply.
import { RunInfo } from '../sql-engine';
import { PgResult } from './libpq';
import { PgReplies, SentBatch, SentStatement } from './replies';

/** Statements one transaction may queue before they are sent anyway (a bound on memory). */
export const PIPELINE_QUEUE_MAX = 256;
/** Transaction control that needs an explicit transaction block. */
const SAVEPOINT_TEXT = /^(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT) /;

export type { PgResult } from './libpq';

export interface PgCall {
  name: string;
  text: string;
  values: Array<string | null>;
}

export type { ResultCheck } from './replies';

/** A queued statement's RunInfo: reading it sends the queue first, or reads its reply when it was sent. */
class QueuedRun implements RunInfo {
  done: RunInfo | null = null;
  constructor(private wait: () => void) {}
  /** It went in a batch answered early: reading it reads that batch's replies (and throws its failure). */
  sentIn(replies: PgReplies, batch: SentBatch): void {
    this.wait = () => {
      replies.readUntil(batch);
      if (batch.failure !== null) throw batch.failure;
    };
  }
  private result(): RunInfo {
    if (this.done === null) this.wait();
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

/** What a queued read's answer is handed to (PgDb.prefetchInode, along): read during the call (copy what is kept). */
export type ResultSink = (result: PgResult) => void;

const READ_RUN_INFO: RunInfo = { changes: 0, lastInsertRowid: 0 };

/** A queued statement as sent (replies.ts): its result goes to its RunInfo, or to its sink. */
class Queued implements SentStatement {
  readonly name: string;
  readonly text: string;
  readonly values: Array<string | null>;
  readonly keeps: boolean;
  constructor(
    call: PgCall,
    readonly run: QueuedRun,
    private readonly sink: ResultSink | null,
  ) {
    this.name = call.name;
    this.text = call.text;
    this.values = call.values;
    this.keeps = sink !== null;
  }
  onResult(pq: PgResult): void {
    // A read queued for its rows (no RunInfo of it is read: its first column need not be a number).
    this.run.done = this.sink === null ? runInfoOf(pq) : READ_RUN_INFO;
    this.sink?.(pq);
  }
}

export class PgPipeline {
  private queue: Queued[] = [];

  get pending(): number {
    return this.queue.length;
  }

  /** The first queued statement's name (is the transaction's BEGIN still unsent?). */
  firstName(): string | undefined {
    return this.queue[0]?.name;
  }

  /** Queue call; send runs the queue (PgDb.flush); sink gets its result, when it succeeds. */
  add(call: PgCall, send: () => void, sink: ResultSink | null = null): RunInfo {
    const run = new QueuedRun(send);
    this.queue.push(new Queued(call, run, sink));
    if (this.queue.length >= PIPELINE_QUEUE_MAX) send();
    return run;
  }

  /**
   * The queue starts with its transaction's BEGIN (nothing of it was sent yet) and holds no
   * savepoint (those need a transaction block): drop that BEGIN and say so. The queue then runs as
   * one implicit transaction up to the sync point, which commits it (PostgreSQL's extended protocol).
   */
  dropLeadingBegin(beginName: string): boolean {
    if (this.queue.length < 2 || this.queue[0].name !== beginName) return false;
    if (this.queue.some((q) => SAVEPOINT_TEXT.test(q.text))) return false;
    this.queue.shift();
    return true;
  }

  /** Forget the queue (its transaction rolls back: what it held never has to run). */
  drop(): void {
    this.queue = [];
  }

  /**
   * Send the queue and last (if any) in one pipeline (pipelined after every batch still unread). Not
   * answered: every reply up to last's is read and last's result returned; the first failure is
   * thrown once the batch is read to its end (the connection is usable). answered: nothing is read
   * now (replies.ts reads it as its replies come); null.
   */
  send(replies: PgReplies, last: PgCall | null, answered = false): PgResult | null {
    const queue = this.queue;
    this.queue = [];
    const statements: SentStatement[] = queue;
    if (last !== null) statements.push({ ...last, onResult: null });
    const batch = replies.send(statements, answered, last !== null);
    if (answered) {
      for (const q of queue) q.run.sentIn(replies, batch);
      return null;
    }
    replies.readUntil(batch);
    if (batch.failure !== null) throw batch.failure;
    return batch.result;
  }
}
