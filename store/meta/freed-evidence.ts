// What the metadata proves about a shard file it does not name (DESIGN §4 "Identity", the leak scan of
// store/upkeep/leak-scan.ts): a shard is freed only when the metadata shows it once allocated that
// version and let it go: its file id is below the inode allocation watermark (numbers are never reused,
// table ino_high) and the inode is gone, or the inode lives and the version is at most the chunk's
// max_version (versions are never reused either) and not the live one. Anything else, e.g. a file id or
// a version the metadata never handed out (metadata older than the disks, or another store's), proves
// nothing: such a file is unknown, reported and never removed; so does a file id, or a version of a
// file, an opener skipped because its metadata was older than the disks (store/restored-meta.ts).
import type { Db } from './sql-engine';
import type { InodeEvidence } from './data-ops';
import { dataOpsOf } from './engine-open';
import { Skipped, inBoxes, inRanges } from '../disk-ids';

export type ShardEvidence = 'freed' | 'unknown';

/** Read-only questions of the inode and chunk tables; one per shard file the scan cannot account for. */
export class FreedEvidence {
  private readonly rows: InodeEvidence;
  /** The highest inode number ever allocated when the scan started (files made since are above it). */
  readonly watermark: number;

  constructor(
    db: Db,
    private readonly skipped: Skipped = { inos: [], versions: [] },
  ) {
    this.rows = dataOpsOf(db).inodeEvidence();
    this.watermark = this.rows.highestIno();
  }

  /** Whether the metadata proves shard (fileId, chunkIndex, version) freed; the caller found it unaccounted for. */
  of(fileId: bigint, chunkIndex: bigint, version: bigint): ShardEvidence {
    if (fileId > BigInt(this.watermark) || inRanges(this.skipped.inos, fileId)) return 'unknown';
    if (inBoxes(this.skipped.versions, fileId, version)) return 'unknown';
    const ino = Number(fileId);
    if (!this.rows.inodeExists(ino)) return 'freed';
    const row = this.rows.chunkVersions(ino, Number(chunkIndex));
    if (row === undefined) return 'unknown';
    return version !== row.version && version <= row.maxVersion ? 'freed' : 'unknown';
  }
}
