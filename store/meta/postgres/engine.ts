// The PostgreSQL engine of the metadata interface (store/meta/sql-engine.ts, DESIGN §9): one libpq
// connection, synchronous (the store's metadata calls are synchronous, DESIGN §9; the measurement
// that chose libpq over node-postgres: docs/postgres-driver.md). A synchronous call holds the
// thread for one round trip to the server.
//
// Values go as text and come back as text, decoded by column type: integers (int2/4/8, and the
// numeric of sum()) as BigInt, as better-sqlite3's safe integers give them; bytea as Buffer; NULL as
// null. Statements are prepared on the server once per text (the surveys prepare per
// call). Transactions nest as savepoints, as better-sqlite3's do. Inside a transaction, statements
// whose results are not read yet wait and go together with the next one that is (pipeline.ts).
// The lease holder's transactions are answered once sent; their replies are read as they come
// (replies.ts), and a failure among them is a crash of the metadata (PgDb.crash, DESIGN §9).
import { Db, EngineCaps, RunInfo, SqlParam, SqlStatement } from '../sql-engine';
import { PgText, toPgPlaceholders } from './placeholders';
import { LibpqConnection } from './libpq';
import { PgCall, PgPipeline, PgResult, runInfoOf } from './pipeline';
import { PgReplies, RepliesLostError } from './replies';
import { PgRowCache } from './row-cache';
import { Decoder, decoderOf } from './decode';
import { redactedUrl } from './target';
import { CachedResult } from './result';
import { NEXT_INO_SQL } from './schema';
import { FENCED_SQLSTATE, LeaseLostError } from './fence';
import { CommitSpans } from './instance';
import { Outage, Reconnection, ReconnectSchedule } from './reconnect';
import { ChunkfsError, assert } from '../../../src/errors';
import { POSTGRES_SCHEMA } from './schema';

/** A server: each transaction a round trip, rows kept by operation (row-cache.ts), intents as rows, a lease. */
const POSTGRES_CAPS: EngineCaps = {
  transactionsCostRoundTrips: true,
  cachesKeyedReads: true,
  intentLogInFile: false,
  leases: true,
  answersOnceSent: true,
};
/** The next free inode number (PgDb.newIno): above every number in use or ever deleted. */
const NEXT_INO_READ_SQL = `SELECT ${NEXT_INO_SQL} AS next`;

/** Distinct statement texts one connection prepares (a bound: texts are the code's own). */
const PREPARED_TEXTS_MAX = 4096;
/** Savepoints one transaction may nest. */
const TX_DEPTH_MAX = 64;
/** While settle waits, what has arrived is read this often (a connection the server closed is found). */
const SETTLE_POLL_MS = 500;
/** A follower's lost listening connection is dialled again this often (listen.ts). */
export const RECONNECT_INTERVAL_MS = 1000;
/** Who hears of a reconnection (PgDb.onReconnect: the store). */
const RECONNECT_LISTENERS_MAX = 4;
/** Who hears of the lease's loss (PgDb.onFence). */
const FENCE_LISTENERS_MAX = 4;
/** libpq's PQTRANS_IDLE: no transaction open on the server. */
const PQTRANS_IDLE = 0;
/** libpq's PQTRANS_UNKNOWN: the connection is bad. */
const PQTRANS_UNKNOWN = 4;
/** SQLSTATE connection_failure (class 08). */
const SQLSTATE_CONNECTION_FAILURE = '08006';
/**
 * SQLSTATE classes of a connection that is gone: 08 (connection exception) and 57P (the server shut
 * down, crashed or terminated the session). libpq's own errors (the server closed the connection)
 * carry none. libpq may not report its transaction status UNKNOWN yet at the first such failure.
 */
const CONNECTION_GONE_SQLSTATE = /^(08|57P)/;
/**
 * Each transaction answered early carries this step (DESIGN §9 "PostgreSQL round trips"): it checks
 * that the session's count of such transactions is the one before it, and sets its own. The setting
 * is rolled back with a transaction that fails, so every later one fails too (current_setting of a
 * name never set raises): after a failure the server holds a prefix of what was answered.
 */
const CHAIN_STEP_SQL =
  "SELECT CASE WHEN coalesce(current_setting('chunkfs.pipeline_step', true), '') = $1 " +
  "THEN set_config('chunkfs.pipeline_step', $2, false) " +
  "ELSE current_setting('chunkfs.pipeline_broken_before_step_' || $2) END";
/** An inode's whole row (PgDb.inodeRow): what the row cache keeps of it. */
const WHOLE_INODE_SQL = 'SELECT * FROM inodes WHERE ino = ?';
/**
 * Writes of the tables the row cache keeps (row-cache.ts), refused outside an operation that follows
 * them (PgDb.following). Only a guard, read once per statement text: the cache itself never reads SQL.
 */
const KEPT_TABLE_WRITE = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(inodes|xattrs|dirents|chunks)\b/i;
/** A statement that only reads, sent at once behind unread transactions (others wait for them: PgDb.execPrepared). */
const READ_ONLY_TEXT = /^\s*SELECT\b/i;

