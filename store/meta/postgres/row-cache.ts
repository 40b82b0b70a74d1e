// The mount's cache of the rows it reads from PostgreSQL (round trips; DESIGN §9: while a
// mount holds the store's lease it is the only writer, so what it read stays true unless it writes
// it itself). It keeps the results of keyed reads — `SELECT ... FROM t WHERE a = $1 [AND b = $2]`,
// one table, equalities only — and every write this connection makes goes through it first:
// - UPDATE t SET c = $n, ... WHERE <a unique key> = $k: the cached rows of that key are patched with
//   the new values (write-through), unless a column a trigger derives would change unseen;
// - any other write: every cached result it may touch is dropped (by table, narrowed by the
//   equalities both sides name); a statement it cannot read drops everything.
// - a read of inode columns is answered from another cached result of the same inode that holds
//   them (a projection), e.g. getattr after a lookup;
// - UPDATE ... SET c = c + $n (link counts) patches the cached value.
// What the namespace's operations know beyond rows (names, the inherited layout) is kept here too,
// by those operations themselves (namespace-ops.ts: names, layouts), so that it goes with the rows.
// Trusted only until trustedUntilMs (the lease: PgDb.trustRows), and dropped whole when a transaction
// rolls back (its reads may have seen its own writes) or the connection fails. Values are kept as
// the server's text, so a hit is decoded exactly as a fresh read is.
import { PgResult } from './libpq';
import { CachedResult } from './result';
import { PgNameCache } from './name-cache';
import { INSERT_COLUMNS_RE, Plan, PlainSet, planOf } from './row-plans';

export { CachedResult, planOf };

/** Cached results at most (the oldest go first). */
export const ROW_CACHE_RESULTS_MAX = 65536;
/** Statement texts classified at most (texts are the code's own: a bound, not a working set). */
const PLANS_MAX = 4096;
/** Inherited layouts kept at most (one per directory files are made in). */
export const LAYOUTS_MAX = 4096;
const OID_INT8 = 20;
const OID_INT2 = 21;
const OID_INT4 = 23;
const OID_TEXT = 25;
const OID_BYTEA = 17;
/** Column types a patch writes as the server would print them (others: the rows are dropped). */
const PATCHABLE_TYPES = new Set([OID_INT8, OID_INT2, OID_INT4, OID_TEXT, OID_BYTEA]);
const INTEGER_TYPES = new Set([OID_INT8, OID_INT2, OID_INT4]);

/**
 * The tables whose reads are cached, with what their owners declare: unique keys, and columns a
 * trigger sets to NULL when another column changes (far-times.ts). Only these tables are cached: a
 * table whose triggers write elsewhere, or that another connection writes, must not be listed.
 */
export type RowCacheSchema = Record<string, { uniqueKeys: string[][]; nulledWhenChanged?: Record<string, string[]> }>;

interface Entry {
  key: string;
  plainColumns: boolean;
  columns: string[] | '*';
  keyValues: Array<string | null>;
  result: CachedResult;
}

/** Results of one table read by one set of key columns, indexed by the first key column's value. */
interface Bucket {
  table: string;
  keys: string[];
  byFirst: Map<string, Map<string, Entry>>;
  /** Keys of its entries that found no row: the only ones an INSERT of a unique key can change (writeBucket). */
  empty: Set<string>;
}

/**
 * What the mount caches: inode rows (namespace-ops.ts, file-rows.ts, allocated.ts read them by ino, the
 * most frequent reads), and xattrs (fs/acl.ts reads a directory's default ACL on every create and a
 * file's access ACL on every chmod; most have none). Their triggers: far-times.ts sets a *_far
 * column to NULL when its *_ns column changes; meta.ts's inodes_high and prealloc.ts's
 * inodes_prealloc write other tables (not cached).
 */
