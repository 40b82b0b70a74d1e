// The server's replies to what the PostgreSQL engine sent in pipeline mode (DESIGN §9 "PostgreSQL
// round trips"), read in the order they were sent. A batch is statements and a sync point: one
// transaction (pipeline.ts). A batch the caller waits for is read at once, blocking, with every
// batch sent before it. A batch answered early (the operation was answered once it was sent) is read
// as its replies come: when the socket turns readable (libpq's reader, on this thread, between
// requests), or before the next batch anyone waits for. Its failure is a crash of the metadata,
// reported to onAnsweredFailure. While batches are unread the connection stays in pipeline mode;
// once every one is read it leaves it, so the synchronous calls (exec, prepare) work again.
import { LibpqConnection, PgResult } from './libpq';
import { CachedResult } from './result';

/**
 * Transactions answered before their replies came, at most, unread at once: the next one waits for
 * the oldest. A bound on what a crash of the metadata can take with it, on the memory kept for
 * them, and on what the server queues before the mount reads.
 */
export const UNANSWERED_TRANSACTIONS_MAX = 32;
/** Results read after the last statement before giving up on the sync point (the server sends one). */
const SYNC_RESULTS_MAX = 4;

/** The connection's current result is good, or it throws (PgDb's check: a PgError naming text). */
export type ResultCheck = (text: string) => void;

/** One statement sent: its prepared name, text (for errors), values; onResult sees its result when it succeeded. */
export interface SentStatement {
  name: string;
  text: string;
  values: Array<string | null>;
  onResult: ((pq: PgResult) => void) | null;
  /** A read sent for its answer to be kept (PgDb.prefetchInode, along): a later read may find it there. */
  keeps?: boolean;
}

export class SentBatch {
  /** The first failure of the batch (its transaction rolled back whole), or null. */
  failure: unknown = null;
  /** The last statement's result, copied, when the caller waits for it (keepLast). */
  result: PgResult | null = null;
  done = false;
  /** The statement whose result comes next; statements.length: the sync point. */
  next = 0;
  /** Between a statement's result and the end of its results (libpq's NULL). */
  ending = false;
  /** Empty reads while looking for the sync point. */
  syncReads = 0;
  /** Statements of it whose answers will be kept (SentStatement.keeps). */
  readonly keeps: number;

  constructor(
    readonly statements: SentStatement[],
    /** The operation was answered once it was sent: a failure is a crash of the metadata. */
    readonly answered: boolean,
    readonly keepLast: boolean,
  ) {
    let n = 0;
    for (const s of statements) if (s.keeps === true) n++;
    this.keeps = n;
  }
}

/** The connection failed while batches were unread: they are all lost (their transactions too, or some). */
export class RepliesLostError extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = 'RepliesLostError';
  }
}

export class PgReplies {
  private batches: SentBatch[] = [];
  private answeredUnread = 0;
  /** Statements of unread batches whose answers will be kept (keepsReads). */
  private keptUnread = 0;
  /** Batches answered early that failed (each a crash of the metadata, or part of one). */
  private answeredFailures = 0;
  private pipelined = false;
  private reading = false;
  private gone = false;
  private readonly waiters: Array<{ batch: SentBatch; resolve: () => void }> = [];
  /** Statements sent since open (the benchmarks' count). */
  statementsSent = 0;

  constructor(
    private readonly pq: LibpqConnection,
    private readonly check: ResultCheck,
    /** A batch answered early was read and failed: a crash of the metadata (PgDb.crash). */
    private readonly onAnsweredFailure: (err: unknown) => void,
    /** The connection failed while reading (PgDb.lostConnection). */
    private readonly onLost: (why: string) => void,
  ) {
    pq.on('readable', this.onReadable);
  }

  /** Batches sent and not read. */
  get unread(): number {
    return this.batches.length;
  }

  /** Some batch not read yet carries a read whose answer will be kept (a read missing now may find it then). */
  get keepsReads(): boolean {
    return this.keptUnread > 0;
  }

  /** Transactions answered early whose replies are not read yet. */
  get unanswered(): number {
    return this.answeredUnread;
  }

  /**
   * Send statements and a sync point. answered: the caller does not wait (the batch is read later);
   * at UNANSWERED_TRANSACTIONS_MAX the oldest are read first. Throws when the connection refused them.
   */
  send(statements: SentStatement[], answered: boolean, keepLast: boolean): SentBatch {
    if (this.gone) throw new RepliesLostError('the connection was given up');
    if (answered) while (this.answeredUnread >= UNANSWERED_TRANSACTIONS_MAX) this.readUntil(this.batches[0]);
    const failures = this.answeredFailures;
    this.readArrived();
    if (this.answeredFailures !== failures) throw new RepliesLostError('an operation answered before it failed');
    if (!this.pipelined) {
      if (!this.pq.enterPipelineMode())
        throw new Error(`metadata SQL: libpq refused pipeline mode: ${this.pq.errorMessage()}`);
      this.pipelined = true;
    }
    for (const s of statements)
      if (!this.pq.sendQueryPrepared(s.name, s.values))
        this.lose(`sending a statement failed: ${this.pq.errorMessage()}`);
    if (!this.pq.pipelineSync()) this.lose(`sending the pipeline failed: ${this.pq.errorMessage()}`);
    this.statementsSent += statements.length;
    // Listed once sent: a batch the connection refused was never answered (its caller gets the error).
    const batch = new SentBatch(statements, answered, keepLast);
    this.batches.push(batch);
    this.keptUnread += batch.keeps;
    if (answered) this.answeredUnread++;
    if (answered && !this.reading) {
      this.pq.startReader();
      this.reading = true;
    }
    return batch;
  }