/** A failed statement, naming the SQL, the server's message and SQLSTATE (e.g. 23505: unique violation). */
/** Words of a statement named in an error: its kind and table ("INSERT INTO inodes"), not its text. */
const STATEMENT_HEAD_WORDS = 3;

/**
 * A statement the metadata database refused or could not run, said in words for a log line (DESIGN §7
 * logs: no stack, no internal names): the server's message and SQLSTATE, and the kind of
 * statement. The whole text stays in sql (tests, -o debug stacks).
 */
export class PgError extends ChunkfsError {
  constructor(
    readonly sql: string,
    message: string,
    readonly sqlState: string,
  ) {
    const head = sql
      .trim()
      .split(/[\s(]+/)
      .slice(0, STATEMENT_HEAD_WORDS)
      .join(' ');
    super(
      `metadata database (PostgreSQL): ${message
        .replace(/^\s*ERROR:\s*/, '')
        .replace(/\s+/g, ' ')
        .trim()} ` + `(SQLSTATE ${sqlState}${head === '' ? '' : `; statement ${head}`})`,
    );
    this.name = 'MetadataError';
  }
}

function encode(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint' || typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (v instanceof Uint8Array) return `\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`;
  throw new TypeError(`metadata SQL: cannot bind a ${typeof v}`);
}

export class PgStatement implements SqlStatement {
  private rawRows = false;
  private decoders: Decoder[] | null = null;
  private columns: string[] = [];

  constructor(
    private readonly db: PgDb,
    private readonly name: string,
    private readonly sql: PgText,
  ) {}

  raw(toggle = true): this {
    this.rawRows = toggle;
    return this;
  }

  private bind(params: unknown[]): Array<string | null> {
    if (this.sql.names.length > 0) {
      const o = params[0] as Record<string, SqlParam> | undefined;
      if (o === undefined || typeof o !== 'object')
        throw new TypeError(`metadata SQL: named parameters expected in: ${this.sql.text.slice(0, 200)}`);
      return this.sql.names.map((n) => {
        if (!(n in o)) throw new TypeError(`metadata SQL: no value for @${n}`);
        return encode(o[n]);
      });
    }
    if (params.length !== this.sql.positional)
      throw new RangeError(
        `metadata SQL: ${params.length} values for ${this.sql.positional} placeholders in: ${this.sql.text.slice(0, 200)}`,
      );
    return params.map(encode);
  }

  private execute(params: unknown[]): PgResult {
    return this.db.execPrepared(this.name, this.sql.text, this.bind(params));
  }

  /** The server's answer as it is (the row cache copies what it keeps: PgDb.inodeRow). */
  result(params: unknown[]): PgResult {
    return this.execute(params);
  }

  /** This statement with params, as a call to queue (PgDb.prefetchInode, along). */
  call(params: unknown[]): PgCall {
    return { name: this.name, text: this.sql.text, values: this.bind(params) };
  }

  private rows(pq: PgResult): unknown[] {
    const n = pq.ntuples();
    if (n === 0) return [];
    const nf = pq.nfields();
    if (this.decoders === null) {
      this.decoders = Array.from({ length: nf }, (_, c) => decoderOf(pq.ftype(c)));
      this.columns = Array.from({ length: nf }, (_, c) => pq.fname(c));
    }
    const out: unknown[] = new Array(n);
    for (let r = 0; r < n; r++) {
      if (this.rawRows) {
        const row: unknown[] = new Array(nf);
        for (let c = 0; c < nf; c++) row[c] = pq.getisnull(r, c) ? null : this.decoders[c](pq.getvalue(r, c));
        out[r] = row;
      } else {
        const row: Record<string, unknown> = {};
        for (let c = 0; c < nf; c++)
          row[this.columns[c]] = pq.getisnull(r, c) ? null : this.decoders[c](pq.getvalue(r, c));
        out[r] = row;
      }
    }
    return out;
  }

