// The data path's questions of the inode rows on PostgreSQL (DESIGN §9 "Operations", "Fewer round
// trips"): the shared statements (sql/data-ops.ts), with the reads of an inode row answered from the
// row the lease holder keeps (PgDb.inodeRow) and every write of a kept table saying what it wrote
// (row-cache.ts): slice pointers patch the row, a new inode's first chunk row ends its "no chunks
// yet", a new inode's chunks are answered empty without asking, and each write of a chunk row says
// what it did to the live chunks' lengths st_blocks sums.
import { assert } from '../../../src/errors';
import { Slice } from '../../../src/slice';
import type { SqlStatement } from '../sql-engine';
import type { AllocatedReads, AllocatedRow, FallocateReads, InodeEvidence } from '../data-ops';
import { SliceRows, SliceValues, sliceOf } from '../slice-rows';
import type { ChunkRows } from '../chunk-rows';
import type { FileRows } from '../file-rows';
import { PgFileRows } from './file-rows';
import type { ChunkRow, StoredForm } from '../chunk-map';
import { SqlDataOps, SqlInodeEvidence } from '../sql/data-ops';
import { SqlSliceRows } from '../sql/slice-rows';
import { SqlChunkRows } from '../sql/chunk-rows';
import { POSTGRES_DIALECT } from './dialect';
import { PgDb } from './engine';
import { rowObject, rowValues } from './decode';
import { asText, applyChange, changing } from './inode-change';

const SLICE_COLUMNS = ['slice_container', 'slice_offset', 'slice_length', 'slice_cookie'] as const;
const ALLOCATED_COLUMNS = ['type', 'size', 'chunk_size', 'slice_container', 'slice_length'] as const;
const CHUNK_SIZE_COLUMNS = ['type', 'chunk_size'] as const;
const SIZE_COLUMNS = ['size'] as const;
/** A file's live chunks' lengths, kept whole (row-cache.ts) where SQL engines alike read their sum. */
const LIVE_LENGTHS_SQL = 'SELECT chunk_index, logical_len FROM chunks WHERE ino = ? AND version > 0';
/** A deleted file's chunk rows and heal queue entries in one statement (one execution on the server, not two). */
const DROP_CHUNKS_SQL = 'WITH h AS (DELETE FROM heal_queue WHERE ino = @ino) DELETE FROM chunks WHERE ino = @ino';

export class PgDataOps extends SqlDataOps {
  constructor(private readonly pg: PgDb) {
    super(pg, POSTGRES_DIALECT);
  }
  override fileRows(): FileRows {
    return new PgFileRows(this.pg);
  }
  override sliceRows(): SliceRows {
    return new PgSliceRows(this.pg);
  }
  override chunkRows(): ChunkRows {
    return new PgChunkRows(this.pg);
  }
  override allocatedReads(): AllocatedReads {
    return new PgAllocatedReads(this.pg);
  }
  override fallocateReads(): FallocateReads {
    return new PgFallocateReads(this.pg);
  }
  override inodeEvidence(): InodeEvidence {
    return new PgInodeEvidence(this.pg);
  }
}

/** The columns of a slice pointer as written (null: none). */
function sliceChange(s: Slice | null): Record<string, string | null> {
  return {
    slice_container: s === null ? null : asText(s.containerId),
    slice_offset: s === null ? null : asText(s.offsetBytes),
    slice_length: s === null ? null : asText(s.lengthBytes),
    slice_cookie: s === null ? null : asText(s.cookie),
  };
}

class PgSliceRows extends SqlSliceRows {
  constructor(private readonly pg: PgDb) {
    super(pg);
  }
  override get(ino: number): Slice | null {
    const r = this.pg.inodeRow(ino);
    return r === null ? null : sliceOf(rowObject(r, SLICE_COLUMNS) as SliceValues);
  }
  override set(ino: number, slice: Slice | null): void {
    this.pg.following(() => super.set(ino, slice));
    this.pg.rowCache.patchInode(ino, changing(sliceChange(slice)));
  }
  override setIf(ino: number, from: Slice, to: Slice): boolean {
    const moved = this.pg.following(() => super.setIf(ino, from, to));
    // The statement's WHERE: the row still points where from does.
    const change = sliceChange(to);
    this.pg.rowCache.patchInode(ino, (r) => {
      const [c, o, , k] = rowValues(r, SLICE_COLUMNS);
      const same = c === BigInt(from.containerId) && o === BigInt(from.offsetBytes) && k === BigInt(from.cookie);
      return same ? applyChange(r, change) : r;
    });
    return moved;
  }
  override moveAll(from: number, to: number): number {
    const n = this.pg.following(() => super.moveAll(from, to));
    const change = { slice_container: asText(to) };
    // Every row that pointed into from.
    this.pg.rowCache.patchInode(null, (r) =>
      rowValues(r, SLICE_COLUMNS)[0] === BigInt(from) ? applyChange(r, change) : r,
    );
    return n;
  }
}

