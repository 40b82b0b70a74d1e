// The store's lease on PostgreSQL (DESIGN §9): one read-write opener at a time
// for a store whose metadata outlives its machine. On SQLite the store lock file does this (one
// machine holds meta.db); on PostgreSQL another machine that sees the same disk directories could
// open the store too, so the database itself holds a lease row: who holds it (host, pid, what for),
// a heartbeat and an expiry, both in the server's clock (no clock of two machines is compared). A
// read-write open takes the lease when nobody holds it or the holder's has expired (it died: kill
// -9, machine gone), renews it every LEASE_RENEW_MS, and gives it back at close. A second opener is
// refused with a message naming the holder. Each take gets a new epoch, which the database checks in
// every write of the holder (fence.ts): a holder that lost the lease commits nothing.
import * as os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { PgDb } from './engine';
import { PgSideConnection } from './side-connection';
import {
  EPOCH_SQL,
  FENCE_INSTALLED_SQL,
  FENCE_SQL,
  HAS_EPOCH_SQL,
  LeaseLostError,
  LeaseUnconfirmedError,
  NEXT_EPOCH_SQL,
  TAKE_LOCKS_SQL,
  epochSettingSql,
} from './fence';

/** A holder that stops renewing loses the lease after this long (fail-over waits at most this). */
export const LEASE_MS = 15_000;
/** Renewals per lease period: a renewal delayed by two periods' worth of a busy thread still keeps it. */
const LEASE_RENEWALS_PER_PERIOD = 3;

export const LEASE_TABLE_SQL = `CREATE TABLE IF NOT EXISTS chunkfs_lease(k INT PRIMARY KEY CHECK (k = 0),
  holder TEXT NOT NULL, host TEXT NOT NULL, pid BIGINT NOT NULL, note TEXT NOT NULL,
  acquired_at TIMESTAMPTZ NOT NULL, heartbeat_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL,
  epoch BIGINT NOT NULL DEFAULT 0);
  ${EPOCH_SQL}`;

/** The lease as `chunkfs status` shows it. */
export interface LeaseInfo {
  holder: string;
  /** Grows at every take (fence.ts); 0 in a row an older build wrote. */
  epoch: number;
  host: string;
  pid: number;
  note: string;
  /** Since the last heartbeat, and until expiry (negative: expired), by the server's clock. */
  heartbeatAgeMs: number;
  expiresInMs: number;
}

/** Another opener holds the lease: names it, and when it expires. */
export class LeaseHeldError extends Error {
  constructor(
    readonly target: string,
    readonly lease: LeaseInfo,
  ) {
    super(
      `${target}: the store is open read-write by ${lease.host} pid ${lease.pid} (${lease.note || 'no note'}), ` +
        `lease renewed ${Math.round(lease.heartbeatAgeMs / 1000)} s ago, expires in ${Math.max(0, Math.round(lease.expiresInMs / 1000))} s ` +
        'unless renewed; stop it there, or mount read-only (-o ro), or wait for the lease to expire if that machine is gone',
    );
    this.name = 'LeaseHeldError';
  }
}

/** The heartbeat: this take's row extended from the server's now (it extends nothing another opener took). */
const RENEW_SQL = `UPDATE chunkfs_lease SET heartbeat_at = now(), expires_at = now() + CAST(? AS interval)
  WHERE k = 0 AND holder = ? AND epoch = ?`;

const SELECT_SQL = `SELECT holder, host, pid, note, epoch,
  CAST(1000 * extract(epoch FROM now() - heartbeat_at) AS BIGINT) AS age_ms,
  CAST(1000 * extract(epoch FROM expires_at - now()) AS BIGINT) AS left_ms FROM chunkfs_lease WHERE k = 0`;

function infoOf(r: Record<string, unknown>): LeaseInfo {
  return {
    holder: String(r.holder),
    epoch: Number(r.epoch),
    host: String(r.host),
    pid: Number(r.pid),
    note: String(r.note),
    heartbeatAgeMs: Number(r.age_ms),
    expiresInMs: Number(r.left_ms),
  };
}

/** The lease row, or null when nobody holds one (read-only: status). */
export function readLease(db: PgDb): LeaseInfo | null {
  const exists = db
    .prepare(`SELECT to_regclass('chunkfs_lease') IS NOT NULL AS e, ${HAS_EPOCH_SQL} AS epoch`)
    .get() as { e: bigint; epoch: bigint };
  if (exists.e === 0n) return null;
  // A lease table of a build before fencing (read-only openers add nothing to it).
  if (exists.epoch === 0n) return readOldLease(db);
  const r = db.prepare(SELECT_SQL).get() as Record<string, unknown> | undefined;
  return r === undefined ? null : infoOf(r);
}

