// Whole-store walks of the metadata for scrub, fsck and status (DESIGN §7): read-only queries across
// tables, kept here so that no module outside meta/ writes SQL. Each is a pass over
// a table, not a per-request path, so the statements are prepared per call.
import { Db, ROOT_INO } from './meta';

/**
 * A live chunk and its file's layout (scrub sizes its pass by the shard bytes of each); payloadLenBytes:
 * what its shards hold (the stored length of a transformed chunk, DESIGN §10).
 */
export interface LiveChunk {
  ino: number;
  chunkIndex: number;
  logicalLenBytes: number;
  payloadLenBytes: number;
  layoutText: string;
}

/** Every live chunk (version > 0, DESIGN §4), by inode and chunk index. */
export function liveChunks(db: Db): LiveChunk[] {
  const rows = db
    .prepare(
      `SELECT c.ino, c.chunk_index, c.logical_len, coalesce(c.stored_len, c.logical_len) AS payload_len, i.layout FROM chunks c JOIN inodes i ON i.ino = c.ino
                           WHERE c.version > 0 ORDER BY c.ino, c.chunk_index`,
    )
    .all() as Array<Record<string, bigint | string>>;
  return rows.map((r) => ({
    ino: Number(r.ino),
    chunkIndex: Number(r.chunk_index),
    logicalLenBytes: Number(r.logical_len),
    payloadLenBytes: Number(r.payload_len),
    layoutText: String(r.layout),
  }));
}

/** Every inode packed as a needle (spec §11.3), in container order so a walk reads each container forward. */
export function packedInodes(db: Db): number[] {
  const rows = db
    .prepare('SELECT ino FROM inodes WHERE slice_container IS NOT NULL ORDER BY slice_container, slice_offset')
    .all() as Array<{ ino: bigint }>;
  return rows.map((r) => Number(r.ino));
}

/** Inodes no name, orphan mark or container row accounts for (fsck), at most limit. */
export function unaccountedInodes(db: Db, limit: number): number[] {
  const rows = db
    .prepare(
      `SELECT i.ino AS id FROM inodes i WHERE i.ino != ${ROOT_INO}
    AND NOT EXISTS (SELECT 1 FROM dirents d WHERE d.ino = i.ino) AND NOT EXISTS (SELECT 1 FROM orphans o WHERE o.ino = i.ino)
    AND NOT EXISTS (SELECT 1 FROM containers c WHERE c.id = i.ino) ORDER BY i.ino LIMIT ?`,
    )
    .all(limit) as Array<{ id: bigint }>;
  return rows.map((r) => Number(r.id));
}

/** Container rows whose inode is gone (fsck), at most limit. */
export function containerRowsWithoutInode(db: Db, limit: number): number[] {
  const rows = db
    .prepare(
      'SELECT c.id AS id FROM containers c WHERE NOT EXISTS (SELECT 1 FROM inodes i WHERE i.ino = c.id) ORDER BY c.id LIMIT ?',
    )
    .all(limit) as Array<{ id: bigint }>;
  return rows.map((r) => Number(r.id));
}

/** Regular files per layout, containers not counted (status). */
export function layoutsInUse(db: Db): Array<{ layout: string; files: number }> {
  const rows = db
    .prepare(
      `SELECT layout, count(*) AS n FROM inodes WHERE type = 'file' AND ino NOT IN (SELECT id FROM containers)
                           GROUP BY layout ORDER BY layout`,
    )
    .all() as Array<{ layout: string; n: bigint }>;
  return rows.map((r) => ({ layout: r.layout, files: Number(r.n) }));
}