  run(...params: unknown[]): RunInfo {
    // In a transaction it waits for the next statement whose result is read (pipeline.ts).
    if (this.db.inTransaction)
      return this.db.enqueue({ name: this.name, text: this.sql.text, values: this.bind(params) });
    this.db.refuseIfFenced();
    const info = runInfoOf(this.execute(params));
    this.db.noteWrite();
    return info;
  }
  get(...params: unknown[]): unknown {
    return this.rows(this.execute(params))[0];
  }
  /** get, handing the server's answer to keep first (the row cache keeps it as another read: namespace-ops.ts). */
  getKeeping(keep: (r: PgResult) => void, ...params: unknown[]): unknown {
    const pq = this.execute(params);
    keep(pq);
    return this.rows(pq)[0];
  }
  all(...params: unknown[]): unknown[] {
    return this.rows(this.execute(params));
  }
  iterate(...params: unknown[]): IterableIterator<unknown> {
    return this.all(...params)[Symbol.iterator]();
  }
}

export class PgDb implements Db {
  readonly engine = 'postgres' as const;
  readonly schema = POSTGRES_SCHEMA;
  readonly caps = POSTGRES_CAPS;
  /** Statement text -> its server-side name and parameter count (prepared again on a new connection). */
  private readonly prepared = new Map<string, { name: string; params: number }>();
  private depth = 0;
  /**
   * The open transaction's BEGIN waits for its first write (while rows are trusted: this connection
   * is the only writer, so a read before it sees what it would see inside): a transaction that only
   * reads sends no BEGIN and no COMMIT (round trips).
   */
  private beginDeferred = false;
  /** Rows this connection read, trusted while it holds the store's lease (row-cache.ts; off until trustRows). */
  readonly rowCache = new PgRowCache();
  /** Statement texts that write a table the row cache keeps (refuseUnfollowed). */
  private readonly keptWrites = new Set<string>();
  /** Operations that follow their writes in the row cache, running now (following). */
  private followingDepth = 0;
  /** The read of an inode's whole row (inodeRow, prefetchInode); prepared on first use. */
  private wholeInode: PgStatement | null = null;
  /** Statements of the open transaction that wait for the next one whose result is read. */
  private readonly pipeline = new PgPipeline();
  /** The connection failed (server restart, network): dialled again on a timer (reconnect.ts). */
  private broken = false;
  /** close() ran: the connection is finished and nothing more is sent on it. */
  private closedFlag = false;
  /** When and why it was found broken (status; the reconnect's own record once it tries). */
  private brokenAtMs = 0;
  private brokenBecause = '';
  private readonly reconnect = new ReconnectSchedule((tries, downMs) => this.redial(tries, downMs));
  /** Reconnections that worked since open (`chunkfs status`: meta_reconnects). */
  reconnects = 0;
  /**
   * Crashes of the metadata since open (`chunkfs status`: meta_crashes): a failure after operations
   * were answered before their replies (DESIGN §9 "PostgreSQL round trips").
   */
  metaCrashes = 0;
  /** Why the connection's answered operations were lost (told with its reconnection); null: none. */
  private crashedBecause: string | null = null;
  /** Replies of this connection not read yet (answered transactions, and what is read behind them). */
  private replies: PgReplies;
  /** Transactions answered early on this connection (CHAIN_STEP_SQL's count). */
  private chainSteps = 0;
  /** Answer the lease holder's transactions once sent (off: each waits for its reply, as tools do). */
  answerEarly = true;
  /** Which server instance each commit was made on, and which ones a full commit point vouched for (instance.ts). */
  readonly spans: CommitSpans;
  /** The lease holder's re-take of the lease on a new connection (lease.ts); null: no lease held. */
  private retake: (() => void) | null = null;
  private readonly reconnectListeners: Array<(r: Reconnection) => void> = [];
  /** Transactions committed (and writes outside one) since open: the commit log's mark (DESIGN §5). */
  commits = 0n;
  /** Round trips to the server since open (each statement sent alone, each pipeline): what the benchmarks count. */
  roundTrips = 0;
  /** Of those, transactions answered before their reply (DESIGN §9 "PostgreSQL round trips"): none waited for. */
  answeredTrips = 0;
  /** The next inode number newIno hands out (0: to be read), and the row cache's trust epoch it was read in. */
  private inoNext = 0;
  private inoEpoch = -1;
  /**
   * Settings of the lease holder's session (its epoch, fence.ts): set, a refused write
   * (CF001) means the lease is lost. A connection dialled after a failure takes the lease again in a
   * new epoch (retake), never the old session's.
   */
  private holderSession: string | null = null;
  /** Why this opener lost the store's lease (DESIGN §9 "Lease and fencing"); null while it has not. */
  fencedBy: string | null = null;
  /** Told once, when the lease is found lost. */
  private readonly fenceListeners: Array<(why: string) => void> = [];

  /** The connection string without a password, for messages. */
  readonly target: string;
  /**
   * url: the connection string (it never holds a password: target.ts); a second
   * connection uses it. instance: the server instance pq reached (instance.ts). dial: a new
   * connection set up as this one was (connect.ts), to replace one that failed
   * (DESIGN §9 "A broken connection"): the operation that saw the failure fails (its transaction is
   * gone with the connection), the ones while it is down too, the next ones run on the new connection.
   */
  constructor(
    private pq: LibpqConnection,
    readonly url: string,
    instance: string,
    private readonly dial: (() => { pq: LibpqConnection; instance: string }) | null = null,
  ) {
    this.target = redactedUrl(url);
    this.spans = new CommitSpans(instance);
    this.replies = this.repliesOf(pq);
  }

  private repliesOf(pq: LibpqConnection): PgReplies {
    return new PgReplies(
      pq,
      (text) => this.check(text),
      (err) => this.crash(err),
      (why) => this.lostConnection(why),
    );
  }