export const CACHED_TABLES: RowCacheSchema = {
  inodes: {
    uniqueKeys: [['ino']],
    nulledWhenChanged: { atime_ns: ['atime_far'], mtime_ns: ['mtime_far'], ctime_ns: ['ctime_far'] },
  },
  xattrs: { uniqueKeys: [['ino', 'name']] },
};
/**
 * Tables not cached whose rows are keyed by ino: a read of a new inode's rows there (PgRowCache.newInode)
 * is answered empty without asking, until this connection writes rows of it (a write it cannot tie
 * to one inode forgets every new inode). chunks: a file's first write and its deletion ask whether it
 * has chunks (store/file-io.ts). (Not intents: they are deleted by id.)
 */
export const NEW_INODE_TABLES: ReadonlySet<string> = new Set(['chunks']);
/** New inode numbers remembered as holding no rows outside inodes yet (PgRowCache.newInode), at most. */
const NEW_INODES_MAX = 65536;
/**
 * Writes of cached tables remembered for the reads answered after them (PgRowCache.putAfter), at most: a
 * prefetch whose answer comes after more writes than that is not kept.
 */
export const WRITES_FOLLOWED_MAX = 1024;

/** When a read was queued (PgRowCache.mark): its answer is kept only if what came after it can be replayed. */
export interface RowCacheMark {
  writes: number;
  clears: number;
}

/** A write of a cached table as followed (PgRowCache.write), for the reads whose answers come after it. */
interface FollowedWrite {
  /** this.writes once counted. */
  seq: number;
  p: Extract<Plan, { kind: 'write' }>;
  values: Array<string | null>;
}

const NULL_KEY = '\u0001null';
const keyPart = (v: string | null): string => (v === null ? NULL_KEY : v);

