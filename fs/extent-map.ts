// Buffered, not yet stored byte ranges of one file: sorted, non-overlapping extents. A write that
// lands inside one extent is copied in place; otherwise the extents it overlaps are trimmed or split
// (views, no copy) and the new extent is inserted, so each write costs O(its own length).
// Extents may live in pooled slabs (fs/slab-pool.ts): bytes the map stops holding are released to
// their slab here; extents handed out by take() are released by whoever took them.
import { assert } from '../src/errors';
import type { Slab } from './slab-pool';

export interface Extent {
  offsetBytes: number;
  data: Buffer;
  slab?: Slab | null;
}

const EXTENTS_MAX = 1 << 22; // 4 Mi extents: far above any buffer limit at 4 KiB granularity
/**
 * Extents are kept per 4 MiB bucket (never crossing one), so the array splice of an insert moves at
 * most one bucket's extents: one sorted array for the whole file made each random 4 KiB write shift
 * tens of thousands of entries once the buffer held 64k of them.
 */
export const BUCKET_BYTES_DEFAULT = 4 << 20;

export class ExtentMap {
  private readonly buckets = new Map<number, Extent[]>();
  /** Bucket indices that hold extents, ascending. */
  private keys: number[] = [];
  private totalBytes = 0;
  private extentCount = 0;

  constructor(readonly bucketBytes = BUCKET_BYTES_DEFAULT) {
    assert(bucketBytes > 0, 'extent map: bad bucket size');
  }

  get bytes(): number {
    return this.totalBytes;
  }
  get count(): number {
    return this.extentCount;
  }
  get isEmpty(): boolean {
    return this.extentCount === 0;
  }
  /** End of the last extent (0 when empty). */
  get endBytes(): number {
    if (this.keys.length === 0) return 0;
    const list = this.buckets.get(this.keys[this.keys.length - 1])!;
    const last = list[list.length - 1];
    return last.offsetBytes + last.data.length;
  }

  /** The first buffered byte at or after offsetBytes (Infinity when there is none). */
  firstAtOrAfter(offsetBytes: number): number {
    for (let k = this.keyAtOrAfter(Math.floor(offsetBytes / this.bucketBytes)); k < this.keys.length; k++) {
      const list = this.buckets.get(this.keys[k])!;
      const e = list[firstEndingAfter(list, offsetBytes)];
      if (e !== undefined) return Math.max(e.offsetBytes, offsetBytes);
    }
    return Infinity;
  }