  /**
   * The lease holder's transaction goes once sent, its reply read later: it is the only writer and
   * knows the outcome from its own state (DESIGN §9 "PostgreSQL round trips"). Without the lease
   * (tools, mkfs, migrations) each waits for its reply.
   */
  private answersEarly(): boolean {
    return this.answerEarly && this.holderSession !== null && this.fencedBy === null && this.rowCache.trusted;
  }

  /** Transactions answered and not yet confirmed by the server (status, tests). */
  get unanswered(): number {
    return this.replies.unanswered;
  }

  /** Replies not read yet: a read now waits for them (background work waits with settle instead). */
  get repliesPending(): boolean {
    return this.replies.unread > 0;
  }

  /** Statements sent since open on this connection (the benchmarks' count). */
  get statementsSent(): number {
    return this.replies.statementsSent;
  }

  /**
   * The first half of a full commit point (commit-point.ts): every reply to what was sent is read,
   * so the server has run every transaction answered before the call.
   */
  settle(): Promise<void> {
    const replies = this.replies;
    const read = replies.whenRead();
    // What has arrived is also read on a timer while waiting (DESIGN §9 "A broken connection"): a
    // session the server ended under unread replies was found, in tests, by no 'readable' event,
    // only by a read that blocked; with no blocking reader the wait would last forever.
    const timer = setInterval(() => replies.poll(), SETTLE_POLL_MS);
    return read.finally(() => clearInterval(timer));
  }

  /**
   * Every reply to what was sent, read now (blocking): for a caller about to read the server through
   * another connection (tools, tests). Throws when one of them was a crash of the metadata.
   */
  readRepliesNow(): void {
    const crashes = this.metaCrashes;
    this.drain();
    if (this.metaCrashes !== crashes)
      throw new PgError(
        '',
        `a crash of the metadata: ${this.crashedBecause ?? 'see the log'}`,
        SQLSTATE_CONNECTION_FAILURE,
      );
  }

  /**
   * Read every reply now (blocking): a synchronous statement (exec, prepare, a write outside a
   * transaction) follows what was answered, and runs only if all of it succeeded.
   */
  private drain(): void {
    if (this.replies.unread === 0) return;
    try {
      this.replies.readAll();
    } catch (err) {
      this.lostConnection((err as Error).message);
    }
    this.usable();
  }

  /**
   * A transaction answered early failed, or the connection broke under one (DESIGN §9 "PostgreSQL
   * round trips"): a crash of the metadata. Counted once per connection; the commits answered since
   * the last full commit point count as lost (instance.ts), so a full commit point in flight fails
   * and files open now fail their next fsync. A refused epoch fences the mount (read-only, as a
   * refusal at once does: check); anything else drops the connection, which is dialled again,
   * reloading what was cached and telling the kernel to drop its caches (store.ts).
   */
  private crash(err: unknown): void {
    const because = this.countCrash(err);
    if (err instanceof LeaseLostError) return; // fenced already (check): the lease's loss reloads
    this.lostConnection(because);
  }

  /** Counts a crash of the metadata once per connection; says why it happened (the first cause). */
  private countCrash(err: unknown): string {
    if (this.crashedBecause === null) {
      this.crashedBecause = (err as Error).message.split('\n')[0];
      this.metaCrashes++;
      this.spans.crashed();
    }
    return this.crashedBecause;
  }

  /** Run a prepared statement (preparing its text on first use), after the queued ones; throws PgError. */
  execPrepared(name: string, text: string, values: Array<string | null>): PgResult {
    this.refuseUnfollowed(text);
    this.usable();
    // A write outside a transaction commits at once: only after every answered one did.
    if (this.depth === 0 && !READ_ONLY_TEXT.test(text)) this.drain();
    if (this.pipeline.pending > 0 || this.replies.unread > 0) return this.sendQueue({ name, text, values })!;
    this.roundTrips++;
    this.pq.execPrepared(name, values);
    this.check(text);
    return this.pq;
  }

  /**
   * A write of a table the row cache keeps runs only inside an operation that says what it wrote
   * (following): one that does not would leave the kept rows stale (DESIGN §9 "Fewer round trips").
   */
  private refuseUnfollowed(text: string): void {
    if (this.followingDepth === 0 && this.keptWrites.has(text) && this.rowCache.trusted)
      throw new Error(
        'metadata SQL: a write of a table the row cache keeps, outside an operation that follows it: ' +
          text.slice(0, 200),
      );
  }

  /**
   * fn writes rows the row cache keeps, and its caller tells the cache what it wrote
   * (namespace-ops.ts, file-rows.ts, data-ops.ts): its statements may run.
   */
  following<T>(fn: () => T): T {
    this.followingDepth++;
    try {
      return fn();
    } finally {
      this.followingDepth--;
    }
  }

