// What the lease holder keeps of the rows it reads from PostgreSQL (round trips; DESIGN §9 "Fewer
// round trips": while a mount holds the store's lease it is the only writer, so what it read stays
// true unless it writes it itself). Kept by operation, never by reading SQL text: the operations
// that read these rows ask here first, and the operations that write them (namespace-ops.ts,
// file-rows.ts, data-ops.ts) say here what they wrote, as values:
// - inode rows, whole, by inode number (null: no such inode); a write is a patch (inode-change.ts);
// - extended attributes by (inode, name) (null: absent): fs/acl.ts reads a directory's default ACL
//   on every create and a file's access ACL on every chmod, and most have none;
// - new inodes (numbers this connection just handed out, PgDb.newIno): no xattrs and no chunks yet;
// - the logical lengths of a file's live chunks by chunk index (st_blocks: store/meta/allocated.ts),
//   read whole, or known empty from a new inode on; each write of a chunk row says what it wrote
//   (data-ops.ts), so a lookup of a file with bytes reads nothing while operations are unread;
// - names by (directory, name) (name-cache.ts) and the inherited layout of a directory.
// PgDb refuses a write of these tables that no operation follows (PgDb.following), so a statement
// added or rewritten cannot leave them stale. Trusted only until trustedUntilMs (the lease:
// PgDb.trustRows), and dropped whole when a transaction rolls back, the connection fails or the
// metadata crashes. Values are kept as the server's text, so a hit is decoded as a fresh read is.
import { PgResult } from './libpq';
import { CachedResult } from './result';
import { PgNameCache } from './name-cache';
import { GONE, RowPatch } from './inode-change';

export { CachedResult };

/** Inode rows kept at most (the least recently read go first). */
export const INODE_ROWS_MAX = 65536;
/** Inodes whose xattrs are kept, at most (the oldest go first). */
export const XATTR_INODES_MAX = 65536;
/** Inherited layouts kept at most (one per directory files are made in). */
export const LAYOUTS_MAX = 4096;
/** Files whose live chunks' lengths are kept, at most (the least recently read go first). */
export const LIVE_LENGTH_INODES_MAX = 16384;
/** Live chunks of one file whose lengths are kept, at most: a larger file's are read each time. */
export const LIVE_LENGTHS_PER_INODE_MAX = 4096;
/** New inode numbers remembered as holding no xattrs or chunks yet, at most. */
const NEW_INODES_MAX = 65536;
/**
 * Patches of inode rows remembered for the reads answered after them (PgRowCache.keepInodeAfter), at
 * most: a prefetch whose answer comes after more writes than that is not kept.
 */
export const WRITES_FOLLOWED_MAX = 1024;

/** When a read was queued (PgRowCache.mark): its answer is kept only if what came after it can be replayed. */
export interface RowCacheMark {
  writes: number;
  clears: number;
}

/** A write of inode rows as followed, for the reads whose answers come after it (ino null: any row). */
interface FollowedPatch {
  seq: number;
  ino: number | null;
  patch: RowPatch;
}

export class PgRowCache {
  /** Inode rows by number, least recently read first; null: known not to exist. */
  private readonly inodes = new Map<number, CachedResult | null>();
  /** xattrs by inode, then name; null: known absent. */
  private readonly xattrs = new Map<number, Map<string, Buffer | null>>();
  /** What is known of directory entries, kept by the namespace's operations (namespace-ops.ts). */
  readonly names = new PgNameCache();
  /** The inherited layout of a directory (null: none above it), oldest first; kept by namespace-ops.ts. */
  readonly layouts = new Map<number, string | null>();
  /** Inode numbers this connection just handed out (PgDb.newIno): no xattrs, no chunks yet. */
  private readonly newInodes = new Set<number>();
  /** Per file, its live chunks (version > 0) by index and their logical lengths; least recently read first. */
  private readonly liveLengths = new Map<number, Map<number, number>>();
  private trustedUntilMs = 0;
  /** Times trust ended: what was decided under an older epoch (inode numbers, PgDb.newIno) is decided again. */
  epoch = 0;
  /** Writes followed: a read queued before writes is kept when its answer comes only if they can be replayed. */
  writes = 0;
  /** Times everything was dropped: a read queued before is not kept (its row may predate a write not followed). */
  private clears = 0;
  /** The last inode patches (keepInodeAfter), oldest first; followedFrom: the seq of the oldest one remembered. */
  private followed: FollowedPatch[] = [];
  private followedFrom = 1;
  /** Reads answered here (tests, status). */
  hits = 0;
  /** The last inode row copied: its column names and types are the next one's (rowOf). */
  private inodeShape: CachedResult | null = null;