  /** Position in keys of the first bucket index >= b. */
  private keyAtOrAfter(b: number): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.keys[mid] < b) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The extent arrays of the buckets that [startBytes, endBytes) touches, ascending. */
  private *bucketsIn(startBytes: number, endBytes: number): Generator<[number, Extent[]]> {
    const lastBucket = Math.floor((endBytes - 1) / this.bucketBytes);
    for (
      let k = this.keyAtOrAfter(Math.floor(startBytes / this.bucketBytes));
      k < this.keys.length && this.keys[k] <= lastBucket;
      k++
    ) {
      yield [this.keys[k], this.buckets.get(this.keys[k])!];
    }
  }

  private bucketFor(b: number): Extent[] {
    let list = this.buckets.get(b);
    if (list === undefined) {
      list = [];
      this.buckets.set(b, list);
      this.keys.splice(this.keyAtOrAfter(b), 0, b);
    }
    return list;
  }

  private dropIfEmpty(b: number, list: Extent[]): void {
    if (list.length > 0) return;
    this.buckets.delete(b);
    this.keys.splice(this.keyAtOrAfter(b), 1);
  }

  /** If [offsetBytes, +lengthBytes) lies inside one extent, copy src over it in place and say so. */
  overwrite(offsetBytes: number, src: Buffer, lengthBytes: number): boolean {
    const list = this.buckets.get(Math.floor(offsetBytes / this.bucketBytes));
    if (list === undefined) return false;
    const first = list[firstEndingAfter(list, offsetBytes)];
    if (
      first === undefined ||
      first.offsetBytes > offsetBytes ||
      first.offsetBytes + first.data.length < offsetBytes + lengthBytes
    )
      return false;
    src.copy(first.data, offsetBytes - first.offsetBytes, 0, lengthBytes);
    return true;
  }

  /**
   * The extent that ends exactly at offsetBytes, when bytes [offsetBytes, +lengthBytes) overlap no
   * other extent and stay in its bucket: an append may grow it in place (see grow) instead of adding
   * an extent per write (4-byte appends made one extent object per 4 bytes). Null otherwise.
   */
  endingAt(offsetBytes: number, lengthBytes: number): Extent | null {
    if (offsetBytes === 0 || lengthBytes <= 0) return null;
    const b = Math.floor((offsetBytes - 1) / this.bucketBytes);
    if (Math.floor((offsetBytes + lengthBytes - 1) / this.bucketBytes) !== b) return null;
    const list = this.buckets.get(b);
    if (list === undefined) return null;
    const i = firstEndingAfter(list, offsetBytes - 1);
    const e = list[i];
    if (e === undefined || e.offsetBytes + e.data.length !== offsetBytes) return null;
    const next = list[i + 1];
    return next === undefined || next.offsetBytes >= offsetBytes + lengthBytes ? e : null;
  }

  /** Extend an extent found by endingAt to data: its bytes followed by the appended ones (same memory). */
  grow(e: Extent, data: Buffer): void {
    assert(data.length > e.data.length, 'extent map: grow must add bytes');
    this.totalBytes += data.length - e.data.length;
    e.data = data;
  }

  /** Insert bytes the caller owns (already copied out of the FUSE buffer); the map now holds them. */
  insert(offsetBytes: number, data: Buffer, slab: Slab | null = null): void {
    if (data.length === 0) return;
    if (this.overwrite(offsetBytes, data, data.length)) {
      slab?.release(data.length); // copied into an extent already held: this copy is not kept
      return;
    }
    // Pieces cut at bucket edges are views of the same slab bytes: the slab's count is unchanged.
    for (let at = 0; at < data.length; ) {
      const off = offsetBytes + at;
      const b = Math.floor(off / this.bucketBytes);
      const len = Math.min(data.length - at, (b + 1) * this.bucketBytes - off);
      this.insertInBucket(b, off, data.subarray(at, at + len), slab);
      at += len;
    }
    assert(this.extentCount <= EXTENTS_MAX, 'extent map: too many extents');
  }

  private insertInBucket(b: number, offsetBytes: number, data: Buffer, slab: Slab | null): void {
    const list = this.bucketFor(b);
    const end = offsetBytes + data.length;
    const i = firstEndingAfter(list, offsetBytes);
    let j = i;
    const keep: Extent[] = [];
    while (j < list.length && list[j].offsetBytes < end) {
      const e = list[j];
      const eEnd = e.offsetBytes + e.data.length;
      this.totalBytes -= e.data.length;
      let keptBytes = 0;
      if (e.offsetBytes < offsetBytes) {
        keep.push({ offsetBytes: e.offsetBytes, data: e.data.subarray(0, offsetBytes - e.offsetBytes), slab: e.slab });
        keptBytes += offsetBytes - e.offsetBytes;
      }
      if (eEnd > end) {
        keep.push({ offsetBytes: end, data: e.data.subarray(end - e.offsetBytes), slab: e.slab });
        keptBytes += eEnd - end;
      }
      e.slab?.release(e.data.length - keptBytes); // the overwritten middle
      j++;
    }
    const added: Extent = { offsetBytes, data, slab };
    const replacement =
      keep.length === 0
        ? [added]
        : [...keep.filter((k) => k.offsetBytes < offsetBytes), added, ...keep.filter((k) => k.offsetBytes >= end)];
    for (const r of replacement) this.totalBytes += r.data.length;
    this.extentCount += replacement.length - (j - i);
    list.splice(i, j - i, ...replacement);
  }

  /** Copy every buffered byte in [offsetBytes, offsetBytes + target.length) onto target. */
  overlay(target: Buffer, offsetBytes: number): void {
    const end = offsetBytes + target.length;
    if (target.length === 0) return;
    for (const [, list] of this.bucketsIn(offsetBytes, end)) {
      for (let i = firstEndingAfter(list, offsetBytes); i < list.length; i++) {
        const e = list[i];
        if (e.offsetBytes >= end) break;
        const from = Math.max(e.offsetBytes, offsetBytes);
        const to = Math.min(e.offsetBytes + e.data.length, end);
        e.data.copy(target, from - offsetBytes, from - e.offsetBytes, to - e.offsetBytes);
      }
    }
  }

  /** Buffered bytes inside [startBytes, endBytes). */
  coverage(startBytes: number, endBytes: number): number {
    let n = 0;
    if (endBytes <= startBytes) return 0;
    for (const [, list] of this.bucketsIn(startBytes, endBytes)) {
      for (let i = firstEndingAfter(list, startBytes); i < list.length; i++) {
        const e = list[i];
        if (e.offsetBytes >= endBytes) break;
        n += Math.min(e.offsetBytes + e.data.length, endBytes) - Math.max(e.offsetBytes, startBytes);
      }
    }
    return n;
  }

  /**
   * The buffered byte ranges, touching extents joined, ascending: what allocation answers (st_blocks,
   * SEEK_DATA) count as data (DESIGN §5 "One view"). O(extents), paid only by those queries.
   */
  ranges(): Array<{ offsetBytes: number; endBytes: number }> {
    const out: Array<{ offsetBytes: number; endBytes: number }> = [];
    for (const b of this.keys) {
      for (const e of this.buckets.get(b)!) pushRange(out, e.offsetBytes, e.offsetBytes + e.data.length);
    }
    return out;
  }

  /** Remove and return the extents inside [startBytes, endBytes), split at the edges (the caller releases them). */
  take(startBytes: number, endBytes: number): Extent[] {
    const taken: Extent[] = [];
    if (endBytes <= startBytes) return taken;
    for (const [b, list] of [...this.bucketsIn(startBytes, endBytes)]) {
      this.takeFromBucket(list, startBytes, endBytes, taken);
      this.dropIfEmpty(b, list);
    }
    return taken;
  }

  private takeFromBucket(list: Extent[], startBytes: number, endBytes: number, taken: Extent[]): void {
    const i = firstEndingAfter(list, startBytes);
    let j = i;
    const keep: Extent[] = [];
    while (j < list.length && list[j].offsetBytes < endBytes) {
      const e = list[j];
      const eEnd = e.offsetBytes + e.data.length;
      const from = Math.max(e.offsetBytes, startBytes);
      const to = Math.min(eEnd, endBytes);
      if (e.offsetBytes < from)
        keep.push({ offsetBytes: e.offsetBytes, data: e.data.subarray(0, from - e.offsetBytes), slab: e.slab });
      taken.push({ offsetBytes: from, data: e.data.subarray(from - e.offsetBytes, to - e.offsetBytes), slab: e.slab });
      if (eEnd > to) keep.push({ offsetBytes: to, data: e.data.subarray(to - e.offsetBytes), slab: e.slab });
      this.totalBytes -= to - from;
      j++;
    }
    this.extentCount += keep.length - (j - i);
    list.splice(i, j - i, ...keep);
  }

  /** Everything, in offset order, leaving the map empty (the caller releases them). */
  takeAll(): Extent[] {
    const all: Extent[] = [];
    for (const b of this.keys) for (const e of this.buckets.get(b)!) all.push(e);
    this.buckets.clear();
    this.keys = [];
    this.totalBytes = 0;
    this.extentCount = 0;
    return all;
  }

  /** Drop buffered bytes at or beyond sizeBytes (truncate). */
  truncate(sizeBytes: number): void {
    releaseExtents(this.take(sizeBytes, Number.MAX_SAFE_INTEGER));
  }
}

