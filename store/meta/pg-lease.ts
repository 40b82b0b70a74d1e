// The store's lease on PostgreSQL (DESIGN §9, issue 22 item 4): one read-write opener at a time
// for a store whose metadata outlives its machine. On SQLite the store lock file does this (one
// machine holds meta.db); on PostgreSQL another machine that sees the same disk directories could
// open the store too, so the database itself holds a lease row: who holds it (host, pid, what for),
// a heartbeat and an expiry, both in the server's clock (no clock of two machines is compared). A
// read-write open takes the lease when nobody holds it or the holder's has expired (it died: kill
// -9, machine gone), renews it every LEASE_RENEW_MS, and gives it back at close. A second opener is
// refused with a message naming the holder.
import * as os from 'node:os';
import type { PgDb } from './pg-engine';

/** A holder that stops renewing loses the lease after this long (fail-over waits at most this). */
export const LEASE_MS = 15_000;
/** Renewals per lease period: a renewal delayed by two periods' worth of a busy thread still keeps it. */
const LEASE_RENEWALS_PER_PERIOD = 3;

export const LEASE_TABLE_SQL = `CREATE TABLE IF NOT EXISTS chunkfs_lease(k INT PRIMARY KEY CHECK (k = 0),
  holder TEXT NOT NULL, host TEXT NOT NULL, pid BIGINT NOT NULL, note TEXT NOT NULL,
  acquired_at TIMESTAMPTZ NOT NULL, heartbeat_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL)`;

/** The lease as `chunkfs status` shows it. */
export interface LeaseInfo {
  holder: string;
  host: string;
  pid: number;
  note: string;
  /** Since the last heartbeat, and until expiry (negative: expired), by the server's clock. */
  heartbeatAgeMs: number;
  expiresInMs: number;
}

/** Another opener holds the lease: names it, and when it expires. */
export class LeaseHeldError extends Error {
  constructor(readonly target: string, readonly lease: LeaseInfo) {
    super(`${target}: the store is open read-write by ${lease.host} pid ${lease.pid} (${lease.note || 'no note'}), ` +
      `lease renewed ${Math.round(lease.heartbeatAgeMs / 1000)} s ago, expires in ${Math.max(0, Math.round(lease.expiresInMs / 1000))} s ` +
      'unless renewed; stop it there, or mount read-only (-o ro), or wait for the lease to expire if that machine is gone');
    this.name = 'LeaseHeldError';
  }
}

const SELECT_SQL = `SELECT holder, host, pid, note,
  CAST(1000 * extract(epoch FROM now() - heartbeat_at) AS BIGINT) AS age_ms,
  CAST(1000 * extract(epoch FROM expires_at - now()) AS BIGINT) AS left_ms FROM chunkfs_lease WHERE k = 0`;

function infoOf(r: Record<string, unknown>): LeaseInfo {
  return {
    holder: String(r.holder), host: String(r.host), pid: Number(r.pid), note: String(r.note),
    heartbeatAgeMs: Number(r.age_ms), expiresInMs: Number(r.left_ms),
  };
}

/** The lease row, or null when nobody holds one (read-only: status). */
export function readLease(db: PgDb): LeaseInfo | null {
  const exists = db.prepare("SELECT to_regclass('chunkfs_lease') IS NOT NULL AS e").get() as { e: bigint };
  if (exists.e === 0n) return null;
  const r = db.prepare(SELECT_SQL).get() as Record<string, unknown> | undefined;
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

export class PgLease {
  /** This opener's id: unique across machines and restarts. */
  readonly holder = `${os.hostname()}:${process.pid}:${Date.now().toString(36)}:${Math.random().toString(36).slice(2, 10)}`;
  private timer: NodeJS.Timeout | null = null;
  /** Set when a renewal found the lease taken or failed: the log line says so once. */
  lost = false;

  constructor(private readonly db: PgDb, private readonly leaseMs: number, private readonly log: (line: string) => void) {}

  /** Take the lease, or throw LeaseHeldError naming the live holder. */
  acquire(note: string): void {
    const startMs = Date.now();
    this.db.exec(LEASE_TABLE_SQL);
    const interval = `${Math.round(this.leaseMs)} milliseconds`;
    this.db.transaction(() => {
      this.db.exec('LOCK TABLE chunkfs_lease IN EXCLUSIVE MODE'); // two openers at once: one waits, then sees the other
      const r = this.db.prepare(SELECT_SQL).get() as Record<string, unknown> | undefined;
      if (r !== undefined && Number(r.left_ms) > 0 && r.holder !== this.holder) {
        const held = infoOf(r);
        if (!deadOnThisHost(held)) throw new LeaseHeldError(this.db.target, held);
        this.log(`took over the lease of ${held.host} pid ${held.pid} on ${this.db.target}, which is no longer running`);
      }
      this.db.prepare(`INSERT INTO chunkfs_lease(k, holder, host, pid, note, acquired_at, heartbeat_at, expires_at)
          VALUES (0, ?, ?, ?, ?, now(), now(), now() + CAST(? AS interval))
        ON CONFLICT (k) DO UPDATE SET holder = excluded.holder, host = excluded.host, pid = excluded.pid, note = excluded.note,
          acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at`)
        .run(this.holder, os.hostname(), process.pid, note, interval);
    })();
    this.db.trustRows(startMs + this.leaseMs); // the only writer until then (store/meta/pg-row-cache.ts)
    this.timer = setInterval(() => this.renew(), Math.max(1, Math.floor(this.leaseMs / LEASE_RENEWALS_PER_PERIOD)));
    this.timer.unref();
  }

  /** Heartbeat: extend the lease if this opener still holds it. */
  renew(): void {
    const startMs = Date.now();
    try {
      const n = this.db.prepare(`UPDATE chunkfs_lease SET heartbeat_at = now(), expires_at = now() + CAST(? AS interval)
        WHERE k = 0 AND holder = ?`).run(`${Math.round(this.leaseMs)} milliseconds`, this.holder).changes;
      if (n === 1) {
        if (!this.lost) this.db.trustRows(startMs + this.leaseMs);
        return;
      }
      this.db.trustRows(0); // another opener may write now: nothing cached is trusted
      if (this.lost) return;
      this.lost = true;
      this.log(`lost the store's lease on ${this.db.target} (another opener took it after it expired); this mount's later metadata changes may conflict`);
    } catch (err) {
      this.db.trustRows(0);
      if (!this.lost) this.log(`lease renewal on ${this.db.target} failed: ${(err as Error).message}`);
    }
  }

  /** Give the lease back (close): the next opener need not wait for expiry. */
  release(): void {
    this.db.trustRows(0);
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    try {
      this.db.prepare('DELETE FROM chunkfs_lease WHERE k = 0 AND holder = ?').run(this.holder);
    } catch { /* the server is gone: the lease expires by itself */ }
  }
}
