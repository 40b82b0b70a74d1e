// The writer's side of read-only followers (DESIGN §9): the change triggers
// (change-notify.ts) fire only while a follower listens, since they cost every write
// statement time on the server. The lease holder counts the followers' listening connections
// (pg_stat_activity, by application_name) at open and every CHECK_MS, and turns the triggers on or
// off when that changes. A follower starting waits until they are on (store/follower.ts), so it
// misses nothing from then on.
import type { PgDb } from './engine';
import type { PgSideConnection } from './side-connection';
import { readLease } from './lease';
import { FOLLOWERS_SQL, announceSql } from './change-notify';

/** How often the writer looks for followers: a new follower waits at most about this long. */
export const ANNOUNCE_CHECK_MS = 1000;

export class ChangeAnnouncer {
  private timer: NodeJS.Timeout | null = null;
  private toldFailure = false;

  constructor(
    private readonly db: PgDb,
    private readonly side: PgSideConnection,
    private readonly log: (line: string) => void,
  ) {}

  start(): void {
    this.check();
    this.timer = setInterval(() => this.check(), ANNOUNCE_CHECK_MS);
    this.timer.unref();
  }

  /**
   * Followers now: the triggers on for them, off without them. The look goes on the lease's side
   * connection (side-connection.ts), so it is made under a write load too, when the metadata
   * connection always has replies unread; the switch, rare, on the metadata connection, after what
   * it sent before (a follower hears every commit after it).
   */
  check(): void {
    try {
      const r = this.side.run((db) => db.prepare(FOLLOWERS_SQL).get()) as { n: bigint; on: bigint | null };
      const want = r.n > 0n;
      this.toldFailure = false;
      if (r.on === null || (r.on === 1n) === want) return; // no triggers (never made), or as wanted
      this.db.exec(announceSql(want));
    } catch (err) {
      // The server is away (restarting): looked at again at the next check.
      if (!this.toldFailure)
        this.log(`cannot check for read-only followers on ${this.db.target}: ${(err as Error).message}`);
      this.toldFailure = true;
    }
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}

/** A follower waits at most this long for the writer to turn the triggers on (a few of its checks). */
const ANNOUNCE_WAIT_MS = 5 * ANNOUNCE_CHECK_MS;
const ANNOUNCE_POLL_MS = 50;

/**
 * A follower, listening already: resolves once the writer announces its changes, or at once when no
 * live writer holds the lease (the next one turns them on at its open, before it writes). Past
 * ANNOUNCE_WAIT_MS (a writer of a build before followers) it logs what that means and goes on.
 */
export async function awaitAnnouncing(db: PgDb, log: (line: string) => void): Promise<void> {
  for (let waitedMs = 0; waitedMs < ANNOUNCE_WAIT_MS; waitedMs += ANNOUNCE_POLL_MS) {
    if (db.closed) return; // the store closed while this waited: nothing to follow any more
    const r = db.prepare(FOLLOWERS_SQL).get() as { on: bigint | null };
    const lease = readLease(db);
    if (r.on === 1n || lease === null || lease.expiresInMs <= 0) return;
    await new Promise((resolve) => setTimeout(resolve, ANNOUNCE_POLL_MS));
  }
  if (db.closed) return;
  log(
    `the writer of ${db.target} does not announce its changes (a build before read-only followers?): this mount shows them at the next lookup or open`,
  );
}
