// Schema v5: FIFOs, sockets and character/block devices are inodes of their own types,
// and devices keep their device number (rdev). SQLite cannot change a CHECK constraint in place, so
// the inodes table is rebuilt with the same columns plus rdev (rowids, i.e. inode numbers, kept).
// The v4 index and trigger on inodes go with the old table, so they are made again here; the
// trigger is dropped first so the copy's DROP TABLE cannot touch ino_high.
export const MIGRATION_V5_SPECIAL_FILES = {
  sqlite: `
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
  // PostgreSQL changes a CHECK constraint in place; rows, index and trigger stay.
  postgres: `ALTER TABLE inodes DROP CONSTRAINT inodes_type_check,
    ADD CONSTRAINT inodes_type_check CHECK (type IN ('file','dir','symlink','fifo','socket','chardev','blockdev')),
    ADD COLUMN rdev BIGINT NOT NULL DEFAULT 0;`,
};
