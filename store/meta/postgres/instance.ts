// Which server instance each commit of the metadata session was made on (DESIGN §9 "A broken
// connection"). Commits run with synchronous_commit off (connect.ts): one returns once it
// is in the server's WAL buffers, and a full commit point (commit-point.ts) makes it
// durable by one synchronous commit on the SAME server instance, later in the same WAL. A server that
// crashed (immediate stop, kill -9, a machine gone) and started again, or a standby promoted in its
// place, is another instance: commits made on the old one and not yet flushed may be gone, and a
// synchronous commit on the new one says nothing of them. So every connection asks which instance
// it reached (the postmaster's start time: a restart or another server changes it), the engine
// records from which commit on it was used (a span), and a full commit point counts only for the
// spans made on its own instance.
import type { LibpqConnection } from './libpq';

/** The server instance a session reached: its postmaster's start, to the microsecond, and its port. */
export const SERVER_INSTANCE_SQL =
  "SELECT pg_postmaster_start_time()::text || ' port ' || current_setting('port') AS instance";

/** The instance a just-connected libpq connection reached (one round trip); throws the server's message. */
export function serverInstanceOf(pq: LibpqConnection): string {
  pq.exec(SERVER_INSTANCE_SQL);
  if (pq.resultStatus() !== 'PGRES_TUPLES_OK' || pq.ntuples() !== 1)
    throw new Error(`reading the server instance failed: ${pq.resultErrorMessage() || pq.errorMessage()}`);
  return pq.getvalue(0, 0);
}

/** The end of the current span (no commit count reaches it). */
const OPEN_END = 1n << 126n;
/** Marks the instance of commits a crash of the metadata may have lost (CommitSpans.crashed). */
const CRASHED_SUFFIX = ' (before a crash of the metadata)';
/** Spans kept at most: one per reconnection since the last full commit point (each one is a reconnection). */
const SPANS_MAX = 1024;

/** A full commit point that cannot vouch for every commit before it (DESIGN §9 "A broken connection"). */
export class CommitsUnconfirmedError extends Error {
  constructor(
    readonly target: string,
    readonly lost: boolean,
    detail: string,
  ) {
    super(
      lost
        ? `${target}: the metadata server restarted or failed over (${detail}) before changes made since the ` +
            'last fsync were flushed: they may be lost, as after a power loss'
        : `${target}: the metadata server changed (${detail}) and this mount has not reconnected yet; try again`,
    );
    this.name = 'MetadataError';
  }
}

interface Span {
  /** The session's commit count when this instance's connection began: its commits are those above it. */
  from: bigint;
  instance: string;
}

export class CommitSpans {
  /** Commits up to this count are durable (a full commit point on their instance covered them). */
  private durable = 0n;
  private spans: Span[];

  constructor(instance: string) {
    this.spans = [{ from: 0n, instance }];
  }

  /** The instance the session's connection is on now. */
  get current(): string {
    return this.spans[this.spans.length - 1].instance;
  }

  /**
   * A new connection from commit count `at` on, to instance. Returns whether commits may be lost:
   * some not known durable were made on another instance. How the old connection ended says nothing
   * (libpq reports an orderly shutdown, a terminated session and a crash alike: the server closed
   * the connection), so a restart in any mode counts as a crash; a terminated session, or a network
   * cut, finds the same instance and loses nothing.
   */
  reconnected(at: bigint, instance: string): boolean {
    if (at <= this.durable) {
      this.spans = [{ from: at, instance }]; // nothing undurable: no older span matters
      return false;
    }
    if (this.current !== instance) {
      if (this.spans.length >= SPANS_MAX) throw new Error(`more than ${SPANS_MAX} reconnections without a full commit`);
      this.spans.push({ from: at, instance });
    }
    return this.spans.some((s) => s.instance !== instance);
  }

  /**
   * A crash of the metadata (a transaction answered before its reply failed, or its connection broke:
   * engine.ts): the commits not known durable may be lost as on another instance, so the next
   * connection, even to the same server, reports them lost, and no commit point vouches for them.
   */
  crashed(): void {
    this.spans = this.spans.map((s) =>
      s.instance.endsWith(CRASHED_SUFFIX) ? s : { from: s.from, instance: `${s.instance}${CRASHED_SUFFIX}` },
    );
  }

  /**
   * A full commit point on instance covered every commit up to upTo: they are durable, but for those
   * made on another instance, which may be lost; returns what names that instance (null: none).
   * Throws CommitsUnconfirmedError when the session has not yet found its server gone (it is still
   * on another instance): a later commit point decides.
   */
  confirm(upTo: bigint, instance: string, target: string): string | null {
    const foreign = this.spans.filter((s, i) => s.instance !== instance && s.from < upTo && this.end(i) > this.durable);
    if (foreign.length > 0 && this.current !== instance)
      throw new CommitsUnconfirmedError(target, false, `now ${instance}, the session's ${this.current}`);
    if (upTo > this.durable) this.durable = upTo;
    const last = this.spans.length - 1;
    this.spans = this.spans.filter((_, i) => i === last || this.end(i) > this.durable);
    return foreign.length > 0 ? `was ${foreign[0].instance}, now ${instance}` : null;
  }

  /** The commit count where span i ends (the next span's start; the current one: none). */
  private end(i: number): bigint {
    return i + 1 < this.spans.length ? this.spans[i + 1].from : OPEN_END;
  }
}
