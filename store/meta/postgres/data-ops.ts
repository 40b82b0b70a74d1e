// The data path's questions of the inode rows on PostgreSQL (DESIGN §9 "Operations", "Fewer round
// trips"): the shared statements (sql/data-ops.ts), with the reads of an inode row answered from the
// row the lease holder keeps (PgDb.inodeRow) and every write of a kept table saying what it wrote
// (row-cache.ts): slice pointers patch the row, a new inode's first chunk row ends its "no chunks
// yet", and a new inode's chunks are answered empty without asking.
import { Slice } from '../../../src/slice';
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
    return new PgAllocatedReads(this.pg, super.allocatedReads());
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
  constructor(private readonly pg: PgDb) {
    super(pg, POSTGRES_DIALECT.returningSql('id'));
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
  // Rows of chunks, which the cache keeps nothing of but "none yet" for a new inode: rows there are allocVersion's.
  override setLive(
    ino: number,
    chunkIndex: number,
    version: bigint,
    lenBytes: number,
    stored: StoredForm | null,
  ): boolean {
    return this.pg.following(() => super.setLive(ino, chunkIndex, version, lenBytes, stored));
  }
  override retire(ino: number, chunkIndex: number): void {
    this.pg.following(() => super.retire(ino, chunkIndex));
  }
  override dropInode(ino: number): void {
    this.pg.following(() => super.dropInode(ino));
  }
}

class PgAllocatedReads implements AllocatedReads {
  constructor(
    private readonly pg: PgDb,
    private readonly shared: AllocatedReads,
  ) {}
  liveChunkBytes(ino: number): number {
    return this.pg.rowCache.isNew(ino) ? 0 : this.shared.liveChunkBytes(ino);
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