function readOldLease(db: PgDb): LeaseInfo | null {
  const r = db.prepare(SELECT_SQL.replace('note, epoch,', 'note, 0 AS epoch,')).get() as
    | Record<string, unknown>
    | undefined;
  return r === undefined ? null : infoOf(r);
}

/**
 * The holder ran on this machine and its process is gone (kill -9, crash): its lease need not be
 * waited out, as the store lock file's stale holder is not (store/store-lock.ts). This process
 * itself is such a holder too: it abandoned an open without closing it (the store lock refuses two
 * read-write opens of a store in one process). Another machine's holder is judged by expiry alone.
 */
function deadOnThisHost(lease: LeaseInfo): boolean {
  if (lease.host !== os.hostname()) return false;
  if (lease.pid === process.pid) return true;
  try {
    process.kill(lease.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * A shard write checks the lease itself when the last renewal that succeeded was sent longer ago
 * than this share of the lease: the holder stops acting on it before the server can expire it
 * (a renewal's expiry runs from the server's now, after it was sent). Renewals run every third.
 */
const SHARD_WRITE_LEASE_SHARE = 2 / 3;

export class PgLease {
  /** This opener's id: unique across machines and restarts. */
  readonly holder = `${os.hostname()}:${process.pid}:${Date.now().toString(36)}:${Math.random().toString(36).slice(2, 10)}`;
  /** This take's epoch (fence.ts), 0n until taken. */
  epoch = 0n;
  private timer: NodeJS.Timeout | null = null;
  /** performance.now() when the last renewal that succeeded (or the take) was sent. */
  private renewedAtMs = 0;
  /** A renewal failed (the server away): the log line says so once per outage. */
  private toldFailure = false;
  /** Renewals (and the look for followers, announce.ts) go here, not behind unread replies. */
  readonly side: PgSideConnection;

  constructor(
    private readonly db: PgDb,
    private readonly leaseMs: number,
    private readonly log: (line: string) => void,
  ) {
    this.side = new PgSideConnection(db);
    db.onFence((why) => {
      this.stopRenewing();
      this.log(
        `this mount lost the store's lease on ${db.target} (${why}); every change is refused (EROFS) ` +
          'from now on, and it follows the new holder read-only: unmount it',
      );
    });
  }

  /** Take the lease, or throw LeaseHeldError naming the live holder. */
  acquire(note: string): void {
    const startMs = Date.now();
    const sentMs = performance.now();
    this.db.exec(LEASE_TABLE_SQL);
    this.db.transaction(() => {
      // Two openers at once: one waits, then sees the other. An old holder's transactions in flight
      // finish first, and its later ones see the new epoch (fence.ts).
      this.db.exec(TAKE_LOCKS_SQL);
      const r = this.db.prepare(SELECT_SQL).get() as Record<string, unknown> | undefined;
      if (r !== undefined && Number(r.left_ms) > 0 && r.holder !== this.holder) {
        const held = infoOf(r);
        if (!deadOnThisHost(held)) throw new LeaseHeldError(this.db.target, held);
        this.log(
          `took over the lease of ${held.host} pid ${held.pid} on ${this.db.target}, which is no longer running`,
        );
      }
      this.takeRow(note);
    })();
    this.held(startMs, sentMs);
    this.timer = setInterval(() => this.renew(), Math.max(1, Math.floor(this.leaseMs / LEASE_RENEWALS_PER_PERIOD)));
    this.timer.unref();
    this.db.onRedialled(() => this.retake(note));
  }

  /**
   * A new connection after the old one broke (DESIGN §9 "A broken connection"): the old session's
   * epoch died with it (a transaction of it the server still runs commits nothing after this take,
   * which waits for it: fence.ts). The lease is taken again in a new epoch when the
   * row still names this opener, expired or not (nobody else took it meanwhile); else another opener
   * held it since, and this one is fenced, as a renewal that finds it taken fences it.
   */
  private retake(note: string): void {
    if (this.db.fencedBy !== null) return;
    const startMs = Date.now();
    const sentMs = performance.now();
    const found: { other: string | null } = { other: null };
    this.db.transaction(() => {
      this.db.exec(TAKE_LOCKS_SQL);
      const r = this.db.prepare(SELECT_SQL).get() as Record<string, unknown> | undefined;
      if (r === undefined || r.holder !== this.holder) {
        found.other =
          r === undefined
            ? `its lease row (epoch ${this.epoch}) was gone when it reconnected`
            : `${String(r.host)} pid ${String(r.pid)} (${String(r.note) || 'no note'}) ` +
              `held it at epoch ${String(r.epoch)} ` +
              `when this one (epoch ${this.epoch}) reconnected`;
        return;
      }
      this.takeRow(note);
    })();
    if (found.other !== null) return this.db.fence(found.other);
    this.held(startMs, sentMs);
  }

  /** In the take's transaction (the lease table locked): the row names this opener, in a new epoch. */
  private takeRow(note: string): void {
    const interval = `${Math.round(this.leaseMs)} milliseconds`;
    const epoch = BigInt((this.db.prepare(NEXT_EPOCH_SQL).get() as { epoch: bigint }).epoch);
    this.db
      .prepare(
        `INSERT INTO chunkfs_lease(k, holder, host, pid, note, acquired_at, heartbeat_at, expires_at, epoch)
        VALUES (0, ?, ?, ?, ?, now(), now(), now() + CAST(? AS interval), ?)
      ON CONFLICT (k) DO UPDATE SET holder = excluded.holder, host = excluded.host, pid = excluded.pid, note = excluded.note,
        acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at,
        epoch = excluded.epoch`,
      )
      .run(this.holder, os.hostname(), process.pid, note, interval, epoch);
    // Installed by the first take of a build that fences (a store made before it has none yet).
    if ((this.db.prepare(FENCE_INSTALLED_SQL).get() as { ok: bigint }).ok !== 1n) this.db.exec(FENCE_SQL);
    // A transaction left open by a paused holder would hold the next take's lock: the server ends
    // it after a lease's time (the holder's transactions never wait on it for longer).
    const idle = `SET idle_in_transaction_session_timeout = ${Math.round(this.leaseMs)}`;
    this.db.holdLease(`${epochSettingSql(epoch)}; ${idle}`);
    this.epoch = epoch;
  }

  /** The lease taken: held from when the take was sent, cached rows trusted until it may expire. */
  private held(startMs: number, sentMs: number): void {
    this.renewedAtMs = sentMs;
    this.db.trustRows(startMs + this.leaseMs); // the only writer until then (row-cache.ts)
  }

  /**
   * Heartbeat: extend the lease if this take still holds it, else the opener is fenced (engine.ts
   * fence). On the side connection: the metadata connection's unread replies may wait on the server.
   */
  renew(): void {
    if (this.db.fencedBy !== null) return;
    const startMs = Date.now();
    const sentMs = performance.now();
    try {
      const n = this.side.run(
        (db) => db.prepare(RENEW_SQL).run(`${Math.round(this.leaseMs)} milliseconds`, this.holder, this.epoch).changes,
      );
      this.toldFailure = false;
      if (n === 1) {
        this.renewedAtMs = sentMs;
        this.db.trustRows(startMs + this.leaseMs);
        return;
      }
      const now = this.side.run((db) => readLease(db));
      this.db.fence(
        now === null
          ? `its lease row (epoch ${this.epoch}) is gone`
          : `another opener, ${now.host} pid ${now.pid} (${now.note || 'no note'}), took it over at epoch ${now.epoch} ` +
              `after this one's (${this.epoch}) expired`,
      );
    } catch (err) {
      this.db.trustRows(0); // another opener may write now: nothing cached is trusted
      if (err instanceof LeaseLostError) return;
      if (!this.toldFailure) this.log(`lease renewal on ${this.db.target} failed: ${(err as Error).message}`);
      this.toldFailure = true;
    }
  }

  /**
   * Before shards are written or deleted (DESIGN §9 "Lease and fencing"): throws LeaseLostError once
   * the lease is lost, and renews it first when the last renewal is older than a share of the lease
   * (a pause, a busy thread), so a holder that was paused past its lease finds out before it writes.
   */
  checkHeld(): void {
    this.db.refuseIfFenced();
    if (performance.now() - this.renewedAtMs <= this.leaseMs * SHARD_WRITE_LEASE_SHARE) return;
    this.renew();
    this.db.refuseIfFenced();
    if (performance.now() - this.renewedAtMs > this.leaseMs) {
      throw new LeaseUnconfirmedError(this.db.target);
    }
  }

  private stopRenewing(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.side.close();
  }

  /** Give the lease back (close): the next opener need not wait for expiry. */
  release(): void {
    this.db.trustRows(0);
    this.stopRenewing();
    if (this.db.fencedBy !== null) return; // the row is another opener's
    try {
      this.db
        .prepare('DELETE FROM chunkfs_lease WHERE k = 0 AND holder = ? AND epoch = ?')
        .run(this.holder, this.epoch);
    } catch {
      /* the server is gone: the lease expires by itself */
    }
  }
}