  constructor(private readonly nowMs: () => number = Date.now) {}

  get trusted(): boolean {
    if (this.trustedUntilMs === 0) return false;
    if (this.nowMs() < this.trustedUntilMs) return true;
    this.trustUntil(0); // the lease may be someone else's now
    return false;
  }

  /** Rows and names kept (tests). */
  get size(): number {
    let n = this.inodes.size + this.names.size;
    for (const m of this.xattrs.values()) n += m.size;
    return n;
  }

  /** Trust kept rows until untilMs (the lease's end as this side sees it); 0 drops them all. */
  trustUntil(untilMs: number): void {
    this.trustedUntilMs = untilMs;
    if (untilMs === 0) {
      this.epoch++;
      this.clear();
    }
  }

  clear(): void {
    this.inodes.clear();
    this.xattrs.clear();
    this.names.clear();
    this.layouts.clear();
    this.newInodes.clear();
    this.liveLengths.clear();
    this.inodeShape = null; // a migration may have changed the columns
    this.followed = [];
    this.followedFrom = this.writes + 1;
    this.clears++;
  }

  /** Every inode row kept (null: known absent), for checks against the server (tests). */
  keptInodes(): Array<[number, CachedResult | null]> {
    return [...this.inodes];
  }
  /** Every xattr kept (null: known absent), and the inodes known to have none (tests). */
  keptXattrs(): { values: Array<[number, string, Buffer | null]>; none: number[] } {
    const values: Array<[number, string, Buffer | null]> = [];
    for (const [ino, m] of this.xattrs) for (const [name, v] of m) values.push([ino, name, v]);
    return { values, none: [...this.newInodes] };
  }

  /** Every file's live chunk lengths kept, by index (tests). */
  keptLiveLengths(): Array<[number, Array<[number, number]>]> {
    return [...this.liveLengths].map(([ino, m]) => [ino, [...m].sort((a, b) => a[0] - b[0])]);
  }

  /** ino's row as kept (null: no such inode), undefined when not known. */
  inode(ino: number): CachedResult | null | undefined {
    if (!this.trusted) return undefined;
    const r = this.inodes.get(ino);
    if (r !== undefined) this.hits++;
    return r;
  }

  /** ino's whole row as the server gave it (null: none), while rows are trusted. */
  keepInode(ino: number, r: CachedResult | null): void {
    if (!this.trusted) return;
    this.inodes.delete(ino); // re-inserted last: the most recently read
    this.inodes.set(ino, r);
    if (this.inodes.size > INODE_ROWS_MAX) this.inodes.delete(this.inodes.keys().next().value as number);
  }

  /** A copy of an inode's whole row as read (its column names and types shared with the rows kept before). */
  rowOf(pq: PgResult): CachedResult {
    const r = CachedResult.of(pq, this.inodeShape);
    this.inodeShape = r;
    return r;
  }

  /** An inode's whole row read along with something else (a lookup's join, namespace-ops.ts). */
  keepInodeRow(pq: PgResult): void {
    if (!this.trusted || pq.ntuples() !== 1) return;
    const r = this.rowOf(pq);
    const c = r.names.indexOf('ino');
    if (c < 0 || r.values[0][c] === null) return;
    this.keepInode(Number(r.values[0][c]), r);
  }

