-- The whole current metadata schema of a store on SQLite (meta.db; DESIGN §9): what mkfs and
-- `chunkfs meta copy` make, at once, for a new store (store/meta/meta.ts createSchema runs this file,
-- then adds the root directory and the store's id). A store made by an older build reaches the same
-- schema through store/meta/sqlite/migrations.ts; test/store/meta/schema.test.ts checks that both
-- ways end equal. A change of schema is a new migration there AND the same change here, with
-- user_version one higher.

-- Inodes of every type; files keep their Layout (spec §3 echo fields), small files their Slice
-- pointer (spec §11: container, offset, length, cookie), devices their number (rdev as the kernel
-- encodes it). A time outside signed 64-bit nanoseconds keeps its decimal nanoseconds in *_far and a
-- clamp in *_ns (store/meta/far-times.ts).
CREATE TABLE inodes(
  ino INTEGER PRIMARY KEY,
  type TEXT NOT NULL CHECK (type IN ('file','dir','symlink','fifo','socket','chardev','blockdev')),
  mode INTEGER NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL,
  size INTEGER NOT NULL DEFAULT 0, nlink INTEGER NOT NULL,
  parent INTEGER,
  atime_ns INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, birth_ns INTEGER NOT NULL,
  layout TEXT, chunk_size INTEGER, bitrot_block INTEGER, ec_block_size INTEGER,
  placement_seed INTEGER, cluster_map_epoch INTEGER,
  symlink_target TEXT,
  slice_container INTEGER, slice_offset INTEGER, slice_length INTEGER, slice_cookie INTEGER,
  rdev INTEGER NOT NULL DEFAULT 0,
  atime_far TEXT, mtime_far TEXT, ctime_far TEXT
);
CREATE INDEX inodes_by_slice ON inodes(slice_container, slice_offset) WHERE slice_container IS NOT NULL;

CREATE TABLE dirents(parent INTEGER NOT NULL, name TEXT NOT NULL, ino INTEGER NOT NULL,
  PRIMARY KEY(parent, name)) WITHOUT ROWID;
CREATE INDEX dirents_by_ino ON dirents(ino);

CREATE TABLE xattrs(ino INTEGER NOT NULL, name TEXT NOT NULL, value BLOB NOT NULL,
  PRIMARY KEY(ino, name)) WITHOUT ROWID;

-- The chunk map: version 0 = no live data (hole); max_version never decreases, so a chunk version is
-- never reused, even after truncate (no stale shard can verify). stored_len, stored_flags: a
-- transformed version's stored form (DESIGN §10; NULL / 0: stored raw).
CREATE TABLE chunks(ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL,
  version INTEGER NOT NULL, logical_len INTEGER NOT NULL, max_version INTEGER NOT NULL,
  stored_len INTEGER, stored_flags INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(ino, chunk_index)) WITHOUT ROWID;

-- Journaled write intents (DESIGN §5) with the new bytes of their block span, sealed (1) when the
-- chunk's layout encrypts (DESIGN §10 "log records").
CREATE TABLE intents(id INTEGER PRIMARY KEY, ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL,
  version INTEGER NOT NULL, first_block INTEGER NOT NULL, last_block INTEGER NOT NULL, created_ns INTEGER NOT NULL,
  span BLOB, span_sealed INTEGER NOT NULL DEFAULT 0);

CREATE TABLE heal_queue(ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL, version INTEGER NOT NULL,
  shard_index INTEGER NOT NULL, reason TEXT NOT NULL, queued_ns INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(ino, chunk_index, version, shard_index)) WITHOUT ROWID;

CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;

-- nlink 0, data not yet deleted.
CREATE TABLE orphans(ino INTEGER PRIMARY KEY);

-- Chunk versions whose shards are to be deleted in the background, with what their paths need once
-- the inode is gone.
CREATE TABLE reclaim(ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL, version INTEGER NOT NULL,
  layout TEXT NOT NULL, placement_seed INTEGER NOT NULL, cluster_map_epoch INTEGER NOT NULL,
  queued_ns INTEGER NOT NULL, PRIMARY KEY(ino, chunk_index, version)) WITHOUT ROWID;

-- Files whose chunk map may hold bytes stored past their committed size (DESIGN §5 prefix rule).
CREATE TABLE past_size(ino INTEGER PRIMARY KEY);

-- Small files' containers (spec §11; store/meta/containers.ts).
CREATE TABLE containers(id INTEGER PRIMARY KEY, pack_class TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('open','full','sealing','sealed')),
  used_bytes INTEGER NOT NULL DEFAULT 0, dead_bytes INTEGER NOT NULL DEFAULT 0, capacity_bytes INTEGER NOT NULL,
  sealed_from INTEGER);

-- Inode numbers are never reused (a reused number would reuse chunk versions whose old shards may
-- still wait on the reclaim queue under another layout): the highest number ever deleted.
CREATE TABLE ino_high(k INTEGER PRIMARY KEY CHECK (k = 0), ino INTEGER NOT NULL);
INSERT INTO ino_high(k, ino) VALUES (0, 1);
CREATE TRIGGER inodes_high AFTER DELETE ON inodes BEGIN
  UPDATE ino_high SET ino = max(ino, old.ino) WHERE k = 0;
END;

-- A far time's column is cleared whenever its *_ns column gets any value but a clamp (far-times.ts:
-- NEAR_NS_MIN, NEAR_NS_MAX).
CREATE TRIGGER inodes_atime_near AFTER UPDATE OF atime_ns ON inodes
  WHEN new.atime_far IS NOT NULL AND new.atime_ns NOT IN (-9223372036854775807, 9223372036854775807)
BEGIN
  UPDATE inodes SET atime_far = NULL WHERE ino = new.ino;
END;
CREATE TRIGGER inodes_mtime_near AFTER UPDATE OF mtime_ns ON inodes
  WHEN new.mtime_far IS NOT NULL AND new.mtime_ns NOT IN (-9223372036854775807, 9223372036854775807)
BEGIN
  UPDATE inodes SET mtime_far = NULL WHERE ino = new.ino;
END;
CREATE TRIGGER inodes_ctime_near AFTER UPDATE OF ctime_ns ON inodes
  WHEN new.ctime_far IS NOT NULL AND new.ctime_ns NOT IN (-9223372036854775807, 9223372036854775807)
BEGIN
  UPDATE inodes SET ctime_far = NULL WHERE ino = new.ino;
END;

-- What fallocate allocated, per chunk (store/meta/prealloc.ts); gone with its inode.
CREATE TABLE prealloc(ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL, length INTEGER NOT NULL,
  PRIMARY KEY(ino, chunk_index)) WITHOUT ROWID;
CREATE TRIGGER inodes_prealloc AFTER DELETE ON inodes BEGIN
  DELETE FROM prealloc WHERE ino = old.ino;
END;

-- The store's id (DESIGN §4 "Identity"): one row, written by mkfs.
CREATE TABLE store_id(k INTEGER PRIMARY KEY CHECK (k = 0), uuid TEXT NOT NULL) WITHOUT ROWID;

PRAGMA user_version = 11;
