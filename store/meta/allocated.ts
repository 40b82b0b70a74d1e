// What a file holds, by logical bytes (DESIGN §5 "One view"): st_blocks and SEEK_DATA /
// SEEK_HOLE answer from the chunk map, where a chunk with version 0 (or no row) is a hole (DESIGN §4),
// and a live chunk holds [c x chunk size, + its logical length). A small file packed as a needle
// (spec §11.3) holds its whole length. Shard bytes (replicas, parity, headers) are not counted:
// st_blocks says what the file allocates, as on a local file system, not what redundancy costs.
//
// DESIGN §5 "One view": the mount passes the byte ranges it holds but has not stored yet (buffered,
// in a close batch, being stored). Each is answered as what storing it will leave in the map, so an
// answer never changes when the bytes reach the disks: a chunk written at [a, b) holds
// [chunk start, max(its old length, b)) afterwards (store/chunks/chunk-writer.ts writes the hole before a
// as zeros), and a file that is or becomes a needle holds its whole size.
//
// So holes come in whole chunks, from a chunk's stored length to its end: the
// format keeps every byte of a chunk from its start (spec §8), so a sub-chunk hole would be zeros
// the disks hold. st_blksize is the chunk size to match (fs/core.ts).
//
// fallocate'd space (store/meta/prealloc.ts) counts like a write of zeros: a chunk holds
// [its start, max(stored, allocated, pending)); what was allocated past the size counts too.
import type { ChunkMap } from './chunk-map';
import type { Db } from './meta';
import type { Preallocated } from './prealloc';
import type { AllocatedReads, AllocatedRow } from './data-ops';
import { dataOpsOf } from './engine-open';

export type SeekWhat = 'data' | 'hole';

/** A byte range the mount holds in memory, not yet committed to the chunk map: [offsetBytes, endBytes). */
export interface PendingRange {
  offsetBytes: number;
  endBytes: number;
}

/** Chunks one answer may visit for pending ranges: a bound on the loop (1 GiB of 4 MiB chunks is 256). */
const PENDING_CHUNKS_MAX = 1 << 20;

/** chunk index -> logical length after the pending bytes are stored. */
type ChunkLengths = Map<number, number>;

export class Allocated {
  private readonly rows: AllocatedReads;
  constructor(
    db: Db,
    private readonly map: ChunkMap,
    private readonly smallFileMaxBytes: number,
    private readonly prealloc: Preallocated,
  ) {
    // Keyed by ino alone (the type checked by fileRow): PostgreSQL's row cache answers it (postgres/row-cache.ts).
    this.rows = dataOpsOf(db).allocatedReads();
  }

  /** A regular file's row, or undefined (no such inode, or not a regular file). */
  private fileRow(ino: number): AllocatedRow | undefined {
    const f = this.rows.fileRow(ino);
    return f === undefined || f.type !== 'file' ? undefined : f;
  }

  /**
   * Logical bytes of a file's live chunks (or its needle), with the pending ranges as stored.
   * sizeBytes: the size the mount shows (with buffered writes); default: the committed one.
   */
  bytes(ino: number, pending: readonly PendingRange[] = [], sizeBytes?: number): number {
    if (sizeBytes === 0 && !this.prealloc.has(ino)) return 0; // no query (create, chmod of empty files)
    // Every byte below the size is pending (a file written whole, not stored yet: tar sets its owner,
    // mode and times before its close): all of it is data, whatever is stored. No query.
    const first = pending[0];
    const allPending = first !== undefined && first.offsetBytes === 0 && first.endBytes >= (sizeBytes ?? Infinity);
    if (allPending && !this.prealloc.has(ino)) return sizeBytes!;
    const f = this.fileRow(ino);
    if (f === undefined) return 0;
    const size = sizeBytes ?? Math.max(Number(f.size), this.map.pendingSize(ino) ?? 0);
    const extra = this.prealloc.extra(ino, size, Number(f.chunk_size), this.needleAsChunk(f));
    if (this.prealloc.has(ino) && this.map.hasPending(ino)) extra.insideBytes = this.insideOverGroup(ino, f, size);
    if (this.wholeIsData(ino, f, pending, size)) return size + extra.beyondBytes;
    let n = this.liveBytes(ino) + this.needleAsChunk(f) + extra.insideBytes;
    for (const [c, lengthBytes] of this.pendingChunks(f, pending))
      n += Math.max(0, lengthBytes - this.heldLength(ino, f, c, size));
    return Math.min(size, n) + extra.beyondBytes; // chunks stored past the size are not the file's (DESIGN §5)
  }

  /**
   * What fallocate'd space adds below sizeBytes over the chunks' lengths with a transaction group's
   * rows over the committed ones (DESIGN §5 one view): Preallocated.extra sees only committed lengths,
   * so a chunk a group wrote into allocated space counted twice until the group's commit.
   */
  private insideOverGroup(ino: number, f: AllocatedRow, sizeBytes: number): number {
    const cs = Number(f.chunk_size);
    let n = 0;
    for (const [c, lengthBytes] of this.prealloc.from(ino, 0)) {
      const allocated = Math.min(lengthBytes, Math.max(0, sizeBytes - c * cs));
      n += Math.max(0, allocated - this.storedLength(ino, f, c));
    }
    return n;
  }

