// What a file holds in the store, by logical bytes (issue 15 item 12): st_blocks and SEEK_DATA /
// SEEK_HOLE answer from the chunk map, where a chunk with version 0 (or no row) is a hole (DESIGN §4),
// and a live chunk holds [c x chunk size, + its logical length). A small file packed as a needle
// (spec §11.3) holds its whole length. Shard bytes (replicas, parity, headers) are not counted:
// st_blocks says what the file allocates, as on a local file system, not what redundancy costs.
import type { ChunkEnv } from './chunk-env';

export type SeekWhat = 'data' | 'hole';

export class Allocated {
  private readonly s;
  constructor(private readonly env: ChunkEnv) {
    this.s = {
      bytes: env.db.prepare(`SELECT (SELECT coalesce(sum(logical_len), 0) FROM chunks WHERE ino = @ino AND version > 0)
                             + coalesce((SELECT slice_length FROM inodes WHERE ino = @ino), 0) AS n`),
      file: env.db.prepare("SELECT chunk_size, slice_container FROM inodes WHERE ino = ? AND type = 'file'"),
    };
  }

  /** Logical bytes of a file's live chunks (or its needle). */
  bytes(ino: number): number {
    return Number((this.s.bytes.get({ ino }) as { n: bigint }).n);
  }

  /**
   * lseek(SEEK_DATA / SEEK_HOLE) from offsetBytes in a file of sizeBytes: the first byte of data (or
   * of a hole) at or after it; the end of the file is a hole. null: none (ENXIO, as lseek(2) says
   * for an offset at or past the end, or no data after it).
   */
  seek(ino: number, offsetBytes: number, sizeBytes: number, what: SeekWhat): number | null {
    if (offsetBytes < 0 || offsetBytes >= sizeBytes) return null;
    const f = this.s.file.get(ino) as { chunk_size: bigint; slice_container: bigint | null } | undefined;
    if (f === undefined) return null;
    if (f.slice_container !== null) return what === 'data' ? offsetBytes : sizeBytes; // a needle: all data
    const cs = Number(f.chunk_size);
    // Only live chunks from the offset's chunk on are visited (a hole costs nothing).
    let pos = offsetBytes;
    for (const r of this.env.map.live(ino, Math.floor(offsetBytes / cs))) {
      const start = r.chunkIndex * cs;
      const end = Math.min(start + r.logicalLenBytes, sizeBytes);
      if (end <= pos) continue;
      if (what === 'data') return Math.max(pos, start);
      if (start > pos) return pos; // a hole before this chunk
      pos = end;
      if (pos >= sizeBytes) break;
    }
    return what === 'data' ? null : Math.min(pos, sizeBytes);
  }
}
