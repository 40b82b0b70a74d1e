// The data path's and upkeep's questions of the inode rows (DESIGN §9 "Operations"), in the SQL both
// SQL engines speak alike: the statements behind store/meta/data-ops.ts. An engine gives what differs
// (its next-inode expression, its file rows). Nothing is cached here: PostgreSQL's data operations
// (postgres/data-ops.ts) answer the reads of an inode row from the row its operations keep.
import { ROOT_INO } from '../meta';
import type { Db, SqlStatement } from '../sql-engine';
import type {
  AllocatedReads,
  DataOps,
  FallocateReads,
  AllocatedRow,
  InodeEvidence,
  InodeSurveys,
  LiveChunk,
} from '../data-ops';
import type { FileRows } from '../file-rows';
import type { SliceRows } from '../slice-rows';
import { SqlSliceRows } from './slice-rows';
import { SqlFileRows } from './file-rows';
import { SqlChunkRows } from './chunk-rows';
import { SqlContainers } from './containers';
import type { Containers } from '../containers';
import type { ReclaimRows } from '../reclaim-queue';
import type { CounterRows, CounterValues } from '../counter-rows';
import type { PastSizeRows } from '../past-size';
import { SqlReclaimRows } from './reclaim-rows';
import { SqlCounterRows, SqlCounterValues } from './counter-rows';
import { SqlPastSizeRows } from './past-size-rows';
import { SqlPreallocRows } from './prealloc-rows';
import type { PreallocRows } from '../prealloc';
import type { ChunkRows } from '../chunk-rows';
import type { SqlDialect } from './dialect';

export class SqlDataOps implements DataOps {
  constructor(
    private readonly db: Db,
    private readonly dialect: SqlDialect,
  ) {}

  fileRows(): FileRows {
    return new SqlFileRows(this.db, this.dialect);
  }
  sliceRows(): SliceRows {
    return new SqlSliceRows(this.db);
  }
  containers(): Containers {
    return new SqlContainers(this.db, this.dialect);
  }
  reclaimRows(): ReclaimRows {
    return new SqlReclaimRows(this.db);
  }
  counterRows(): CounterRows {
    return new SqlCounterRows(this.db);
  }
  counterValues(): CounterValues {
    return new SqlCounterValues(this.db);
  }
  pastSizeRows(): PastSizeRows {
    return new SqlPastSizeRows(this.db);
  }
  preallocRows(): PreallocRows {
    return new SqlPreallocRows(this.db, this.dialect);
  }
  chunkRows(): ChunkRows {
    return new SqlChunkRows(this.db, this.dialect.returningSql('id'));
  }
  inodeEvidence(): InodeEvidence {
    return new SqlInodeEvidence(this.db, this.dialect.nextInoSql);
  }
  fallocateReads(): FallocateReads {
    return new SqlFallocateReads(this.db);
  }
  allocatedReads(): AllocatedReads {
    return new SqlAllocatedReads(this.db);
  }
  surveys(): InodeSurveys {
    return new SqlSurveys(this.db);
  }
}

export class SqlInodeEvidence implements InodeEvidence {
  private readonly watermark: SqlStatement;
  private readonly inode: SqlStatement;
  private readonly chunk: SqlStatement;
  private readonly raise: SqlStatement;
  private readonly raiseVersion: SqlStatement;

  constructor(
    protected readonly db: Db,
    nextInoSql: string,
  ) {
    this.watermark = db.prepare(`SELECT ${nextInoSql} - 1 AS w`);
    this.inode = db.prepare('SELECT 1 AS live FROM inodes WHERE ino = ?');
    this.chunk = db.prepare('SELECT version, max_version FROM chunks WHERE ino = ? AND chunk_index = ?');
    this.raise = db.prepare('UPDATE ino_high SET ino = ? WHERE k = 0 AND ino < ?');
    this.raiseVersion = db.prepare(
      'INSERT INTO chunks(ino, chunk_index, version, logical_len, max_version) VALUES (?, ?, 0, 0, ?) ' +
        'ON CONFLICT(ino, chunk_index) DO UPDATE SET max_version = excluded.max_version ' +
        'WHERE chunks.max_version < excluded.max_version',
    );
  }
  highestIno(): number {
    const w = this.watermark.get() as { w: bigint | null } | undefined;
    return Number(w?.w ?? 0);
  }
  raiseWatermark(ino: number): void {
    this.db.transaction(() => this.raise.run(ino, ino))();
  }
  raiseMaxVersion(ino: number, chunkIndex: number, version: bigint): void {
    this.raiseVersion.run(ino, chunkIndex, version);
  }
  inodeExists(ino: number): boolean {
    return this.inode.get(ino) !== undefined;
  }
  chunkVersions(ino: number, chunkIndex: number): { version: bigint; maxVersion: bigint } | undefined {
    const r = this.chunk.get(ino, chunkIndex) as { version: bigint; max_version: bigint } | undefined;
    return r === undefined ? undefined : { version: BigInt(r.version), maxVersion: BigInt(r.max_version) };
  }
}

