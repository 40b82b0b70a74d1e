// Fencing of the store's lease on PostgreSQL (DESIGN §9 "Lease and fencing"): the lease row carries
// an epoch that grows at every take (a sequence: it never goes back, even when a release deleted
// the row), the holder's session keeps its epoch in the setting chunkfs.lease_epoch, and a statement
// trigger on every metadata table refuses, inside the writing transaction, a session whose epoch is
// not the lease row's. So a mount that lost its lease (paused, partitioned) commits nothing, whatever
// its own timers believe: the server decides, in the transaction that would commit.
//
// The check takes an advisory lock shared (in memory, no row written) until the transaction ends; a
// take-over takes it exclusive (TAKE_LOCKS_SQL, lease.ts), so it waits for the old holder's
// transactions in flight, and every later one of the old holder sees the new epoch and fails. A
// transaction checks once (the setting chunkfs.fence_checked, local to it), in plpgsql expressions
// but for the one SELECT of the lease row (each statement a trigger runs costs the server an
// execution: a LOCK TABLE and PERFORMs did). A function of an older version (chunkfs_fence_v1 locked
// the lease table ROW SHARE) is replaced by a take's trigger DDL, which waits for every transaction
// writing the tables, so builds of either version fence each other. A session without an epoch
// (mkfs, migrations before the lease, an older build) may write only while no lease is live.
// Made by the read-write open that takes the lease; no part of the shared schema (meta copy and
// SQLite know nothing of it).
import { FsError } from '../../fs-error';
import { META_TABLES } from '../meta-tables';

/** SQLSTATE of a refused write: class CF is PostgreSQL's to leave free for applications. */
export const FENCED_SQLSTATE = 'CF001';
/** The session setting holding the holder's epoch. */
export const EPOCH_SETTING = 'chunkfs.lease_epoch';
/** The trigger's name on every metadata table. */
const TRIGGER_NAME = 'chunkfs_fence';
/** The function's name carries its version: a change of its text makes a new one, installed at the next take. */
const FUNCTION_NAME = 'chunkfs_fence_v2';
/**
 * The advisory lock of the fence: advisory locks are per database, and chunkfs takes no other, so any
 * fixed number serves; this one spells "chunkfs" in ASCII.
 */
const FENCE_LOCK_KEY = 0x6368756e6b6673n;

/**
 * A take's locks, first in its transaction: the lease table EXCLUSIVE (two takers, one after the
 * other) and the fence's advisory lock exclusive (the old holder's transactions in flight finish first).
 */
export const TAKE_LOCKS_SQL = `LOCK TABLE chunkfs_lease IN EXCLUSIVE MODE;
  SELECT pg_advisory_xact_lock(${FENCE_LOCK_KEY})`;

/** Whether the lease table has the epoch: one of a build before fencing lacks it (an SQL expression). */
export const HAS_EPOCH_SQL = `EXISTS (SELECT 1 FROM information_schema.columns
  WHERE table_schema = current_schema() AND table_name = 'chunkfs_lease' AND column_name = 'epoch')`;

/**
 * The epoch sequence, and the column where the table predates fencing (ALTER only then: it locks
 * the table against every reader of the lease).
 */
export const EPOCH_SQL = `CREATE SEQUENCE IF NOT EXISTS chunkfs_lease_epoch;
  DO $$ BEGIN
    IF NOT ${HAS_EPOCH_SQL} THEN
      ALTER TABLE chunkfs_lease ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
    END IF;
  END $$`;

/** The next epoch, for the row a take writes. */
export const NEXT_EPOCH_SQL = "SELECT nextval('chunkfs_lease_epoch') AS epoch";

const FUNCTION_SQL = `CREATE OR REPLACE FUNCTION ${FUNCTION_NAME}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  mine TEXT;
  l RECORD;
  locked BOOLEAN;
  checked TEXT;
BEGIN
  IF current_setting('chunkfs.fence_checked', true) = '1' THEN RETURN NULL; END IF;
  locked := pg_advisory_xact_lock_shared(${FENCE_LOCK_KEY}) IS NOT NULL;
  mine := current_setting('${EPOCH_SETTING}', true);
  SELECT epoch, host, pid, expires_at > now() AS live INTO l FROM chunkfs_lease WHERE k = 0;
  IF coalesce(mine, '') = '' THEN
    IF FOUND AND l.live THEN
      RAISE EXCEPTION 'the store''s lease is held by % pid % (epoch %) and this session holds none',
        l.host, l.pid, l.epoch USING ERRCODE = '${FENCED_SQLSTATE}';
    END IF;
  ELSIF NOT FOUND OR l.epoch::text <> mine THEN
    RAISE EXCEPTION 'this session''s lease (epoch %) was taken over by % pid % (epoch %)', mine,
      coalesce(l.host, 'nobody'), coalesce(l.pid, 0), coalesce(l.epoch, 0) USING ERRCODE = '${FENCED_SQLSTATE}';
  END IF;
  checked := set_config('chunkfs.fence_checked', '1', true);
  RETURN NULL;
END $$`;

/** The trigger on one table (those of a newer schema than the database's are skipped). */
function triggerSql(table: string): string {
  return `IF to_regclass('${table}') IS NOT NULL THEN
    CREATE OR REPLACE TRIGGER ${TRIGGER_NAME} BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${table}
      FOR EACH STATEMENT EXECUTE FUNCTION ${FUNCTION_NAME}();
  END IF;`;
}

/** The function and a trigger on every metadata table, in one statement list. */
export const FENCE_SQL = `${FUNCTION_SQL};
DO $$ BEGIN
${META_TABLES.map((t) => triggerSql(t.name)).join('\n')}
END $$`;

/** Whether FENCE_SQL must run: 1 when every existing metadata table has this version's trigger. */
const TABLE_NAMES_SQL = `ARRAY[${META_TABLES.map((t) => `'${t.name}'`).join(', ')}]`;
export const FENCE_INSTALLED_SQL = `SELECT (SELECT count(*) FROM pg_trigger g JOIN pg_proc p ON p.oid = g.tgfoid
    WHERE g.tgname = '${TRIGGER_NAME}' AND p.proname = '${FUNCTION_NAME}')
  = (SELECT count(*) FROM unnest(${TABLE_NAMES_SQL}) t WHERE to_regclass(t) IS NOT NULL) AS ok`;

/** The session's epoch (a take, and every connection dialled again for the holder). */
export function epochSettingSql(epoch: bigint): string {
  return `SELECT set_config('${EPOCH_SETTING}', '${epoch.toString()}', false)`;
}

/**
 * This opener lost the store's lease (the database refused its write, or a renewal found the lease
 * taken): every change from now on is refused with EROFS (DESIGN §9 "Lease and fencing").
 */
export class LeaseLostError extends FsError {
  constructor(
    readonly target: string,
    readonly why: string,
  ) {
    super(
      'EROFS',
      `${target}: this mount lost the store's lease (${why}); it changes nothing more: unmount it, ` +
        'and mount again (read-only with -o ro while the other holder writes)',
      { path: target },
    );
    this.name = 'LeaseLostError';
  }
}

/** A shard write while the lease cannot be confirmed (the server unreachable past a lease): tried again later. */
export class LeaseUnconfirmedError extends FsError {
  constructor(readonly target: string) {
    super(
      'EIO',
      `${target}: the store's lease could not be renewed for longer than it lasts ` +
        '(metadata server unreachable?); shards are not written until it is',
      { path: target },
    );
    this.name = 'LeaseUnconfirmedError';
  }
}