/** Append [offsetBytes, endBytes) to ascending ranges, joined with the last one when they touch. */
export function pushRange(
  out: Array<{ offsetBytes: number; endBytes: number }>,
  offsetBytes: number,
  endBytes: number,
): void {
  const last = out[out.length - 1];
  if (last !== undefined && last.endBytes >= offsetBytes) last.endBytes = Math.max(last.endBytes, endBytes);
  else out.push({ offsetBytes, endBytes });
}

/** Index of the first extent of a sorted list whose end is beyond offsetBytes. */
function firstEndingAfter(list: Extent[], offsetBytes: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const e = list[mid];
    if (e.offsetBytes + e.data.length <= offsetBytes) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Give the bytes of extents taken out of a map back to their slabs. */
export function releaseExtents(extents: Extent[]): void {
  for (const e of extents) e.slab?.release(e.data.length);
}

/** Contiguous bytes as a list of parts (views, not yet copied into one buffer). */
export interface Run {
  offsetBytes: number;
  lengthBytes: number;
  parts: Buffer[];
}

/** One buffer of a run's bytes (copies only when it has several parts). */
export function runBytes(run: Run): Buffer {
  return run.parts.length === 1 ? run.parts[0] : Buffer.concat(run.parts, run.lengthBytes);
}

/** Merge offset-ordered extents into contiguous runs, each cut at chunk boundaries; no copying. */
export function toRuns(extents: Extent[], chunkSizeBytes: number): Run[] {
  const runs: Run[] = [];
  let cur: Run | null = null;
  for (const e of extents) {
    let off = e.offsetBytes;
    let data = e.data;
    while (data.length > 0) {
      const chunk = Math.floor(off / chunkSizeBytes);
      const piece = data.subarray(0, Math.min(data.length, (chunk + 1) * chunkSizeBytes - off));
      const joins =
        cur !== null &&
        cur.offsetBytes + cur.lengthBytes === off &&
        Math.floor(cur.offsetBytes / chunkSizeBytes) === chunk;
      if (!joins) {
        cur = { offsetBytes: off, lengthBytes: 0, parts: [] };
        runs.push(cur);
      }
      cur!.parts.push(piece);
      cur!.lengthBytes += piece.length;
      off += piece.length;
      data = data.subarray(piece.length);
    }
  }
  return runs;
}