class SqlFallocateReads implements FallocateReads {
  private readonly chunkSize: SqlStatement;
  private readonly size: SqlStatement;

  constructor(db: Db) {
    this.chunkSize = db.prepare("SELECT chunk_size FROM inodes WHERE ino = ? AND type = 'file'");
    this.size = db.prepare('SELECT size FROM inodes WHERE ino = ?');
  }
  fileChunkSize(ino: number): number | undefined {
    const r = this.chunkSize.get(ino) as { chunk_size: bigint } | undefined;
    return r === undefined ? undefined : Number(r.chunk_size);
  }
  committedSize(ino: number): number | undefined {
    const r = this.size.get(ino) as { size: bigint } | undefined;
    return r === undefined ? undefined : Number(r.size);
  }
}

class SqlAllocatedReads implements AllocatedReads {
  private readonly sum: SqlStatement;
  private readonly row: SqlStatement;

  constructor(db: Db) {
    this.sum = db.prepare('SELECT coalesce(sum(logical_len), 0) AS n FROM chunks WHERE ino = ? AND version > 0');
    this.row = db.prepare('SELECT type, size, chunk_size, slice_container, slice_length FROM inodes WHERE ino = ?');
  }
  liveChunkBytes(ino: number): number {
    return Number((this.sum.get(ino) as { n: bigint }).n);
  }
  fileRow(ino: number): AllocatedRow | undefined {
    return this.row.get(ino) as AllocatedRow | undefined;
  }
}

class SqlSurveys implements InodeSurveys {
  constructor(private readonly db: Db) {}

  liveChunks(): LiveChunk[] {
    const rows = this.db
      .prepare(
        `SELECT c.ino, c.chunk_index, c.logical_len, coalesce(c.stored_len, c.logical_len) AS payload_len, i.layout
        FROM chunks c JOIN inodes i ON i.ino = c.ino WHERE c.version > 0 ORDER BY c.ino, c.chunk_index`,
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
  packedInodes(): number[] {
    const rows = this.db
      .prepare('SELECT ino FROM inodes WHERE slice_container IS NOT NULL ORDER BY slice_container, slice_offset')
      .all() as Array<{ ino: bigint }>;
    return rows.map((r) => Number(r.ino));
  }
  unaccountedInodes(limit: number): number[] {
    const rows = this.db
      .prepare(
        `SELECT i.ino AS id FROM inodes i WHERE i.ino != ${ROOT_INO}
        AND NOT EXISTS (SELECT 1 FROM dirents d WHERE d.ino = i.ino)
        AND NOT EXISTS (SELECT 1 FROM orphans o WHERE o.ino = i.ino)
        AND NOT EXISTS (SELECT 1 FROM containers c WHERE c.id = i.ino) ORDER BY i.ino LIMIT ?`,
      )
      .all(limit) as Array<{ id: bigint }>;
    return rows.map((r) => Number(r.id));
  }
  containerRowsWithoutInode(limit: number): number[] {
    const rows = this.db
      .prepare(
        `SELECT c.id AS id FROM containers c WHERE NOT EXISTS (SELECT 1 FROM inodes i WHERE i.ino = c.id)
        ORDER BY c.id LIMIT ?`,
      )
      .all(limit) as Array<{ id: bigint }>;
    return rows.map((r) => Number(r.id));
  }
  layoutsInUse(): Array<{ layout: string; files: number }> {
    const rows = this.db
      .prepare(
        `SELECT layout, count(*) AS n FROM inodes WHERE type = 'file' AND ino NOT IN (SELECT id FROM containers)
        GROUP BY layout ORDER BY layout`,
      )
      .all() as Array<{ layout: string; n: bigint }>;
    return rows.map((r) => ({ layout: r.layout, files: Number(r.n) }));
  }
}