export class PgRowCache {
  private readonly plans = new Map<string, Plan>();
  /** table -> key columns joined -> bucket. */
  private readonly buckets = new Map<string, Map<string, Bucket>>();
  /** Every entry by its key, oldest first (the bound). */
  private readonly entries = new Map<string, { bucket: Bucket; entry: Entry }>();
  /** What is known of directory entries, kept by the namespace's operations (namespace-ops.ts). */
  readonly names = new PgNameCache();
  /**
   * The inherited layout of a directory (null: none above it, the store default), oldest first; kept and
   * dropped by the namespace's operations (namespace-ops.ts), which alone write what it depends on.
   */
  readonly layouts = new Map<number, string | null>();
  /** Inode numbers this connection just handed out (PgDb.newIno): no table but inodes has rows of them yet. */
  private readonly newInodes = new Set<string>();
  private trustedUntilMs = 0;
  /** Counts the times trust ended: what was decided under an older epoch (inode numbers, PgDb.newIno) is decided again. */
  epoch = 0;
  /** Writes seen: a read queued before writes is kept when its answer comes only if they can be replayed (putAfter). */
  writes = 0;
  /** Times everything was dropped: a read queued before is not kept (its row may predate a write not followed). */
  private clears = 0;
  /** The last writes of cached tables, oldest first (putAfter replays them on a late answer). */
  private followed: FollowedWrite[] = [];
  /** Every write of a cached table counted from this one on is in followed (older ones were let go). */
  private followedFrom = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly schema: RowCacheSchema,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Trust cached rows until untilMs (the lease's end as this side sees it); 0 drops them all. */
  trustUntil(untilMs: number): void {
    this.trustedUntilMs = untilMs;
    if (untilMs === 0) {
      this.epoch++;
      this.clear();
    }
  }

  get trusted(): boolean {
    if (this.trustedUntilMs === 0) return false;
    if (this.nowMs() < this.trustedUntilMs) return true;
    this.trustUntil(0); // the lease may be someone else's now
    return false;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.clears++;
    this.followed = [];
    this.buckets.clear();
    this.entries.clear();
    this.names.clear();
    this.layouts.clear();
    this.newInodes.clear();
  }

  /** ino is a number never used before (PgDb.newIno): reads of its rows in other tables find none, until written. */
  newInode(ino: string): void {
    this.newInodes.add(ino);
    if (this.newInodes.size > NEW_INODES_MAX) this.newInodes.delete(this.newInodes.values().next().value as string);
  }

  private plan(text: string): Plan {
    let p = this.plans.get(text);
    if (p === undefined) {
      p = planOf(text);
      if (this.plans.size < PLANS_MAX) this.plans.set(text, p);
    }
    return p;
  }

  /** A cached result of this read, or undefined. */
  get(text: string, values: Array<string | null>): PgResult | undefined {
    if (!this.trusted) return undefined;
    const p = this.plan(text);
    const found = this.find(text, p, values);
    if (found === undefined) {
      if (p.kind === 'read' || p.kind === 'ofInode') this.misses++;
    } else this.hits++;
    return found;
  }

  /**
   * The whole-row read to send instead of a read of some of an inode's columns by ino that missed: its
   * answer is kept whole, so the other column sets the mount reads of the same inode (attributes, the
   * file row, the size) are projected from it without asking (an open, write and close of a small
   * file read three). Null: send the read as it is.
   */
  widened(text: string, values: Array<string | null>): { text: string; values: Array<string | null> } | null {
    if (!this.trusted) return null;
    const p = this.plan(text);
    if (
      p.kind === 'read' &&
      p.table === 'inodes' &&
      p.plainColumns &&
      p.columns !== '*' &&
      p.keys.length === 1 &&
      p.keys[0] === 'ino'
    ) {
      return { text: WHOLE_INODE_SQL, values: [values[p.params[0]]] };
    }
    return null;
  }

  /** Rows of table are answered empty for a new inode (a table cached, or one of NEW_INODE_TABLES). */
  private emptyWhileNew(table: string): boolean {
    return table !== 'inodes' && (this.schema[table] !== undefined || NEW_INODE_TABLES.has(table));
  }

  private find(text: string, p: Plan, values: Array<string | null>): PgResult | undefined {
    if (p.kind === 'ofInode')
      return this.emptyWhileNew(p.table) && this.newInodes.has(keyPart(values[p.param])) ? EMPTY_RESULT : undefined;
    if (
      p.kind === 'read' &&
      this.schema[p.table] === undefined &&
      NEW_INODE_TABLES.has(p.table) &&
      p.keys[0] === 'ino'
    ) {
      return this.newInodes.has(keyPart(values[p.params[0]])) ? EMPTY_RESULT : undefined;
    }
    if (p.kind !== 'read' || this.schema[p.table] === undefined) return undefined;
    const key = `${text}\u0000${values.map(keyPart).join('\u0000')}`;
    const found = this.entries.get(key);
    if (found !== undefined) return found.entry.result;
    if (p.table !== 'inodes' && p.keys[0] === 'ino' && this.newInodes.has(keyPart(values[p.params[0]])))
      return EMPTY_RESULT;
    // Another result of the same row may hold these columns (a unique key of one column).
    if (!p.plainColumns || p.keys.length !== 1 || !this.isUnique(p.table, p.keys)) return undefined;
    const b = this.buckets.get(p.table)?.get(p.keys[0]);
    if (b === undefined) return undefined;
    const value = values[p.params[0]];
    const r = this.projectFrom(b, keyPart(value), p.columns);
    if (r !== undefined) this.keep(b, key, [value], true, p.columns, r);
    return r;
  }

  /** columns of the row keyed first by first, from a cached result of plain columns that holds them all. */
  private projectFrom(b: Bucket, first: string, columns: string[] | '*'): CachedResult | undefined {
    for (const e of b.byFirst.get(first)?.values() ?? []) {
      if (!e.plainColumns) continue;
      if (columns === '*') {
        if (e.columns === '*') return e.result.copy();
        continue;
      }
      const at = columns.map((c) => e.result.names.indexOf(c));
      if (at.some((i) => i < 0)) continue;
      const r = e.result;
      return new CachedResult(
        columns.slice(),
        at.map((i) => r.types[i]),
        r.values.map((row) => at.map((i) => row[i])),
        r.cmdTuples(),
      );
    }
    return undefined;
  }

  /** A directory's entries as listed (name, ino columns); ignored when a write came since writesBefore. */
  listed(parent: string, r: PgResult, writesBefore: number): void {
    if (!this.trusted || this.writes !== writesBefore) return;
    const entries: Array<[string, string]> = [];
    for (let i = 0; i < r.ntuples(); i++) entries.push([r.getvalue(i, 0), r.getvalue(i, 1)]);
    this.names.listed(parent, entries);
  }

  /** A read's fresh result (the server's answer): kept when the read is a keyed one. */
  put(text: string, values: Array<string | null>, pq: PgResult): void {
    if (!this.trusted) return;
    const p = this.plan(text);
    if (p.kind !== 'read' || this.schema[p.table] === undefined) return;
    const key = `${text}\u0000${values.map(keyPart).join('\u0000')}`;
    const keyValues = p.params.map((i) => values[i]);
    this.keep(this.bucket(p.table, p.keys), key, keyValues, p.plainColumns, p.columns, CachedResult.of(pq));
  }

  /** The cache's state as a read is queued: putAfter keeps its answer from there. */
  mark(): RowCacheMark {
    return { writes: this.writes, clears: this.clears };
  }

  /**
   * The answer of a read queued at mark that came after later writes (a prefetch whose transaction was
   * answered before its reply; DESIGN §9): the server ran the read before them, as they were sent after
   * it on this connection. It is kept with those writes replayed on it in order, as they would have
   * patched or dropped it had it been cached then; not kept when they cannot all be replayed (a write
   * not followed, one older than the writes remembered, everything dropped since), or when the read is
   * cached already (kept current since).
   */
  putAfter(text: string, values: Array<string | null>, pq: PgResult, at: RowCacheMark): void {
    if (at.writes === this.writes && at.clears === this.clears) return this.put(text, values, pq);
    if (!this.trusted || at.clears !== this.clears) return;
    const p = this.plan(text);
    if (p.kind !== 'read' || this.schema[p.table] === undefined) return;
    if (at.writes + 1 < this.followedFrom) return; // some writes since the mark are forgotten
    const key = `${text}\u0000${values.map(keyPart).join('\u0000')}`;
    if (this.entries.has(key)) return;
    const b = this.bucket(p.table, p.keys);
    const keyValues = p.params.map((i) => values[i]);
    const e: Entry = { key, plainColumns: p.plainColumns, columns: p.columns, keyValues, result: CachedResult.of(pq) };
    for (const w of this.followed)
      if (w.seq > at.writes && w.p.table === p.table && !this.writeEntry(b, e, w.p, w.values)) return;
    this.keep(b, key, keyValues, e.plainColumns, e.columns, e.result);
  }

  /** An inode's whole row read otherwise (a lookup's join, namespace-ops.ts): kept as the read of it by ino. */
  keepInodeRow(pq: PgResult): void {
    if (!this.trusted || pq.ntuples() !== 1) return;
    const r = CachedResult.of(pq);
    const c = r.names.indexOf('ino');
    if (c < 0 || r.values[0][c] === null) return;
    const ino = r.values[0][c]!;
    this.keep(this.bucket('inodes', ['ino']), `${WHOLE_INODE_SQL}\u0000${ino}`, [ino], true, '*', r);
  }

  /** The inherited layout of dir as read (null: none), while rows are trusted. */
  keepLayout(dir: number, layout: string | null): void {
    if (!this.trusted) return;
    this.layouts.set(dir, layout);
    if (this.layouts.size > LAYOUTS_MAX) this.layouts.delete(this.layouts.keys().next().value as number);
  }

  private keep(
    bucket: Bucket,
    key: string,
    keyValues: Array<string | null>,
    plainColumns: boolean,
    columns: string[] | '*',
    result: CachedResult,
  ): void {
    const first = keyPart(keyValues[0]);
    this.forget(key);
    let m = bucket.byFirst.get(first);
    if (m === undefined) bucket.byFirst.set(first, (m = new Map()));
    const entry: Entry = { key, plainColumns, columns, keyValues, result };
    m.set(key, entry);
    if (result.ntuples() === 0) bucket.empty.add(key);
    this.entries.set(key, { bucket, entry });
    if (this.entries.size > ROW_CACHE_RESULTS_MAX) this.forget(this.entries.keys().next().value as string);
  }

  private bucket(table: string, keys: string[]): Bucket {
    let t = this.buckets.get(table);
    if (t === undefined) this.buckets.set(table, (t = new Map()));
    const id = keys.join(',');
    let b = t.get(id);
    if (b === undefined) t.set(id, (b = { table, keys, byFirst: new Map(), empty: new Set() }));
    return b;
  }

  private forget(key: string): void {
    const found = this.entries.get(key);
    if (found === undefined) return;
    this.entries.delete(key);
    found.bucket.empty.delete(key);
    const first = keyPart(found.entry.keyValues[0]);
    const m = found.bucket.byFirst.get(first);
    m?.delete(key);
    if (m !== undefined && m.size === 0) found.bucket.byFirst.delete(first);
  }

  private dropBucket(b: Bucket): void {
    for (const m of b.byFirst.values()) for (const key of m.keys()) this.entries.delete(key);
    b.byFirst.clear();
    b.empty.clear();
  }

  /** A statement this connection is about to run (or has queued): cached rows it changes are patched or dropped. */
  write(text: string, values: Array<string | null>): void {
    const p = this.plan(text);
    if (p.kind === 'read' || p.kind === 'ofInode') return;
    if (p.kind === 'other') {
      if (p.writes) {
        this.writes++;
        this.clear(); // cannot tell what it writes
      }
      return;
    }
    this.writes++;
    if (this.schema[p.table] !== undefined) this.follow({ seq: this.writes, p, values });
    // Only the cached tables' rows are answered from newInodes (find): writes of others (dirents' ino) change nothing there.
    if (this.emptyWhileNew(p.table) && this.newInodes.size > 0) this.writeNewInodes(text, p, values);
    const buckets = this.buckets.get(p.table);
    if (buckets === undefined) return;
    for (const b of buckets.values()) this.writeBucket(b, p, values);
  }

  /** Remember a write for putAfter, the last WRITES_FOLLOWED_MAX (let go by halves: no shift per write). */
  private follow(w: FollowedWrite): void {
    this.followed.push(w);
    if (this.followed.length <= 2 * WRITES_FOLLOWED_MAX) return;
    const gone = this.followed.splice(0, this.followed.length - WRITES_FOLLOWED_MAX);
    this.followedFrom = gone[gone.length - 1].seq + 1;
  }

  /** A write of rows keyed by ino: that inode may have rows now (any other write: all may). */
  private writeNewInodes(text: string, p: Extract<Plan, { kind: 'write' }>, values: Array<string | null>): void {
    let param = -1;
    if (p.insert) {
      const m = INSERT_COLUMNS_RE.exec(text);
      const cols = m === null ? [] : m[1].split(',').map((c) => c.trim().toLowerCase());
      const vals = m === null ? [] : m[2].split(',').map((v) => /^\s*\$(\d+)\s*$/.exec(v));
      const at = cols.indexOf('ino');
      if (at >= 0 && vals[at] != null) param = Number(vals[at]![1]) - 1;
    } else if (p.where !== null && p.where.includes('ino')) param = p.params[p.where.indexOf('ino')];
    else if (p.inoParam !== undefined) param = p.inoParam;
    if (param < 0) this.newInodes.clear();
    else this.newInodes.delete(keyPart(values[param]));
  }

  private writeBucket(b: Bucket, p: Extract<Plan, { kind: 'write' }>, values: Array<string | null>): void {
    if (p.insert) {
      if (p.upsert || !this.isUnique(b.table, b.keys)) return this.dropBucket(b);
      // Only the results that found no row change (writeEntry): kept apart (Bucket.empty), as a scan of the
      // whole bucket per INSERT grew with the cache.
      for (const key of [...b.empty]) this.forget(key);
      return;
    }
    if (p.where === null || p.setCols === null || p.setCols.some((c) => b.keys.includes(c))) return this.dropBucket(b);
    const firstValue = p.where.includes(b.keys[0]) ? values[p.params[p.where.indexOf(b.keys[0])]] : undefined;
    const candidates =
      firstValue === undefined
        ? [...b.byFirst.values()].flatMap((m) => [...m.values()])
        : [...(b.byFirst.get(keyPart(firstValue))?.values() ?? [])];
    for (const e of candidates) if (!this.writeEntry(b, e, p, values)) this.forget(e.key);
  }

  /** Write p into e's rows (b's entry, cached or about to be): false when it cannot be followed (e is dropped). */
  private writeEntry(b: Bucket, e: Entry, p: Extract<Plan, { kind: 'write' }>, values: Array<string | null>): boolean {
    const unique = this.isUnique(b.table, b.keys);
    // A new row changes no result of a unique key that found a row; every other result may gain it.
    if (p.insert) return !p.upsert && unique && e.result.ntuples() > 0;
    if (p.where === null || p.setCols === null || p.setCols.some((c) => b.keys.includes(c))) return false;
    const wv = new Map(p.where.map((c, i) => [c, values[p.params[i]]]));
    // The write may touch e's rows unless a column both name has different values.
    if (b.keys.some((k, i) => wv.has(k) && wv.get(k) !== e.keyValues[i])) return true;
    const patchable = unique && p.set !== null && b.keys.length === p.where.length && b.keys.every((k) => wv.has(k));
    return patchable && e.plainColumns && this.patch(e.result, b.table, p.set!, values);
  }

  private isUnique(table: string, keys: string[]): boolean {
    return (this.schema[table]?.uniqueKeys ?? []).some(
      (u) => u.length === keys.length && u.every((c) => keys.includes(c)),
    );
  }

  /** Write the SET values into a cached row; false when it cannot be done exactly (the rows are dropped). */
  private patch(r: CachedResult, table: string, set: PlainSet[], values: Array<string | null>): boolean {
    if (r.values.length === 0) return true; // no row: an UPDATE of it changes nothing
    const nulled = this.schema[table]?.nulledWhenChanged ?? {};
    const assigned = new Set(set.map((s) => s.col));
    for (const s of set) {
      // A trigger may set d to NULL: exact only when d is NULL already (or not cached, or assigned here too).
      for (const d of nulled[s.col] ?? []) {
        const c = r.names.indexOf(d);
        if (!assigned.has(d) && c >= 0 && r.values.some((row) => row[c] !== null)) return false;
      }
      const c = r.names.indexOf(s.col);
      if (c >= 0 && !PATCHABLE_TYPES.has(r.types[c])) return false;
      // An addition or a maximum: integers only, with a value that is there (GREATEST skips NULLs: not followed).
      if (
        (s.add || s.max === true) &&
        c >= 0 &&
        (!INTEGER_TYPES.has(r.types[c]) ||
          values[s.param] === null ||
          !/^-?[0-9]+$/.test(values[s.param]!) ||
          r.values.some((row) => row[c] === null))
      )
        return false;
    }
    for (const s of set) {
      const c = r.names.indexOf(s.col);
      if (c < 0) continue;
      for (const row of r.values)
        row[c] = s.add
          ? String(BigInt(row[c]!) + BigInt(values[s.param]!))
          : s.max === true
            ? maxText(row[c]!, values[s.param]!)
            : values[s.param];
    }
    return true;
  }
}

/** The larger of two integers as the server prints them. */
function maxText(a: string, b: string): string {
  return BigInt(a) >= BigInt(b) ? a : String(BigInt(b));
}

/** An inode's whole row (PgRowCache.widened). */
const WHOLE_INODE_SQL = 'SELECT * FROM inodes WHERE ino = $1';
/** The answer of a read of a new inode's rows: none. */
const EMPTY_RESULT = new CachedResult([], [], [], '0');
