// Metadata database (DESIGN §4): better-sqlite3 in WAL mode with synchronous=NORMAL (DESIGN §5):
// a commit is atomic and survives a process kill at once (it is in the WAL file), but is not
// flushed to the device; store/meta/commit-log.ts makes every commit so far durable at fsync, syncfs,
// unmount and from a timer. Schema changes are migrations keyed by PRAGMA user_version.
import Database from 'better-sqlite3';
import { assert } from '../../src/errors';
import { Db } from './sql-engine';
import { SqliteDb } from './sqlite-engine';
import { MIGRATION_V5_SPECIAL_FILES } from './migration-v5';
import { MIGRATION_V8_CHUNK_TRANSFORMS } from './migration-v8';
import { MIGRATION_V7_PREALLOC } from './prealloc';
import { MIGRATION_V6_FAR_TIMES } from './far-times';

export type { Db } from './sql-engine';

const S_IFDIR = 0o040000;
export const ROOT_INO = 1;

export const MIGRATIONS: string[] = [
  // v1: the whole initial schema.
  `CREATE TABLE inodes(
     ino INTEGER PRIMARY KEY,
     type TEXT NOT NULL CHECK (type IN ('file','dir','symlink')),
     mode INTEGER NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL,
     size INTEGER NOT NULL DEFAULT 0, nlink INTEGER NOT NULL,
     parent INTEGER,                      -- directories only: for '..' and the rename cycle check
     atime_ns INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, birth_ns INTEGER NOT NULL,
     layout TEXT, chunk_size INTEGER, bitrot_block INTEGER, ec_block_size INTEGER,
     placement_seed INTEGER, cluster_map_epoch INTEGER,   -- Layout (spec §3 echo fields), files only
     symlink_target TEXT
   );
   CREATE TABLE dirents(parent INTEGER NOT NULL, name TEXT NOT NULL, ino INTEGER NOT NULL,
     PRIMARY KEY(parent, name)) WITHOUT ROWID;
   CREATE INDEX dirents_by_ino ON dirents(ino);
   CREATE TABLE xattrs(ino INTEGER NOT NULL, name TEXT NOT NULL, value BLOB NOT NULL,
     PRIMARY KEY(ino, name)) WITHOUT ROWID;
   -- chunk map: version 0 = no live data (hole); max_version never decreases so a
   -- chunk version is never reused, even after truncate (no stale shard can verify).
   CREATE TABLE chunks(ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL,
     version INTEGER NOT NULL, logical_len INTEGER NOT NULL, max_version INTEGER NOT NULL,
     PRIMARY KEY(ino, chunk_index)) WITHOUT ROWID;
   CREATE TABLE intents(id INTEGER PRIMARY KEY, ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL,
     version INTEGER NOT NULL, first_block INTEGER NOT NULL, last_block INTEGER NOT NULL, created_ns INTEGER NOT NULL);
   CREATE TABLE heal_queue(ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL, version INTEGER NOT NULL,
     shard_index INTEGER NOT NULL, reason TEXT NOT NULL, queued_ns INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY(ino, chunk_index, version, shard_index)) WITHOUT ROWID;
   CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
   CREATE TABLE orphans(ino INTEGER PRIMARY KEY);  -- nlink 0, data not yet deleted`,
  // v2 (DESIGN §5 commit model v2): journaled write intents carry the new bytes of their block span
  // (NULL in intents of older builds, resolved the old way); the reclaim queue holds chunk versions
  // whose shards are to be deleted in the background, with what their paths need once the inode is gone.
  `ALTER TABLE intents ADD COLUMN span BLOB;
   CREATE TABLE reclaim(ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL, version INTEGER NOT NULL,
     layout TEXT NOT NULL, placement_seed INTEGER NOT NULL, cluster_map_epoch INTEGER NOT NULL,
     queued_ns INTEGER NOT NULL, PRIMARY KEY(ino, chunk_index, version)) WITHOUT ROWID;`,
  // v3 (DESIGN §5 prefix rule, issue 14): files whose chunk map may hold bytes stored past their
  // committed size (write-back stores chunks out of order); recovery trims exactly these files.
  `CREATE TABLE past_size(ino INTEGER PRIMARY KEY);`,
  // v4 (spec §11, DESIGN §5 "Small files", issue 9): a small file's inode holds its Slice pointer
  // (container_id, offset, length, cookie; no data); containers (internal inodes without a name)
  // and their state, owned by store/meta/containers.ts.
  `ALTER TABLE inodes ADD COLUMN slice_container INTEGER;
   ALTER TABLE inodes ADD COLUMN slice_offset INTEGER;
   ALTER TABLE inodes ADD COLUMN slice_length INTEGER;
   ALTER TABLE inodes ADD COLUMN slice_cookie INTEGER;
   CREATE INDEX inodes_by_slice ON inodes(slice_container, slice_offset) WHERE slice_container IS NOT NULL;
   CREATE TABLE containers(id INTEGER PRIMARY KEY, pack_class TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('open','full','sealing','sealed')),
     used_bytes INTEGER NOT NULL DEFAULT 0, dead_bytes INTEGER NOT NULL DEFAULT 0, capacity_bytes INTEGER NOT NULL,
     sealed_from INTEGER);
   -- Inode numbers are never reused (a reused number would reuse chunk versions whose old shards
   -- may still wait on the reclaim queue under another layout): the highest number ever deleted.
   CREATE TABLE ino_high(k INTEGER PRIMARY KEY CHECK (k = 0), ino INTEGER NOT NULL);
   INSERT INTO ino_high(k, ino) SELECT 0, coalesce(max(ino), 1) FROM inodes;
   CREATE TRIGGER inodes_high AFTER DELETE ON inodes BEGIN
     UPDATE ino_high SET ino = max(ino, old.ino) WHERE k = 0;
   END;`,
  // v5 (issue 10): FIFOs, sockets and devices (store/meta/migration-v5.ts).
  MIGRATION_V5_SPECIAL_FILES,
  // v6 (issue 15): times outside signed 64-bit nanoseconds (store/meta/far-times.ts).
  MIGRATION_V6_FAR_TIMES,
  // v7 (issue 24 item 5): what fallocate allocated, per chunk (store/meta/prealloc.ts).
  MIGRATION_V7_PREALLOC,
  // v8 (issue 23): a transformed chunk's stored length and flags (store/meta/chunk-map.ts).
  MIGRATION_V8_CHUNK_TRANSFORMS,
];