  /**
   * An operation wrote ino's row (ino null: any row it may match, patch tells): the kept row is
   * patched, or dropped when the patch cannot tell; remembered for the prefetches answered later.
   */
  patchInode(ino: number | null, patch: RowPatch): void {
    this.writes++;
    this.follow({ seq: this.writes, ino, patch });
    if (ino === null) {
      for (const [n, r] of this.inodes) if (r !== null) this.patchKept(n, r, patch);
      return;
    }
    const r = this.inodes.get(ino);
    if (r !== undefined && r !== null) this.patchKept(ino, r, patch);
    else if (patch === GONE) this.inodes.delete(ino);
  }

  private patchKept(ino: number, r: CachedResult, patch: RowPatch): void {
    const after = patch(r);
    if (after === undefined) this.inodes.delete(ino);
    else this.inodes.set(ino, after);
  }

  /** An inode row went (DELETE): its row, xattrs and new mark with it. */
  inodeGone(ino: number): void {
    this.patchInode(ino, GONE);
    this.xattrsGone(ino);
  }

  /** Remember a patch for keepInodeAfter, the last WRITES_FOLLOWED_MAX (let go by halves: no shift per write). */
  private follow(w: FollowedPatch): void {
    this.followed.push(w);
    if (this.followed.length <= 2 * WRITES_FOLLOWED_MAX) return;
    const gone = this.followed.splice(0, this.followed.length - WRITES_FOLLOWED_MAX);
    this.followedFrom = gone[gone.length - 1].seq + 1;
  }

  /** The cache's state as a read is queued: keepInodeAfter keeps its answer from there. */
  mark(): RowCacheMark {
    return { writes: this.writes, clears: this.clears };
  }

  /**
   * ino's row read by a prefetch queued at mark, answered after later writes (a transaction answered
   * before its reply; DESIGN §9): the server ran the read before them, as they were sent after it on
   * this connection. It is kept with the patches since replayed on it in order; not kept when some
   * are forgotten, when everything was dropped since, or when the row is kept already (current since).
   */
  keepInodeAfter(ino: number, pq: PgResult, at: RowCacheMark): void {
    if (!this.trusted || at.clears !== this.clears || this.inodes.has(ino)) return;
    if (at.writes + 1 < this.followedFrom) return; // some writes since the mark are forgotten
    let r: CachedResult | null = pq.ntuples() === 1 ? this.rowOf(pq) : null;
    // The patches after the mark are the last ones (by seq): found from the end, not by a walk of all.
    let from = this.followed.length;
    while (from > 0 && this.followed[from - 1].seq > at.writes) from--;
    for (let i = from; i < this.followed.length && r !== null; i++) {
      const w = this.followed[i];
      if (w.ino !== null && w.ino !== ino) continue;
      const after = w.patch(r);
      if (after === undefined) return;
      r = after;
    }
    this.keepInode(ino, r);
  }

  /** ino's value of xattr name as kept (null: absent), undefined when not known. */
  xattr(ino: number, name: string): Buffer | null | undefined {
    if (!this.trusted) return undefined;
    if (this.newInodes.has(ino)) {
      this.hits++;
      return null;
    }
    const v = this.xattrs.get(ino)?.get(name);
    if (v !== undefined) this.hits++;
    return v;
  }

  /** ino's value of xattr name, as read or (written) written (null: absent). */
  keepXattr(ino: number, name: string, value: Buffer | null, written: boolean): void {
    if (written) this.writes++;
    if (value !== null) this.notNew(ino);
    if (!this.trusted) return;
    let m = this.xattrs.get(ino);
    if (m === undefined) {
      this.xattrs.set(ino, (m = new Map()));
      if (this.xattrs.size > XATTR_INODES_MAX) this.xattrs.delete(this.xattrs.keys().next().value as number);
    }
    m.set(name, value);
  }

  /** Every xattr of ino went. */
  xattrsGone(ino: number): void {
    this.writes++;
    this.xattrs.delete(ino);
    this.newInodes.delete(ino);
  }

