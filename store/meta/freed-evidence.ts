// What the metadata proves about a shard file it does not name (DESIGN §4 "Identity", the leak scan of
// store/upkeep/leak-scan.ts): a shard is freed only when the metadata shows it once allocated that
// version and let it go: its file id is below the inode allocation watermark (numbers are never reused,
// table ino_high) and the inode is gone, or the inode lives and the version is at most the chunk's
// max_version (versions are never reused either) and not the live one. Anything else, e.g. a file id or
// a version the metadata never handed out (metadata older than the disks, or another store's), proves
// nothing: such a file is unknown, reported and never removed.
import { Db, NEXT_INO_SQL } from './meta';

export type ShardEvidence = 'freed' | 'unknown';

/** Read-only questions of the inode and chunk tables; one per shard file the scan cannot account for. */
export class FreedEvidence {
  private readonly s;
  /** The highest inode number ever allocated when the scan started (files made since are above it). */
  readonly watermark: number;

  constructor(db: Db) {
    this.s = {
      watermark: db.prepare({
        sqlite: `SELECT ${NEXT_INO_SQL.sqlite} - 1 AS w`,
        postgres: `SELECT ${NEXT_INO_SQL.postgres} - 1 AS w`,
      }),
      inode: db.prepare('SELECT 1 AS live FROM inodes WHERE ino = ?'),
      chunk: db.prepare('SELECT version, max_version FROM chunks WHERE ino = ? AND chunk_index = ?'),
    };
    const w = this.s.watermark.get() as { w: bigint | null } | undefined;
    this.watermark = Number(w?.w ?? 0);
  }

  /** Whether the metadata proves shard (fileId, chunkIndex, version) freed; the caller found it unaccounted for. */
  of(fileId: bigint, chunkIndex: bigint, version: bigint): ShardEvidence {
    if (fileId > BigInt(this.watermark)) return 'unknown';
    const ino = Number(fileId);
    if (this.s.inode.get(ino) === undefined) return 'freed';
    const row = this.s.chunk.get(ino, Number(chunkIndex)) as { version: bigint; max_version: bigint } | undefined;
    if (row === undefined) return 'unknown';
    return version !== BigInt(row.version) && version <= BigInt(row.max_version) ? 'freed' : 'unknown';
  }
}