  /** Read (blocking) every batch up to and including batch. */
  readUntil(batch: SentBatch): void {
    while (!batch.done && this.batches.length > 0) this.step(true);
    if (!batch.done) throw new RepliesLostError('a batch was lost with the connection');
  }

  /** Read (blocking) every batch sent; the connection leaves pipeline mode. */
  readAll(): void {
    while (this.batches.length > 0) this.step(true);
    this.leave();
  }

  /** Read what has arrived, without waiting; a failure found is told to the engine (onLost, onAnsweredFailure). */
  poll(): void {
    if (this.gone || this.batches.length === 0) return;
    try {
      this.readArrived();
    } catch {
      /* lost: told to onLost already */
    }
  }

  /** Resolves once every batch sent before the call is read (failed or not). */
  whenRead(): Promise<void> {
    const last = this.batches[this.batches.length - 1];
    if (last === undefined) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ batch: last, resolve }));
  }

  /**
   * The connection is given up (redialled or closed): every unread batch is lost; nothing more is
   * read. Says whether an answered one was among them; the engine is not told again (it is the one
   * giving the connection up: telling it would break the connection that replaces this one).
   */
  abandon(why: string): boolean {
    const answered = this.fail(why, false);
    this.gone = true;
    this.pq.removeListener('readable', this.onReadable);
    return answered;
  }

  /**
   * What has arrived is read without waiting, so a connection the server closed (a restart, a
   * terminated session) is found before anything more is answered on it: after the replies, a read
   * takes its last message and another its end.
   */
  private readArrived(): void {
    if (!this.pq.consumeInput()) this.lose(`the server closed the connection: ${this.pq.errorMessage()}`);
    while (this.batches.length > 0 && !this.pq.isBusy()) this.step(false);
    if (this.batches.length === 0 && !this.pq.consumeInput())
      this.lose(`the server closed the connection: ${this.pq.errorMessage()}`);
  }

  private readonly onReadable = (): void => {
    if (this.gone || this.batches.length === 0) return;
    if (!this.pq.consumeInput()) return this.lose(`reading replies failed: ${this.pq.errorMessage()}`);
    try {
      while (this.batches.length > 0 && !this.pq.isBusy()) this.step(false);
    } catch {
      /* lost: told to onLost already */
    }
  };

  /** One result (or the end of one) of the oldest batch; block: wait for it. */
  private step(block: boolean): void {
    const b = this.batches[0];
    if (!block && this.pq.isBusy()) return;
    const got = this.pq.getResult();
    if (b.next === b.statements.length) return this.syncPoint(b, got);
    if (b.ending) {
      if (!got) {
        b.ending = false;
        b.next++;
      } // else: a further result of the same statement (none is expected): skipped
      return;
    }
    if (!got) return this.lose(`no result for a pipelined statement: ${this.pq.errorMessage()}`);
    this.result(b);
    b.ending = true;
  }

  private result(b: SentBatch): void {
    const s = b.statements[b.next];
    if (this.pq.resultStatus() === 'PGRES_PIPELINE_ABORTED') {
      b.failure ??= new Error('metadata SQL: a statement after a failed one did not run');
      return;
    }
    try {
      this.check(s.text);
      if (b.failure !== null) return;
      s.onResult?.(this.pq);
      // Copied before the pipeline reads on past it.
      if (b.keepLast && b.next === b.statements.length - 1) b.result = CachedResult.of(this.pq);
    } catch (err) {
      b.failure ??= err; // the ones after it come back PGRES_PIPELINE_ABORTED
    }
  }

  /** An implicit transaction commits at the sync point: a failure there comes before it. */
  private syncPoint(b: SentBatch, got: boolean): void {
    if (!got) {
      if (++b.syncReads > SYNC_RESULTS_MAX)
        this.lose(`the pipeline's sync point did not come back: ${this.pq.errorMessage()}`);
      return;
    }
    if (this.pq.resultStatus() !== 'PGRES_PIPELINE_SYNC') {
      try {
        this.check("COMMIT (at the pipeline's sync point)");
      } catch (err) {
        b.failure ??= err;
      }
      return;
    }
    this.batches.shift();
    this.keptUnread -= b.keeps;
    this.finished(b);
    if (this.batches.length === 0) this.leave();
  }

  private finished(b: SentBatch): void {
    b.done = true;
    if (b.answered) this.answeredUnread--;
    for (let i = this.waiters.length - 1; i >= 0; i--)
      if (this.waiters[i].batch === b) {
        this.waiters[i].resolve();
        this.waiters.splice(i, 1);
      }
    if (b.answered && b.failure !== null) {
      this.answeredFailures++;
      this.onAnsweredFailure(b.failure);
    }
  }

  /** Out of pipeline mode once nothing is unread (exec and prepare need it); no reader meanwhile. */
  private leave(): void {
    if (this.reading) {
      this.pq.stopReader();
      this.reading = false;
    }
    if (this.pipelined && this.batches.length === 0 && this.pq.exitPipelineMode()) this.pipelined = false;
  }

  /** The connection failed: every unread batch failed; the engine hears it once. */
  private lose(why: string): never {
    this.fail(why);
    this.onLost(why);
    throw new RepliesLostError(why);
  }

  private fail(why: string, tell = true): boolean {
    const batches = this.batches;
    this.batches = [];
    this.keptUnread = 0;
    for (const b of batches) {
      b.failure ??= new RepliesLostError(why);
      b.done = true;
      if (b.answered) this.answeredUnread--;
    }
    for (const w of this.waiters.splice(0)) w.resolve();
    if (this.reading) {
      this.pq.stopReader();
      this.reading = false;
    }
    const answered = batches.some((b) => b.answered);
    if (answered) {
      this.answeredFailures++;
      if (tell) this.onAnsweredFailure(new RepliesLostError(why));
    }
    return answered;
  }
}