  /**
   * ino's whole row (null: no such inode): kept by the row cache while rows are trusted (one read
   * of it answers the attributes, the file row, the size, ...), else read from the server.
   */
  inodeRow(ino: number): CachedResult | null {
    const c = this.rowCache;
    let kept = c.inode(ino);
    // A row an unread transaction carries (its prefetch): waiting for it costs less than a round trip.
    if (kept === undefined && c.trusted && this.replies.keepsReads && this.pipeline.pending === 0) {
      this.drain();
      kept = c.inode(ino);
    }
    if (kept !== undefined) return kept;
    this.wholeInode ??= this.prepare(WHOLE_INODE_SQL) as PgStatement;
    const pq = this.wholeInode.result([ino]);
    const r = pq.ntuples() === 1 ? c.rowOf(pq) : null;
    c.keepInode(ino, r);
    return r;
  }

  /** Queue a statement of this transaction (its RunInfo sends the queue when read). */
  enqueue(call: PgCall): RunInfo {
    this.refuseUnfollowed(call.text);
    // A prefetch whose answer comes after this write gets it replayed (PgRowCache.keepInodeAfter):
    // nothing is read here (a read of the socket per statement).
    this.refuseIfFenced();
    this.beginNow();
    return this.pipeline.add(call, () => {
      this.sendQueue(null);
    });
  }

  /**
   * While the lease is held this connection is the only writer (DESIGN §9): the next free number is
   * read once per lease (one round trip), then counted here, so an INSERT needs no RETURNING read.
   * Every inode INSERT goes through here while it answers (namespace-ops.ts, file-rows.ts): a number the
   * server chose meanwhile could be one handed out later. Without the lease: null (NEXT_INO_SQL).
   */
  newIno(directory: boolean): number | null {
    if (!this.rowCache.trusted) return null;
    if (this.inoNext === 0 || this.inoEpoch !== this.rowCache.epoch) {
      const r = this.prepare(NEXT_INO_READ_SQL).get() as { next: bigint };
      // Never below a number handed out already: a server crash may have lost its row (DESIGN §9).
      this.inoNext = Math.max(this.inoNext, Number(r.next));
      this.inoEpoch = this.rowCache.epoch;
    }
    const ino = this.inoNext++;
    // A number never used: no entries (a directory), no xattrs yet.
    if (directory) this.rowCache.names.newDirectory(String(ino));
    this.rowCache.newInode(ino);
    return ino;
  }

  /**
   * In a transaction, while rows are trusted: ino's whole row goes with the transaction's next round
   * trip (its COMMIT) and is kept, with the writes followed after it replayed on it (PgRowCache.keepInodeAfter).
   */
  prefetchInode(ino: number): void {
    if (this.depth === 0 || !this.rowCache.trusted) return;
    this.wholeInode ??= this.prepare(WHOLE_INODE_SQL) as PgStatement;
    const at = this.rowCache.mark();
    this.pipeline.add(
      this.wholeInode.call([ino]),
      () => {
        this.sendQueue(null);
      },
      (r: PgResult) => {
        this.rowCache.keepInodeAfter(ino, r, at);
      },
    );
  }

  /**
   * stmt's read goes with the next statement sent (the same round trip), in a transaction or not;
   * sink reads its answer when it succeeds (during the call) (a directory listed along with a lookup that missed).
   */
  along(stmt: SqlStatement, params: unknown[], sink: (r: PgResult) => void): void {
    assert(stmt instanceof PgStatement, 'a statement of this connection');
    this.pipeline.add(
      stmt.call(params),
      () => {
        this.sendQueue(null);
      },
      sink,
    );
  }

  /**
   * Trust cached rows until untilMs (lease.ts: while this opener holds the lease it is
   * the only writer); 0 drops them.
   */
  trustRows(untilMs: number): void {
    this.rowCache.trustUntil(untilMs);
  }

  /**
   * The session writes as the lease holder: sql (its epoch, fence.ts) runs now and on
   * every connection dialled again.
   */
  holdLease(sql: string): void {
    this.exec(sql);
    this.holderSession = sql;
  }

  /**
   * The lease is lost (DESIGN §9 "Lease and fencing"): nothing cached is trusted, every later write
   * is refused here (the database refuses it too), and the listeners hear why, once.
   */
  fence(why: string): void {
    this.trustRows(0);
    this.rowCache.clear();
    this.inoNext = 0;
    if (this.fencedBy !== null) return;
    this.fencedBy = why;
    for (const fn of this.fenceListeners) fn(why);
  }

  /** One trivial statement: a connection the server dropped is found so, and dialled again. */
  probe(): void {
    if (this.broken || this.depth > 0) return;
    try {
      this.exec('SELECT 1');
    } catch {
      /* found broken: dialled again (reconnect.ts) */
    }
  }

  /** retake: the lease taken again on a new connection, or the opener fenced (lease.ts). */
  onRedialled(retake: () => void): void {
    this.retake = retake;
  }

  /** fn hears of each reconnection that worked (bounded: the store listens). */
  onReconnect(fn: (r: Reconnection) => void): void {
    assert(this.reconnectListeners.length < RECONNECT_LISTENERS_MAX, 'listeners to reconnections are the store');
    this.reconnectListeners.push(fn);
  }

