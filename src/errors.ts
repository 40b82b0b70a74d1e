// Typed errors. Every error that can reach a caller names what it concerns
// (file, chunk, shard, block, field, path) so a log line or EIO can be traced
// to one shard block on one disk.

/** Where in the store an error happened; every field is optional. */
export interface ErrorSite {
  path?: string;
  fileId?: bigint;
  chunkIndex?: bigint;
  version?: bigint;
  shardIndex?: number;
  blockIndex?: number;
  diskId?: string;
}

/**
 * " (file 12, chunk 0, ...)": file ids in decimal, the inode number that stat and every report
 * show (one notation); a path already in the message is not repeated.
 */
function describeSite(site: ErrorSite, message: string): string {
  const parts: string[] = [];
  if (site.fileId !== undefined) parts.push(`file ${site.fileId}`);
  if (site.chunkIndex !== undefined) parts.push(`chunk ${site.chunkIndex}`);
  if (site.version !== undefined) parts.push(`version ${site.version}`);
  if (site.shardIndex !== undefined) parts.push(`shard ${site.shardIndex}`);
  if (site.blockIndex !== undefined) parts.push(`block ${site.blockIndex}`);
  if (site.diskId !== undefined) parts.push(`disk ${site.diskId}`);
  if (site.path !== undefined && !message.includes(site.path)) parts.push(`at ${site.path}`);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

export class ChunkfsError extends Error {
  readonly site: ErrorSite;
  constructor(message: string, site: ErrorSite = {}) {
    super(message + describeSite(site, message));
    this.name = new.target.name;
    this.site = site;
  }
}

/** Malformed bytes or parameters: names the offending field (spec §3, §11.2, §12). */
export class FormatError extends ChunkfsError {
  readonly field: string;
  constructor(field: string, message: string, site: ErrorSite = {}) {
    super(`${field}: ${message}`, site);
    this.field = field;
  }
}

/** A block whose HighwayHash-256 does not match its hash entry (spec §9). */
export class BitrotError extends ChunkfsError {
  readonly blockIndex: number;
  constructor(blockIndex: number, site: ErrorSite = {}) {
    super('bitrot: block hash mismatch', { ...site, blockIndex });
    this.blockIndex = blockIndex;
  }
}

/** A format feature this version recognises but does not implement (DESIGN §3). */
export class UnsupportedError extends ChunkfsError {}

/** Data that no replica or parity combination can produce correctly (DESIGN §6). */
export class UnrecoverableError extends ChunkfsError {
  readonly failedShards: number[];
  constructor(message: string, site: ErrorSite, failedShards: number[]) {
    super(`${message}; failed shards [${failedShards.join(', ')}]`, site);
    this.failedShards = failedShards;
  }
}

/** Needle or slice that does not belong to the inode that points at it (spec §11.4). */
export class SliceError extends ChunkfsError {
  readonly field: string;
  constructor(field: string, message: string, site: ErrorSite = {}) {
    super(`${field}: ${message}`, site);
    this.field = field;
  }
}

/** Assertion helper for pair assertions (TIGER_STYLE): a broken invariant is a bug. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}
