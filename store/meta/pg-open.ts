// Opening a store's metadata on PostgreSQL (DESIGN §9): connect with libpq, set the session up for
// the commit model of DESIGN §5 (store/meta/pg-commit-point.ts), then migrate (read-write) or check
// the schema (read-only). Every failure is a ConfigError naming the connection string (password
// hidden) and what to do.
import { ConfigError } from '../config';
import { checkReadable, migrate } from './meta';
import { PgDb } from './pg-engine';
import { newLibpqConnection } from './libpq';
import { redactedUrl } from '../meta-target';
import { withKeyword } from '../pg-conninfo';
import { COMMIT_POINT_TABLE_SQL } from './pg-commit-point';
import { CHANGE_NOTIFY_SQL } from './pg-change-notify';

/** How long a connect may take before libpq gives up (seconds; its connect_timeout). */
const CONNECT_TIMEOUT_SECONDS = 10;

/**
 * Session settings. synchronous_commit off: a commit returns once it is in the server's WAL buffers
 * (it survives a kill of this process, as SQLite's WAL append does) and is flushed by the server
 * within a fraction of a second, or at once by the next durable commit point (DESIGN §5: fsync,
 * syncfs, unmount, the 5 s timer). Notices (e.g. "relation exists") are not errors: not printed.
 * enable_seqscan off: statements are prepared once per connection (pg-engine.ts) and soon run on
 * a generic plan, made while a new store's tables fit in a page, where a sequential scan is the
 * cheaper plan; it stays, and reads every row once the table has grown, until the server's next
 * ANALYZE of it (issue 22: a tar -x of 1,000 files into a new store made 11,052 sequential scans
 * of inodes, 8.9 M rows read, and 21 index scans). Metadata statements are keyed by an index; one
 * that reads a whole table has no other plan and still scans it. jit off: such a plan's cost (the
 * planner's penalty for the scan) passes jit_above_cost, and compiling it took 5-50 ms a statement.
 */
const SESSION_SQL = "SET synchronous_commit = off; SET client_min_messages = warning; SET TIME ZONE 'UTC'; SET enable_seqscan = off; SET jit = off";
/**
 * A follower's session refuses every write (SQLSTATE 25006): a read-only mount following another
 * machine's writer (DESIGN §9) cannot change the store by mistake.
 */
const READ_ONLY_SQL = 'SET default_transaction_read_only = on';

function connectError(url: string, message: string): ConfigError {
  const hint = /does not exist/.test(message)
    ? 'create it first (createdb), or name an existing database'
    : /password|authentication/i.test(message)
      ? 'give the password to libpq in PGPASSWORD or ~/.pgpass (never in the connection string)'
      : 'check the host, port or socket directory, user and database, and that the server is running';
  return new ConfigError(redactedUrl(url), `cannot connect to the PostgreSQL metadata database: ${message.trim()}; ${hint}`);
}

/** A connection to the store's database, or a ConfigError naming it; refuseWrites: a follower's session (dialled again so too). */
export function connectPg(url: string, refuseWrites = false): PgDb {
  const pq = newLibpqConnection();
  try {
    // connect_timeout after the string's own parameters: libpq takes the last of a keyword given twice.
    pq.connectSync(withKeyword(url, 'connect_timeout', String(CONNECT_TIMEOUT_SECONDS)));
  } catch (err) {
    throw connectError(url, (err as Error).message);
  }
  const db = new PgDb(pq, url, () => connectPg(url, refuseWrites).detach());
  try {
    db.exec(refuseWrites ? `${SESSION_SQL}; ${READ_ONLY_SQL}` : SESSION_SQL);
  } catch (err) {
    db.close();
    throw connectError(url, (err as Error).message);
  }
  return db;
}

/**
 * Open and migrate (read-write) or check (read-only) the metadata schema on PostgreSQL. A read-only
 * open may still take the lease (meta copy's source); a follower's (DESIGN §9) refuses every write.
 */
export function openPgMeta(url: string, readOnly: boolean, follower = false): PgDb {
  const db = connectPg(url, follower);
  try {
    if (readOnly) checkReadable(db);
    else {
      migrate(db);
      db.exec(COMMIT_POINT_TABLE_SQL);
      db.exec(CHANGE_NOTIFY_SQL); // the writer tells read-only followers what it changed (DESIGN §9)
    }
  } catch (err) {
    db.close();
    throw new ConfigError(redactedUrl(url), `cannot open metadata database: ${(err as Error).message}`);
  }
  return db;
}

/**
 * mkfs: the new store's schema in ONE transaction, flushed by the server before the store's config
 * names the database: a failure leaves the database as mkfs found it, empty, for the next try.
 */
export function createPgMeta(url: string): void {
  const db = connectPg(url);
  try {
    db.transaction(() => {
      db.exec('SET LOCAL synchronous_commit = on');
      migrate(db);
      db.exec(COMMIT_POINT_TABLE_SQL);
      db.exec(CHANGE_NOTIFY_SQL);
    })();
  } catch (err) {
    throw new ConfigError(redactedUrl(url), `cannot create the metadata tables: ${(err as Error).message}`);
  } finally {
    db.close();
  }
}