class PgChunkRows extends SqlChunkRows {
  /** Prepared here: a prepare waits for every reply unread (engine.ts), a delete should not. */
  private readonly dropChunks: SqlStatement;
  constructor(private readonly pg: PgDb) {
    super(pg, POSTGRES_DIALECT.returningSql('id'));
    this.dropChunks = pg.prepare(DROP_CHUNKS_SQL);
  }
  // A new inode has no chunk rows (its first write and a delete of an empty file ask).
  override chunk(ino: number, chunkIndex: number): ChunkRow | undefined {
    return this.pg.rowCache.isNew(ino) ? undefined : super.chunk(ino, chunkIndex);
  }
  override liveChunks(ino: number, fromIndex: number): ChunkRow[] {
    return this.pg.rowCache.isNew(ino) ? [] : super.liveChunks(ino, fromIndex);
  }
  override allocVersion(ino: number, chunkIndex: number): bigint {
    this.pg.rowCache.chunksWritten(ino); // before: the version read back comes with the row made
    return this.pg.following(() => super.allocVersion(ino, chunkIndex));
  }
  // The cache keeps of chunk rows "none yet" for a new inode and the live chunks' lengths (st_blocks):
  // each write says what it did to them.
  override setLive(
    ino: number,
    chunkIndex: number,
    version: bigint,
    lenBytes: number,
    stored: StoredForm | null,
  ): boolean {
    assert(version > 0n, 'a live version is above 0 (DESIGN §4)');
    const set = this.pg.following(() => super.setLive(ino, chunkIndex, version, lenBytes, stored));
    if (set) this.pg.rowCache.chunkLive(ino, chunkIndex, lenBytes); // the statement's WHERE held
    return set;
  }
  override retire(ino: number, chunkIndex: number): void {
    this.pg.following(() => super.retire(ino, chunkIndex));
    this.pg.rowCache.chunkRetired(ino, chunkIndex);
  }
  override dropInode(ino: number): void {
    this.pg.following(() => this.dropChunks.run({ ino }));
    this.pg.rowCache.chunksGone(ino);
  }
}

/**
 * st_blocks' reads: the file's row and its live chunks' lengths, both kept by the row cache, so a
 * lookup of a file with bytes waits for no reply (DESIGN §9 "PostgreSQL round trips").
 */
class PgAllocatedReads implements AllocatedReads {
  private readonly lengths: SqlStatement;
  constructor(private readonly pg: PgDb) {
    this.lengths = pg.prepare(LIVE_LENGTHS_SQL).raw(true);
  }
  liveChunkBytes(ino: number): number {
    const kept = this.pg.rowCache.liveChunkBytes(ino);
    if (kept !== undefined) return kept;
    const rows = this.lengths.all(ino) as Array<[bigint, bigint]>;
    const chunks = rows.map(([c, len]): [number, number] => [Number(c), Number(len)]);
    this.pg.rowCache.keepLiveLengths(ino, chunks);
    return chunks.reduce((n, [, len]) => n + len, 0);
  }
  fileRow(ino: number): AllocatedRow | undefined {
    const r = this.pg.inodeRow(ino);
    return r === null ? undefined : (rowObject(r, ALLOCATED_COLUMNS) as unknown as AllocatedRow);
  }
}

class PgFallocateReads implements FallocateReads {
  constructor(private readonly pg: PgDb) {}
  fileChunkSize(ino: number): number | undefined {
    const r = this.pg.inodeRow(ino);
    if (r === null) return undefined;
    const [type, chunkSize] = rowValues(r, CHUNK_SIZE_COLUMNS);
    return type === 'file' ? Number(chunkSize) : undefined;
  }
  committedSize(ino: number): number | undefined {
    const r = this.pg.inodeRow(ino);
    return r === null ? undefined : Number(rowValues(r, SIZE_COLUMNS)[0]);
  }
}

class PgInodeEvidence extends SqlInodeEvidence {
  constructor(private readonly pg: PgDb) {
    super(pg, POSTGRES_DIALECT.nextInoSql);
  }
  // A chunk row a restored metadata's open makes or raises (DESIGN §4 "Restored metadata"): it ends
  // "no chunks yet" of that inode, as allocVersion's does.
  override raiseMaxVersion(ino: number, chunkIndex: number, version: bigint): void {
    this.pg.rowCache.chunksWritten(ino);
    this.pg.following(() => super.raiseMaxVersion(ino, chunkIndex, version));
  }
}
