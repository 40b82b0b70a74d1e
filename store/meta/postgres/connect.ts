// A session on the store's PostgreSQL database (DESIGN §9): dialled with libpq, set up for the
// commit model of DESIGN §5 (commit-point.ts), and dialled again over the whole connection string
// after it broke, checked to reach this store's metadata still (DESIGN §4 "Identity"). The opener
// (open.ts), the commit point, the side and listening connections all dial through here. Every
// failure is a ConfigError naming the connection string (password hidden) and what to do.
import { ConfigError } from '../../config';
import { STORE_ID_VERSION } from '../meta';
import { MetaIdentityError, MetaPlace, checkStoreIdentity } from '../store-identity';
import { PgDb, finishLibpq } from './engine';
import { LibpqConnection, newLibpqConnection } from './libpq';
import { redactedUrl } from './target';
import { withKeyword } from './conninfo';
import { serverInstanceOf } from './instance';

/** How long a connect may take before libpq gives up (seconds; its connect_timeout). */
const CONNECT_TIMEOUT_SECONDS = 10;

/**
 * Session settings. synchronous_commit off: a commit returns once it is in the server's WAL buffers
 * (it survives a kill of this process, as SQLite's WAL append does) and is flushed by the server
 * within a fraction of a second, or at once by the next durable commit point (DESIGN §5: fsync,
 * syncfs, unmount, the 5 s timer). Notices (e.g. "relation exists") are not errors: not printed.
 * enable_seqscan off: statements are prepared once per connection (engine.ts) and soon run on
 * a generic plan, made while a new store's tables fit in a page, where a sequential scan is the
 * cheaper plan; it stays, and reads every row once the table has grown, until the server's next
 * ANALYZE of it (a tar -x of 1,000 files into a new store made 11,052 sequential scans
 * of inodes, 8.9 M rows read, and 21 index scans). Metadata statements are keyed by an index; one
 * that reads a whole table has no other plan and still scans it. jit off: such a plan's cost (the
 * planner's penalty for the scan) passes jit_above_cost, and compiling it took 5-50 ms a statement.
 */
const SESSION_SQL =
  "SET synchronous_commit = off; SET client_min_messages = warning; SET TIME ZONE 'UTC'; SET enable_seqscan = off; SET jit = off";
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
  return new ConfigError(
    redactedUrl(url),
    // libpq's message has a line per host tried and a hint: one line (user-facing errors are one).
    `cannot connect to the PostgreSQL metadata database: ${message
      .trim()
      .split(/\s*\n\s*/)
      .join(' ')}; ${hint}`,
  );
}

/**
 * A connection to the store's database, or a ConfigError naming it; refuseWrites: a follower's session
 * (dialled again so too). storeUuid: a connection dialled again after a failure must reach this store's
 * metadata still (DESIGN §4 "Identity": the name may now lead to another database or server).
 */
export function connectPg(url: string, refuseWrites = false, storeUuid?: string): PgDb {
  const pq = newLibpqConnection();
  try {
    // connect_timeout after the string's own parameters: libpq takes the last of a keyword given twice.
    pq.connectSync(withKeyword(url, 'connect_timeout', String(CONNECT_TIMEOUT_SECONDS)));
  } catch (err) {
    throw connectError(url, (err as Error).message);
  }
  let instance: string;
  try {
    instance = serverInstanceOf(pq);
  } catch (err) {
    finishLibpq(pq);
    throw connectError(url, (err as Error).message);
  }
  const db = new PgDb(pq, url, instance, () => redial(url, refuseWrites, storeUuid));
  try {
    db.exec(refuseWrites ? `${SESSION_SQL}; ${READ_ONLY_SQL}` : SESSION_SQL);
  } catch (err) {
    db.close();
    throw connectError(url, (err as Error).message);
  }
  return db;
}

/** What an operator checks when the database at url is not this store's (DESIGN §4 "Identity"). */
export function pgPlace(url: string): MetaPlace {
  return {
    where: redactedUrl(url),
    check:
      'check the connection string in chunkfs.json (meta.url: host, port, database name) and that the database is this ' +
      "store's (not one dropped and made again, nor another store's; a restore of this store's own opens)",
  };
}

/**
 * A new connection to replace a failed one, over the whole connection string (every host of a
 * multi-host one, as libpq tries them: DESIGN §9 "The database's own fail-over"), and the instance
 * it reached: refused (MetaIdentityError) unless it names store storeUuid.
 */
function redial(
  url: string,
  refuseWrites: boolean,
  storeUuid: string | undefined,
): { pq: LibpqConnection; instance: string } {
  const db = connectPg(url, refuseWrites, storeUuid);
  try {
    if (storeUuid !== undefined && checkStoreIdentity(db, pgPlace(url), storeUuid, STORE_ID_VERSION)) {
      const problem = `names no store (schema older than v${STORE_ID_VERSION}), expected store ${storeUuid}`;
      throw new MetaIdentityError(redactedUrl(url), `${problem}: ${pgPlace(url).check}`);
    }
    db.exec('DEALLOCATE ALL'); // the check's statements: the connection it replaces prepares its own, by the same names
  } catch (err) {
    db.close();
    throw err;
  }
  return { pq: db.detach(), instance: db.spans.current };
}