  /** fn hears why, when the lease is found lost (bounded: the lease and the store listen). */
  onFence(fn: (why: string) => void): void {
    assert(
      this.fenceListeners.length < FENCE_LISTENERS_MAX,
      "listeners to the lease's loss are the lease's and the store's",
    );
    this.fenceListeners.push(fn);
  }

  /** A write of an opener that lost the lease: refused before it is sent. */
  refuseIfFenced(): void {
    if (this.fencedBy !== null) throw new LeaseLostError(this.target, this.fencedBy);
  }

  /**
   * Send the queued statements and last in one round trip; last's result. answered: the caller does
   * not wait for the reply (an operation answered early, DESIGN §9): null.
   */
  private sendQueue(last: PgCall | null, answered = false): PgResult | null {
    this.usable();
    this.roundTrips++;
    if (answered) this.answeredTrips++;
    try {
      const result = this.pipeline.send(this.replies, last, answered);
      // A crash found while reading up to last: its answer may reflect a state that no longer is.
      this.usable();
      return result;
    } catch (err) {
      if (err instanceof PgError || err instanceof LeaseLostError) throw err;
      if (this.fencedBy !== null) throw new LeaseLostError(this.target, this.fencedBy); // found with a reply
      if (!this.broken && this.pq.transactionStatus() !== PQTRANS_UNKNOWN) throw err;
      this.lostConnection((err as Error).message);
      throw new PgError(
        last?.text ?? '',
        `the connection to ${this.target} was lost: ${(err as Error).message}`,
        SQLSTATE_CONNECTION_FAILURE,
      );
    }
  }

  /** A transaction-control statement (BEGIN, COMMIT, SAVEPOINT ...), prepared once, as a call. */
  private control(text: string): PgCall {
    return { name: this.prepareText(text).name, text, values: [] };
  }

  private check(text: string): void {
    const status = this.pq.resultStatus();
    if (status === 'PGRES_TUPLES_OK' || status === 'PGRES_COMMAND_OK') return;
    const fields = this.pq.resultErrorFields() as { sqlState?: string } | undefined;
    const state = fields?.sqlState ?? '';
    const lost =
      this.pq.transactionStatus() === PQTRANS_UNKNOWN || state === '' || CONNECTION_GONE_SQLSTATE.test(state);
    if (lost) this.lostConnection(this.pq.errorMessage() || this.pq.resultErrorMessage() || status);
    // A session that never held the lease (a migration before the take) gets the server's PgError.
    if (fields?.sqlState === FENCED_SQLSTATE && this.holderSession !== null) {
      // The server's first line, without its CONTEXT.
      const why = (this.pq.resultErrorMessage() || status)
        .split('\n')[0]
        .replace(/^ERROR:\s*/, '')
        .trim();
      this.fence(why);
      throw new LeaseLostError(this.target, why);
    }
    throw new PgError(
      text,
      this.pq.resultErrorMessage() || this.pq.errorMessage() || status,
      fields?.sqlState ?? (lost ? SQLSTATE_CONNECTION_FAILURE : 'unknown'),
    );
  }

  /** The connection failed: nothing cached is trusted, and it is dialled again (reconnect.ts). */
  private lostConnection(why: string): void {
    if (!this.broken) {
      this.brokenAtMs = Date.now();
      this.brokenBecause = why;
    }
    this.broken = true;
    this.rowCache.clear();
    if (this.dial !== null) this.reconnect.broke();
  }

  /**
   * The server unreachable now: since when, why (one line), tries to dial again made; null while the
   * connection works (`chunkfs status`, DESIGN §9 "A broken connection").
   */
  outage(): Outage | null {
    if (!this.broken) return null;
    const o = this.reconnect.outage();
    const failed = this.reconnect.lastFailure ?? this.brokenBecause;
    const why = failed.startsWith(`${this.target}: `) ? failed.slice(this.target.length + 2) : failed; // named already
    return {
      sinceMs: o?.sinceMs ?? this.brokenAtMs,
      reason: why.split('\n')[0].trim() || 'the connection was lost',
      attempts: o?.tries ?? 0,
      reconnecting: this.dial !== null,
    };
  }

  /** A connection to run on, or a PgError (EIO at the mount) while it is being dialled again. */
  private usable(): void {
    // A finished libpq connection answers any call with "connection pointer is NULL": said plainly instead.
    if (this.closedFlag)
      throw new PgError('', `the connection to ${this.target} was closed with the store`, SQLSTATE_CONNECTION_FAILURE);
    if (!this.broken) return;
    const lost = (why: string): PgError =>
      new PgError('', `the connection to ${this.target} was lost; ${why}`, SQLSTATE_CONNECTION_FAILURE);
    if (this.depth > 0) throw lost('this transaction is gone with it');
    if (this.dial === null) throw lost('this connection is not dialled again');
    throw lost(this.reconnect.status());
  }