/** SQL for a new inode number: above every number in use or ever deleted (see ino_high, v4). */
export const NEXT_INO_SQL = '(SELECT max(h.ino, coalesce((SELECT max(ino) FROM inodes), 0)) + 1 FROM ino_high h WHERE h.k = 0)';

const NS_PER_MS = 1_000_000n;
const epochNs = BigInt(Date.now()) * NS_PER_MS;
const hrStart = process.hrtime.bigint();

/** Wall-clock nanoseconds since the epoch, monotonic within the process. */
export function nowNs(): bigint {
  return epochNs + (process.hrtime.bigint() - hrStart);
}

/** u64 <-> SQLite's signed i64 (placement_seed may use all 64 bits). */
export function u64ToDb(v: bigint): bigint {
  return BigInt.asIntN(64, v);
}
export function dbToU64(v: bigint | number): bigint {
  return BigInt.asUintN(64, BigInt(v));
}

/**
 * How long an open waits for meta.db held by another connection: a writer holds it until it closes
 * (locking_mode EXCLUSIVE), so a reader does not wait long; a writer waits out a reader's short look.
 */
const READER_BUSY_WAIT_MS = 500;
const WRITER_BUSY_WAIT_MS = 5000;

export function openDb(file: string, readOnly = false): SqliteDb {
  const native = new Database(file, { readonly: readOnly, fileMustExist: readOnly, timeout: readOnly ? READER_BUSY_WAIT_MS : WRITER_BUSY_WAIT_MS });
  const db = new SqliteDb(native);
  try {
    setUp(native, readOnly);
    if (!readOnly) migrate(db);
    else checkReadable(db);
  } catch (err) {
    db.close(); // a failed open leaves nothing open (store/meta/meta-open.ts may retry)
    throw err;
  }
  return db;
}

/** WAL pages past which a commit checkpoints (see setUp). */
const WAL_CHECKPOINT_PAGES = 4096;

function setUp(db: Database.Database, readOnly: boolean): void {
  db.defaultSafeIntegers(true);
  if (!readOnly) {
    // Before the first access (issue 20): the writer holds meta.db's lock for as long as it has it
    // open, so a transaction takes no file locks (SQLite took and released ~20 fcntl locks each), and
    // WAL mode keeps its index in this process's memory, never in meta.db-shm. A read-write open holds
    // the store lock, so nothing else writes; readers (chunkfs inspect, status) of a mounted store go
    // through the mount's control socket (cli/control), and an offline reader makes this open wait.
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    // DESIGN §5: no device flush per metadata operation; store/meta/commit-log.ts flushes the WAL.
    db.pragma('synchronous = NORMAL');
    // A checkpoint costs two device flushes (the WAL before, meta.db after). At SQLite's default of
    // 1,000 pages (4 MiB) a small-file workload without any fsync checkpointed every ~250 namespace
    // operations: 300 files created, written, renamed and unlinked cost 13 of the mount's 35 flushes
    // (scripts/bench-small-flushes.sh). 4,096 pages (16 MiB of WAL) checkpoint four times less often.
    db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    db.pragma('foreign_keys = OFF');
  }
}

/** A read-only open cannot migrate: the schema must be this build's already. */
export function checkReadable(db: Db): void {
  const version = db.schemaVersion();
  if (version < MIGRATIONS.length) {
    throw new Error(`schema version ${version} is older than this build's (${MIGRATIONS.length}); ` +
      'open the store read-write once (chunkfs mount or chunkfs scrub) to upgrade it');
  }
}

/** Every migration this database lacks, each in its own transaction with its version. */
export function migrate(db: Db): void {
  const version = db.schemaVersion();
  assert(version <= MIGRATIONS.length, `meta.db schema version ${version} is newer than this build (${MIGRATIONS.length})`);
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]);
      if (v === 0) createRoot(db);
      db.setSchemaVersion(v + 1);
    })();
  }
}

function createRoot(db: Db): void {
  const t = nowNs();
  db.prepare(`INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns)
              VALUES (?, 'dir', ?, 0, 0, 0, 2, ?, ?, ?, ?, ?)`).run(ROOT_INO, S_IFDIR | 0o755, ROOT_INO, t, t, t, t);
}
