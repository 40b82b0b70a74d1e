// SQLite's schema migrations (DESIGN §9 "Engines"): MIGRATIONS[v - 1] takes meta.db from schema version
// v - 1 (PRAGMA user_version) to v, in one transaction with its version (store/meta/meta.ts migrate).
// Released migrations never change: a store made by any build since v1 upgrades through them. A new
// store is made at once from schema.sql, the whole current schema, which test/store/meta/schema.test.ts
// checks against these: a change of schema is a new migration here and the same change there.

export const MIGRATIONS: readonly string[] = [
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
  // v3 (DESIGN §5 prefix rule): files whose chunk map may hold bytes stored past their committed size.
  `CREATE TABLE past_size(ino INTEGER PRIMARY KEY);`,
  // v4 (spec §11, DESIGN §5 "Small files"): a small file's inode holds its Slice pointer; containers;
  // the highest inode number ever deleted (numbers are never reused) and its trigger.
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
  // v5: FIFOs, sockets and character/block devices are inodes of their own types, devices keep
  // their number (rdev). SQLite cannot change a CHECK constraint in place, so the inodes table is
  // rebuilt with the same columns plus rdev (rowids, i.e. inode numbers, kept). The v4 index and
  // trigger on inodes go with the old table, so they are made again; the trigger is dropped first so
  // the copy's DROP TABLE cannot touch ino_high.
  `
  DROP TRIGGER inodes_high;
  CREATE TABLE inodes_v5(
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
    rdev INTEGER NOT NULL DEFAULT 0      -- chardev/blockdev: the device number as the kernel encodes it
  );
  INSERT INTO inodes_v5(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns,
    layout, chunk_size, bitrot_block, ec_block_size, placement_seed, cluster_map_epoch, symlink_target,
    slice_container, slice_offset, slice_length, slice_cookie)
    SELECT ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns,
      layout, chunk_size, bitrot_block, ec_block_size, placement_seed, cluster_map_epoch, symlink_target,
      slice_container, slice_offset, slice_length, slice_cookie FROM inodes;
  DROP TABLE inodes;
  ALTER TABLE inodes_v5 RENAME TO inodes;
  CREATE INDEX inodes_by_slice ON inodes(slice_container, slice_offset) WHERE slice_container IS NOT NULL;
  CREATE TRIGGER inodes_high AFTER DELETE ON inodes BEGIN
    UPDATE ino_high SET ino = max(ino, old.ino) WHERE k = 0;
  END;`,
  // v6: times outside signed 64-bit nanoseconds (store/meta/far-times.ts): a *_far column per time and
  // a trigger clearing it when its *_ns column gets any value but a clamp.
  `
  ALTER TABLE inodes ADD COLUMN atime_far TEXT;
  CREATE TRIGGER inodes_atime_near AFTER UPDATE OF atime_ns ON inodes
    WHEN new.atime_far IS NOT NULL AND new.atime_ns NOT IN (-9223372036854775807, 9223372036854775807)
  BEGIN
    UPDATE inodes SET atime_far = NULL WHERE ino = new.ino;
  END;

  ALTER TABLE inodes ADD COLUMN mtime_far TEXT;
  CREATE TRIGGER inodes_mtime_near AFTER UPDATE OF mtime_ns ON inodes
    WHEN new.mtime_far IS NOT NULL AND new.mtime_ns NOT IN (-9223372036854775807, 9223372036854775807)
  BEGIN
    UPDATE inodes SET mtime_far = NULL WHERE ino = new.ino;
  END;

  ALTER TABLE inodes ADD COLUMN ctime_far TEXT;
  CREATE TRIGGER inodes_ctime_near AFTER UPDATE OF ctime_ns ON inodes
    WHEN new.ctime_far IS NOT NULL AND new.ctime_ns NOT IN (-9223372036854775807, 9223372036854775807)
  BEGIN
    UPDATE inodes SET ctime_far = NULL WHERE ino = new.ino;
  END;`,
  // v7: what fallocate allocated, per chunk (store/meta/prealloc.ts), gone with its inode.
  `
  CREATE TABLE prealloc(ino INTEGER NOT NULL, chunk_index INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY(ino, chunk_index)) WITHOUT ROWID;
  CREATE TRIGGER inodes_prealloc AFTER DELETE ON inodes BEGIN
    DELETE FROM prealloc WHERE ino = old.ino;
  END;`,
  // v8 (DESIGN §10): a transformed chunk version's stored form beside its raw length: stored_len =
  // chunk_logical_len of its shards, stored_flags = spec §3.1 bits 1, 2; NULL / 0: stored raw.
  `ALTER TABLE chunks ADD COLUMN stored_len INTEGER;
   ALTER TABLE chunks ADD COLUMN stored_flags INTEGER NOT NULL DEFAULT 0;`,
  // v9: the store's id (DESIGN §4 "Identity"); migrate records it in the same transaction.
  `CREATE TABLE store_id(k INTEGER PRIMARY KEY CHECK (k = 0), uuid TEXT NOT NULL) WITHOUT ROWID;`,
  // v10 (DESIGN §10 "log records"): whether an intent's span is a sealed log record (1) or the bytes
  // as they are (0: every row an older build wrote, which replays as before).
  `ALTER TABLE intents ADD COLUMN span_sealed INTEGER NOT NULL DEFAULT 0;`,
  // v11: no change on SQLite. PostgreSQL's v11 (postgres/migrations.ts) indexes intents by inode and
  // merges triggers, for its server's cost per statement; SQLite scans its few intents in its page
  // cache, where an index would write one more page per intent at every commit.
  '',
];