  /**
   * One try of the reconnection (reconnect.ts; DESIGN §9 "A broken connection"): a new connection
   * over the whole connection string, checked to reach this store's metadata (connect.ts), its
   * statements prepared again, the lease taken again in a new epoch (or the opener fenced), and
   * the listeners told, with whether commits since the last full commit point may be lost.
   */
  private redial(tries: number, downMs: number): void {
    const { pq, instance } = this.dial!();
    try {
      for (const [text, p] of this.prepared) {
        pq.prepare(p.name, text, p.params);
        if (pq.resultStatus() !== 'PGRES_COMMAND_OK')
          throw new Error(`preparing statements again failed: ${pq.resultErrorMessage()}`);
      }
    } catch (err) {
      finishLibpq(pq);
      throw err;
    }
    // Answered transactions still unread are lost with the old connection: a crash of the metadata,
    // counted here; not a second loss of the connection (that would dial once more).
    const why = 'the connection was dialled again';
    if (this.replies.abandon(why)) this.countCrash(new RepliesLostError(why));
    finishLibpq(this.pq);
    this.pq = pq;
    this.replies = this.repliesOf(pq);
    this.chainSteps = 0;
    const crashed = this.crashedBecause;
    this.broken = false;
    this.rowCache.clear();
    const at = this.commits; // the commits above it are this connection's
    try {
      this.retake?.();
    } catch (err) {
      if (!(err instanceof LeaseLostError)) {
        this.broken = true; // tried again with a new connection
        throw new Error(`taking the store's lease again failed: ${(err as Error).message}`);
      }
    }
    const was = this.spans.current;
    const lostCommits = this.spans.reconnected(at, instance);
    const mayHaveLost = !lostCommits
      ? null
      : crashed !== null
        ? `a crash of the metadata (${crashed}) after operations were answered`
        : `the server restarted or failed over (was ${was}, now ${instance}) ` +
          'before commits since the last fsync were flushed';
    this.crashedBecause = null;
    this.reconnects++;
    const r: Reconnection = { target: this.target, tries, downMs, mayHaveLost };
    for (const fn of this.reconnectListeners) fn(r);
  }

  /** A write outside a transaction commits at once (autocommit). */
  noteWrite(): void {
    if (this.depth === 0) this.commits++;
  }

  prepare(sql: string): SqlStatement {
    const pg = toPgPlaceholders(sql);
    return new PgStatement(this, this.prepareText(pg.text, Math.max(pg.positional, pg.names.length)).name, pg);
  }

  private prepareText(text: string, params = 0): { name: string; params: number } {
    let p = this.prepared.get(text);
    if (p === undefined) {
      if (this.prepared.size >= PREPARED_TEXTS_MAX)
        throw new Error(`metadata SQL: more than ${PREPARED_TEXTS_MAX} distinct statements`);
      p = { name: `cfs${this.prepared.size}`, params };
      this.usable();
      this.drain(); // libpq prepares outside pipeline mode
      this.roundTrips++;
      this.pq.prepare(p.name, text, p.params);
      this.check(text);
      this.prepared.set(text, p);
      if (KEPT_TABLE_WRITE.test(text)) this.keptWrites.add(text);
    }
    return p;
  }

  /** The deferred BEGIN goes first in the queue: a write (or a savepoint, a statement exec runs) comes. */
  private beginNow(): void {
    if (!this.beginDeferred) return;
    this.beginDeferred = false;
    this.pipeline.add(this.control('BEGIN'), () => {
      this.sendQueue(null);
    });
  }

  exec(text: string): void {
    this.beginNow();
    this.rowCache.clear(); // migrations, locks, ROLLBACK: no operation says what it changes
    if (this.pipeline.pending > 0) this.sendQueue(null); // in order, after what waits
    this.usable();
    this.drain(); // libpq runs a query string outside pipeline mode
    this.roundTrips++;
    this.pq.exec(text);
    this.check(text);
  }

  transaction<F extends (...args: any[]) => any>(fn: F): (...args: Parameters<F>) => ReturnType<F> {
    return (...args: Parameters<F>): ReturnType<F> => {
      if (this.depth >= TX_DEPTH_MAX) throw new Error(`metadata SQL: transactions nested deeper than ${TX_DEPTH_MAX}`);
      const savepoint = this.depth === 0 ? null : `cfs_sp${this.depth}`;
      // Queued: it goes with the transaction's first statement whose result is read (pipeline.ts);
      // while rows are trusted, BEGIN waits for the first write (beginDeferred).
      if (savepoint === null && this.rowCache.trusted && this.pipeline.pending === 0) this.beginDeferred = true;
      else this.enqueue(this.control(savepoint === null ? 'BEGIN' : `SAVEPOINT ${savepoint}`));
      this.depth++;
      let result: ReturnType<F>;
      try {
        result = fn(...args);
      } catch (err) {
        this.depth--;
        this.rollback(savepoint);
        throw err;
      }
      this.depth--;
      if (savepoint !== null) {
        this.enqueue(this.control(`RELEASE SAVEPOINT ${savepoint}`));
        return result;
      }
      if (this.beginDeferred) {
        this.beginDeferred = false;
        this.pipeline.drop(); // only reads ran (prefetches may wait: dropped, as they are only kept answers)
        return result;
      }
      const begin = this.control('BEGIN').name;
      if (this.pipeline.pending === 1 && this.pipeline.firstName() === begin) {
        this.pipeline.drop(); // nothing ran in it: nothing to send
        return result;
      }
      try {
        // Every statement of it is still queued: they go without BEGIN and COMMIT, as one implicit
        // transaction that the pipeline's sync point commits (or rolls back whole on a failure).
        const implicit = this.pipeline.dropLeadingBegin(begin);
        if (this.answersEarly()) this.sendAnswered(implicit);
        else if (implicit) this.sendQueue(null);
        else this.execPrepared(this.control('COMMIT').name, 'COMMIT', []);
      } catch (err) {
        this.rollback(null);
        throw err;
      }
      this.commits++;
      return result;
    };
  }