  /** The live chunks' logical bytes, a transaction group's rows over the committed ones (DESIGN §5). */
  private liveBytes(ino: number): number {
    if (this.map.hasPending(ino)) return this.map.live(ino).reduce((n, r) => n + r.logicalLenBytes, 0);
    return this.rows.liveChunkBytes(ino);
  }

  /** What chunk c holds below sizeBytes without the pending ranges: stored or allocated. */
  private heldLength(ino: number, f: AllocatedRow, c: number, sizeBytes: number): number {
    const allocated = Math.min(this.prealloc.length(ino, c), Math.max(0, sizeBytes - c * Number(f.chunk_size)));
    return Math.max(this.storedLength(ino, f, c), allocated);
  }

  /** The logical length chunk c holds now (0: a hole); a needle counts as chunk 0 (it becomes that when the file grows). */
  storedLength(ino: number, f: AllocatedRow | undefined, c: number): number {
    const row = this.map.get(ino, c);
    if (row !== null && row.version > 0n) return row.logicalLenBytes;
    return c === 0 && f !== undefined ? this.needleAsChunk(f) : 0;
  }

  /** Chunk c's logical length for a caller outside (fs's whole-chunk merge); 0 for a hole or no file. */
  chunkLength(ino: number, c: number): number {
    return this.storedLength(ino, this.fileRow(ino), c);
  }

  /**
   * lseek(SEEK_DATA / SEEK_HOLE) from offsetBytes in a file of sizeBytes: the first byte of data (or
   * of a hole) at or after it; the end of the file is a hole. null: none (ENXIO, as lseek(2) says
   * for an offset at or past the end, or no data after it).
   */
  seek(
    ino: number,
    offsetBytes: number,
    sizeBytes: number,
    what: SeekWhat,
    pending: readonly PendingRange[] = [],
  ): number | null {
    if (offsetBytes < 0 || offsetBytes >= sizeBytes) return null;
    const f = this.fileRow(ino);
    if (f === undefined) return null;
    if (this.wholeIsData(ino, f, pending, sizeBytes)) return what === 'data' ? offsetBytes : sizeBytes;
    const cs = Number(f.chunk_size);
    let pos = offsetBytes;
    // Only data chunks from the offset's chunk on are visited (a hole costs nothing).
    for (const [c, lengthBytes] of this.dataChunks(ino, f, pending, Math.floor(offsetBytes / cs))) {
      const start = c * cs;
      if (start >= sizeBytes) break; // allocated past the size (KEEP_SIZE), or stored past it: not the file's
      const end = Math.min(start + lengthBytes, sizeBytes);
      if (end <= pos) continue;
      if (what === 'data') return Math.max(pos, start);
      if (start > pos) return pos; // a hole before this chunk
      pos = end;
      if (pos >= sizeBytes) break;
    }
    return what === 'data' ? null : Math.min(pos, sizeBytes);
  }

  /**
   * The file is all data: it is a needle (spec §11.3: a needle holds exactly the file's bytes), or it
   * will be one once its pending bytes are stored (no chunks, nothing committed, small enough:
   * store/small/small-files.ts takes such a write).
   */
  private wholeIsData(ino: number, f: AllocatedRow, pending: readonly PendingRange[], sizeBytes: number): boolean {
    if (this.smallFileMaxBytes === 0 || sizeBytes > this.smallFileMaxBytes) return false;
    if (f.slice_container !== null) return true;
    return pending.length > 0 && Number(f.size) === 0 && this.map.live(ino).length === 0;
  }

  /** A needle of a file past small_file_max is about to move to chunks (store/small/small-files.ts moveToChunks). */
  private needleAsChunk(f: AllocatedRow): number {
    return f.slice_container === null ? 0 : Number(f.slice_length ?? 0n);
  }

  /** Per chunk touched by the pending ranges: its logical length once they are stored (before max with the old one). */
  private pendingChunks(f: AllocatedRow, pending: readonly PendingRange[]): ChunkLengths {
    const cs = Number(f.chunk_size);
    const out: ChunkLengths = new Map();
    let visited = 0;
    for (const r of pending) {
      for (
        let c = Math.floor(r.offsetBytes / cs);
        c * cs < r.endBytes && visited < PENDING_CHUNKS_MAX;
        c++, visited++
      ) {
        out.set(c, Math.max(out.get(c) ?? 0, Math.min(cs, r.endBytes - c * cs)));
      }
    }
    return out;
  }

  /** [chunk index, logical length] of every chunk holding data from fromChunk on, stored, pending or allocated, ascending. */
  private dataChunks(
    ino: number,
    f: AllocatedRow,
    pending: readonly PendingRange[],
    fromChunk: number,
  ): Array<[number, number]> {
    const lengths: ChunkLengths = new Map();
    for (const r of this.map.live(ino, fromChunk)) lengths.set(r.chunkIndex, r.logicalLenBytes);
    const needle = this.needleAsChunk(f);
    if (fromChunk === 0 && needle > 0) lengths.set(0, Math.max(lengths.get(0) ?? 0, needle));
    for (const [c, lengthBytes] of this.pendingChunks(f, pending)) {
      if (c >= fromChunk) lengths.set(c, Math.max(lengths.get(c) ?? 0, lengthBytes));
    }
    for (const [c, lengthBytes] of this.prealloc.from(ino, fromChunk))
      lengths.set(c, Math.max(lengths.get(c) ?? 0, lengthBytes));
    return [...lengths].sort((a, b) => a[0] - b[0]);
  }
}
