// meta.db (DESIGN §4): better-sqlite3 in WAL mode with synchronous=NORMAL (DESIGN §5): a commit is
// atomic and survives a process kill at once (it is in the WAL file; a live mount's operations commit
// in groups, engine.ts, DESIGN §5 "Group commit"), but is not flushed to the device;
// store/meta/commit-log.ts makes every commit so far durable at fsync, syncfs, unmount and from a timer.
import Database from 'better-sqlite3';
import { SqliteDb } from './engine';
import { createSchema } from '../meta';

/**
 * How long an open waits for meta.db held by another connection: a writer holds it until it closes
 * (locking_mode EXCLUSIVE), so a reader does not wait long; a writer waits out a reader's short look.
 */
const READER_BUSY_WAIT_MS = 500;
const WRITER_BUSY_WAIT_MS = 5000;

/**
 * Open meta.db as it is: no schema is made or changed here (DESIGN §4 "Identity"). check: run on the
 * first access, before the open sets WAL mode (which writes meta.db's header when it is not a WAL
 * database, e.g. an empty file): open.ts checks that it is this store's metadata.
 */
export function openDb(file: string, readOnly = false, check?: (db: SqliteDb) => void): SqliteDb {
  return openSqlite(file, readOnly, true, check);
}

function openSqlite(file: string, readOnly: boolean, mustExist: boolean, check?: (db: SqliteDb) => void): SqliteDb {
  const timeout = readOnly ? READER_BUSY_WAIT_MS : WRITER_BUSY_WAIT_MS;
  const native = new Database(file, { readonly: readOnly, fileMustExist: mustExist, timeout });
  const db = new SqliteDb(native);
  try {
    setUp(native, readOnly, () => check?.(db));
  } catch (err) {
    db.close(); // a failed open leaves nothing open (open.ts may retry)
    throw err;
  }
  return db;
}

/** mkfs and meta copy: a new SQLite database at file (empty or missing) with this build's schema naming storeUuid. */
export function createDb(file: string, storeUuid: string): SqliteDb {
  const db = openSqlite(file, false, false);
  try {
    createSchema(db, storeUuid);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** WAL pages past which a commit checkpoints (see setUp). */
const WAL_CHECKPOINT_PAGES = 4096;

function setUp(db: Database.Database, readOnly: boolean, firstAccess: () => void): void {
  db.defaultSafeIntegers(true);
  if (readOnly) firstAccess();
  else {
    // Before the first access: the writer holds meta.db's lock for as long as it has it
    // open, so a transaction takes no file locks (SQLite took and released ~20 fcntl locks each), and
    // WAL mode keeps its index in this process's memory, never in meta.db-shm. A read-write open holds
    // the store lock, so nothing else writes; readers (chunkfs inspect, status) of a mounted store go
    // through the mount's control socket (cli/control), and an offline reader makes this open wait.
    db.pragma('locking_mode = EXCLUSIVE');
    firstAccess();
    db.pragma('journal_mode = WAL');
    // DESIGN §5: no device flush per metadata operation; store/meta/commit-log.ts flushes the WAL.
    db.pragma('synchronous = NORMAL');
    // A checkpoint costs two device flushes (the WAL before, meta.db after). At SQLite's default of
    // 1,000 pages (4 MiB) a small-file workload without any fsync checkpointed every ~250 namespace
    // operations: 300 files created, written, renamed and unlinked cost 13 of the mount's 35 flushes
    // (scripts/bench/bench-small-flushes.sh). 4,096 pages (16 MiB of WAL) checkpoint four times less often.
    db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    db.pragma('foreign_keys = OFF');
    // DESIGN §5 "Group commit": every operation is a savepoint of the open group, and SQLite moves a
    // savepoint's sub-journal to a temporary file once it grew past 64 KiB (a batch of needle
    // commits does); with locking_mode EXCLUSIVE that file stays open for the connection's life, and
    // every later savepoint writes it: 2 pwrites per chmod, 8 per rename and 22 per unlink measured
    // (strace, 2,000 files). In memory it is emptied at each operation's end, so it holds one
    // operation's changed pages at most. Large sorts still spill to files (SQLite's sorter does not
    // follow temp_store); the few temporary tables are small.
    db.pragma('temp_store = MEMORY');
    // SQLite's page cache stays better-sqlite3's 16 MiB: at 4 MiB (less RSS after fsync'd writes,
    // whose intent pages filled it) small-file extract ran 0.91x and cold reads 0.92x (5 Dec, 3 rounds).
  }
}