  /**
   * The transaction's statements go with its chain step (CHAIN_STEP_SQL) and, when BEGIN went
   * already, COMMIT; the caller is answered without waiting for the reply (DESIGN §9).
   */
  private sendAnswered(implicit: boolean): void {
    const step = this.prepareText(CHAIN_STEP_SQL, 2).name;
    const prev = this.chainSteps === 0 ? '' : String(this.chainSteps);
    const noop = (): void => undefined;
    this.pipeline.add({ name: step, text: CHAIN_STEP_SQL, values: [prev, String(this.chainSteps + 1)] }, noop);
    if (!implicit) this.pipeline.add(this.control('COMMIT'), noop);
    this.sendQueue(null, true);
    this.chainSteps++;
  }

  private rollback(savepoint: string | null): void {
    this.rowCache.clear(); // its reads may have seen its own writes
    if (savepoint === null && this.beginDeferred) {
      this.beginDeferred = false;
      this.pipeline.drop(); // nothing was written: the server has nothing to roll back
      return;
    }
    if (savepoint === null && this.pipeline.firstName() === this.control('BEGIN').name) {
      this.pipeline.drop(); // BEGIN never went: the server has nothing to roll back
      return;
    }
    if (savepoint === null)
      this.pipeline.drop(); // the whole transaction goes: what waits never has to run
    else {
      try {
        this.sendQueue(null); // the outer transaction's statements must run; the failure being rolled back is the caller's
      } catch {
        /* rolled back just below */
      }
    }
    if (this.broken) return; // the server ended the transaction with the connection
    if (this.pq.transactionStatus() === PQTRANS_IDLE) return; // none is open (an implicit one rolled back whole)
    try {
      this.exec(savepoint === null ? 'ROLLBACK' : `ROLLBACK TO SAVEPOINT ${savepoint}; RELEASE SAVEPOINT ${savepoint}`);
    } catch {
      /* the connection failed: the server rolled back the whole transaction itself */
    }
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  /** Table chunkfs_schema holds the schema version (SQLite: PRAGMA user_version). */
  schemaVersion(): number {
    const exists = this.prepare("SELECT to_regclass('chunkfs_schema') IS NOT NULL AS e").get() as { e: bigint };
    if (exists.e === 0n) return 0;
    const r = this.prepare('SELECT version FROM chunkfs_schema WHERE k = 0').get() as { version: bigint } | undefined;
    return r === undefined ? 0 : Number(r.version);
  }
  setSchemaVersion(version: number): void {
    this.exec('CREATE TABLE IF NOT EXISTS chunkfs_schema(k INT PRIMARY KEY CHECK (k = 0), version BIGINT NOT NULL)');
    this.prepare(
      'INSERT INTO chunkfs_schema(k, version) VALUES (0, ?) ON CONFLICT (k) DO UPDATE SET version = excluded.version',
    ).run(Math.trunc(version));
  }

  /** The connection itself, for a caller that runs it on its own (the commit point's second connection). */
  detach(): LibpqConnection {
    return this.pq;
  }

  /** The store closed this connection: a caller still waiting (a timer) sends nothing more on it. */
  get closed(): boolean {
    return this.closedFlag;
  }

  close(): void {
    this.closedFlag = true;
    this.reconnect.stop();
    if (!this.broken)
      try {
        this.replies.readAll(); // what was answered runs before the connection ends
      } catch {
        /* lost with the connection: a crash of the metadata */
      }
    this.replies.abandon('the store was closed');
    finishLibpq(this.pq);
  }
}

/**
 * finish() closes libuv's poll handle for the socket, which lives inside the connection object: the
 * object must outlive that close (one loop turn), or a garbage collection in between frees the
 * handle under libuv (seen: "uv__finish_close: Assertion" at exit).
 */
export function finishLibpq(pq: LibpqConnection): void {
  pq.finish();
  lingering.add(pq);
  setTimeout(() => lingering.delete(pq), LINGER_MS).unref();
}

/** Finished connections kept alive until libuv has closed their handles (see PgDb.close). */
const lingering = new Set<LibpqConnection>();
const LINGER_MS = 1000;
