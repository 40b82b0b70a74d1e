// Metadata database (DESIGN §4): better-sqlite3 in WAL mode with synchronous=FULL,
// so a committed transaction survives a crash (the chunk store's write protocol
// relies on "data durable before the metadata that points at it", DESIGN §5).
// Schema changes are migrations keyed by PRAGMA user_version.
import Database from 'better-sqlite3';
import { assert } from '../src/errors';
import { MIGRATION_V2_SPECIAL_FILES } from './migration-v2';

export type Db = Database.Database;

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
  MIGRATION_V2_SPECIAL_FILES,
];

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

export function openDb(file: string, readOnly = false): Db {
  const db = new Database(file, { readonly: readOnly, fileMustExist: readOnly });
  db.defaultSafeIntegers(true);
  if (!readOnly) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL'); // a commit is durable when it returns (DESIGN §5)
    db.pragma('foreign_keys = OFF');
    migrate(db);
  }
  return db;
}

/**
 * Run fn in a transaction whose commit is not fsynced (DESIGN §5 allows this only for changes a
 * crash may lose harmlessly: removing the intent of a read-modify-write whose replicas are all
 * durable, which recovery would resolve to what is already there). The WAL is sequential, so the
 * next durable commit makes this one durable too; it can never outlive an earlier durable one.
 */
export function lazyTransaction(db: Db, fn: () => void): void {
  db.pragma('synchronous = OFF');
  try {
    db.transaction(fn)();
  } finally {
    db.pragma('synchronous = FULL');
  }
}

function migrate(db: Db): void {
  const version = Number(db.pragma('user_version', { simple: true }));
  assert(version <= MIGRATIONS.length, `meta.db schema version ${version} is newer than this build (${MIGRATIONS.length})`);
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]);
      if (v === 0) createRoot(db);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

function createRoot(db: Db): void {
  const t = nowNs();
  db.prepare(`INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns)
              VALUES (?, 'dir', ?, 0, 0, 0, 2, ?, ?, ?, ?, ?)`).run(ROOT_INO, S_IFDIR | 0o755, ROOT_INO, t, t, t, t);
}
