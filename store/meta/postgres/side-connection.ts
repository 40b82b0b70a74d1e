// The lease holder's side connection (DESIGN §9 "Lease and fencing"): lease renewals and the
// writer's look for read-only followers go on a second synchronous session, not behind the metadata
// connection's unread replies (up to UNANSWERED_TRANSACTIONS_MAX transactions answered early, any of
// which may wait on a lock another session holds): a renewal waits for its own round trip only.
//
// Fencing does not depend on it: a renewal names this take's epoch, so it extends nothing another
// opener took, and the server's trigger refuses a stale holder's writes whoever renews (fence.ts).
// It must reach the server instance the metadata connection is on (instance.ts): a renewal on
// another server (a fail-over the metadata connection has not seen yet) would vouch for a lease
// where the holder does not write. So it is dialled at first use and checked so, hung up when it
// fails or the metadata connection is dialled again (the next use dials anew), and while the
// metadata connection is broken, when no side session can be had, or when a statement failed on the
// side, the statement runs on the metadata connection, as it always did.
import type { PgDb } from './engine';
import { connectPg } from './connect';

/** After a dial that failed, the next try waits this long (uses run on the metadata connection meanwhile). */
const SIDE_DIAL_RETRY_MS = 5000;

export class PgSideConnection {
  private side: PgDb | null = null;
  private closed = false;
  /** Date.now() before which no dial is tried (one failed). */
  private dialAfterMs = 0;

  constructor(private readonly main: PgDb) {
    main.onReconnect(() => this.hangUp());
  }

  /**
   * fn on the side connection (dialled when need be), else on the metadata connection; its result or
   * error. When it fails on the side (a session killed, a network cut), the side is hung up and fn
   * runs on the metadata connection: what runs here is a read or the renewal, both harmless twice.
   */
  run<T>(fn: (db: PgDb) => T): T {
    const side = this.connection();
    if (side === null) return fn(this.main);
    try {
      return fn(side);
    } catch {
      this.hangUp(); // dialled again at the next use
      return fn(this.main);
    }
  }

  /** Whether the last use ran on a side session (tests). */
  get dialled(): boolean {
    return this.side !== null;
  }

  private connection(): PgDb | null {
    if (this.closed || this.main.outage() !== null) {
      this.hangUp();
      return null;
    }
    if (this.side !== null || Date.now() < this.dialAfterMs) return this.side;
    let side: PgDb;
    try {
      side = connectPg(this.main.url);
    } catch {
      this.dialAfterMs = Date.now() + SIDE_DIAL_RETRY_MS;
      return null; // no second session (max_connections, say): the metadata connection's round trip
    }
    if (side.spans.current !== this.main.spans.current) {
      side.close();
      return null;
    }
    this.side = side;
    return side;
  }

  private hangUp(): void {
    const side = this.side;
    this.side = null;
    side?.close();
  }

  close(): void {
    this.closed = true;
    this.hangUp();
  }
}