  /** A number this connection handed out (PgDb.newIno): no table but inodes has rows of it yet. */
  newInode(ino: number): void {
    if (!this.trusted) return;
    this.newInodes.add(ino);
    if (this.newInodes.size > NEW_INODES_MAX) this.newInodes.delete(this.newInodes.values().next().value as number);
  }

  /** Whether ino is new (no chunks yet: a read of them is answered empty). */
  isNew(ino: number): boolean {
    if (!this.trusted || !this.newInodes.has(ino)) return false;
    this.hits++;
    return true;
  }

  /**
   * ino has chunk rows now, none live yet (a version allocated, a max_version raised): a new inode's
   * live chunks are known from here on (none), the writes after it say the rest.
   */
  chunksWritten(ino: number): void {
    this.writes++;
    this.notNew(ino);
  }

  /** ino holds rows of another table now: no longer new, and its live chunks known as none until written. */
  private notNew(ino: number): void {
    if (this.newInodes.delete(ino) && this.trusted && !this.liveLengths.has(ino)) this.keepLiveLengths(ino, []);
  }

  /** The logical bytes of ino's live chunks, summed, as kept; undefined when not known. */
  liveChunkBytes(ino: number): number | undefined {
    if (!this.trusted) return undefined;
    if (this.newInodes.has(ino)) {
      this.hits++;
      return 0;
    }
    const m = this.liveLengths.get(ino);
    if (m === undefined) return undefined;
    this.hits++;
    this.liveLengths.delete(ino); // re-inserted last: the most recently read
    this.liveLengths.set(ino, m);
    let n = 0;
    for (const len of m.values()) n += len;
    return n;
  }

  /** ino's live chunks as read whole: [chunk index, logical length] of each (version > 0). */
  keepLiveLengths(ino: number, chunks: ReadonlyArray<[number, number]>): void {
    if (!this.trusted || chunks.length > LIVE_LENGTHS_PER_INODE_MAX) return;
    this.liveLengths.delete(ino);
    this.liveLengths.set(ino, new Map(chunks));
    if (this.liveLengths.size > LIVE_LENGTH_INODES_MAX)
      this.liveLengths.delete(this.liveLengths.keys().next().value as number);
  }

  /** Chunk c of ino holds lenBytes live now (its row's version > 0, set by a data commit). */
  chunkLive(ino: number, c: number, lenBytes: number): void {
    this.writes++;
    const m = this.liveLengths.get(ino);
    if (m === undefined) return;
    m.set(c, lenBytes);
    if (m.size > LIVE_LENGTHS_PER_INODE_MAX) this.liveLengths.delete(ino);
  }

  /** Chunk c of ino holds no live data now (truncate, punch, a needle's move). */
  chunkRetired(ino: number, c: number): void {
    this.writes++;
    this.liveLengths.get(ino)?.delete(c);
  }

  /** Every chunk row of ino went (a delete). */
  chunksGone(ino: number): void {
    this.writes++;
    this.liveLengths.delete(ino);
  }

  /** The inherited layout of dir as read (null: none), while rows are trusted. */
  keepLayout(dir: number, layout: string | null): void {
    if (!this.trusted) return;
    this.layouts.set(dir, layout);
    if (this.layouts.size > LAYOUTS_MAX) this.layouts.delete(this.layouts.keys().next().value as number);
  }

  /** A directory's entries as listed (name, ino columns); ignored when a write came since writesBefore. */
  listed(parent: string, r: PgResult, writesBefore: number): void {
    if (!this.trusted || this.writes !== writesBefore) return;
    const entries: Array<[string, string]> = [];
    for (let i = 0; i < r.ntuples(); i++) entries.push([r.getvalue(i, 0), r.getvalue(i, 1)]);
    this.names.listed(parent, entries);
  }

  /** A directory entry added or removed (ino null): kept, and a listing read before it is ignored. */
  entryWritten(parent: number, name: string, ino: number | null): void {
    this.writes++;
    if (this.trusted) this.names.set(String(parent), name, ino === null ? null : String(ino));
  }
}
