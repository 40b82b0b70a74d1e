// Buffered, not yet stored byte ranges of one file: sorted, non-overlapping extents. A write that
// lands inside one extent is copied in place; otherwise the extents it overlaps are trimmed or split
// (views, no copy) and the new extent is inserted, so each write costs O(its own length).
import { assert } from '../src/errors';

export interface Extent { offsetBytes: number; data: Buffer }

const EXTENTS_MAX = 1 << 22; // 4 Mi extents: far above any buffer limit at 4 KiB granularity

export class ExtentMap {
  private list: Extent[] = [];
  private totalBytes = 0;

  get bytes(): number { return this.totalBytes; }
  get count(): number { return this.list.length; }
  get isEmpty(): boolean { return this.list.length === 0; }
  /** End of the last extent (0 when empty). */
  get endBytes(): number {
    const last = this.list[this.list.length - 1];
    return last === undefined ? 0 : last.offsetBytes + last.data.length;
  }

  /** Index of the first extent whose end is beyond offsetBytes. */
  private firstEndingAfter(offsetBytes: number): number {
    let lo = 0;
    let hi = this.list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const e = this.list[mid];
      if (e.offsetBytes + e.data.length <= offsetBytes) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Insert bytes the caller owns (already copied out of the FUSE buffer). */
  insert(offsetBytes: number, data: Buffer): void {
    if (data.length === 0) return;
    const end = offsetBytes + data.length;
    const i = this.firstEndingAfter(offsetBytes);
    const first = this.list[i];
    if (first !== undefined && first.offsetBytes <= offsetBytes && first.offsetBytes + first.data.length >= end) {
      data.copy(first.data, offsetBytes - first.offsetBytes); // inside one extent: overwrite in place
      return;
    }
    let j = i;
    const keep: Extent[] = [];
    while (j < this.list.length && this.list[j].offsetBytes < end) {
      const e = this.list[j];
      const eEnd = e.offsetBytes + e.data.length;
      this.totalBytes -= e.data.length;
      if (e.offsetBytes < offsetBytes) keep.push({ offsetBytes: e.offsetBytes, data: e.data.subarray(0, offsetBytes - e.offsetBytes) });
      if (eEnd > end) keep.push({ offsetBytes: end, data: e.data.subarray(end - e.offsetBytes) });
      j++;
    }
    const added: Extent = { offsetBytes, data };
    const replacement = keep.length === 0 ? [added]
      : [...keep.filter((k) => k.offsetBytes < offsetBytes), added, ...keep.filter((k) => k.offsetBytes >= end)];
    for (const r of replacement) this.totalBytes += r.data.length;
    this.list.splice(i, j - i, ...replacement);
    assert(this.list.length <= EXTENTS_MAX, 'extent map: too many extents');
  }

  /** Copy every buffered byte in [offsetBytes, offsetBytes + target.length) onto target. */
  overlay(target: Buffer, offsetBytes: number): void {
    const end = offsetBytes + target.length;
    for (let i = this.firstEndingAfter(offsetBytes); i < this.list.length; i++) {
      const e = this.list[i];
      if (e.offsetBytes >= end) break;
      const from = Math.max(e.offsetBytes, offsetBytes);
      const to = Math.min(e.offsetBytes + e.data.length, end);
      e.data.copy(target, from - offsetBytes, from - e.offsetBytes, to - e.offsetBytes);
    }
  }

  /** Buffered bytes inside [startBytes, endBytes). */
  coverage(startBytes: number, endBytes: number): number {
    let n = 0;
    for (let i = this.firstEndingAfter(startBytes); i < this.list.length; i++) {
      const e = this.list[i];
      if (e.offsetBytes >= endBytes) break;
      n += Math.min(e.offsetBytes + e.data.length, endBytes) - Math.max(e.offsetBytes, startBytes);
    }
    return n;
  }

  /** Remove and return the extents inside [startBytes, endBytes), split at the edges. */
  take(startBytes: number, endBytes: number): Extent[] {
    const i = this.firstEndingAfter(startBytes);
    let j = i;
    const taken: Extent[] = [];
    const keep: Extent[] = [];
    while (j < this.list.length && this.list[j].offsetBytes < endBytes) {
      const e = this.list[j];
      const eEnd = e.offsetBytes + e.data.length;
      const from = Math.max(e.offsetBytes, startBytes);
      const to = Math.min(eEnd, endBytes);
      if (e.offsetBytes < from) keep.push({ offsetBytes: e.offsetBytes, data: e.data.subarray(0, from - e.offsetBytes) });
      taken.push({ offsetBytes: from, data: e.data.subarray(from - e.offsetBytes, to - e.offsetBytes) });
      if (eEnd > to) keep.push({ offsetBytes: to, data: e.data.subarray(to - e.offsetBytes) });
      this.totalBytes -= to - from;
      j++;
    }
    this.list.splice(i, j - i, ...keep);
    return taken;
  }

  /** Everything, in offset order, leaving the map empty. */
  takeAll(): Extent[] {
    const all = this.list;
    this.list = [];
    this.totalBytes = 0;
    return all;
  }

  /** Drop buffered bytes at or beyond sizeBytes (truncate). */
  truncate(sizeBytes: number): void {
    this.take(sizeBytes, Number.MAX_SAFE_INTEGER);
  }
}

/** Contiguous bytes as a list of parts (views, not yet copied into one buffer). */
export interface Run { offsetBytes: number; lengthBytes: number; parts: Buffer[] }

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
      const joins = cur !== null && cur.offsetBytes + cur.lengthBytes === off && Math.floor(cur.offsetBytes / chunkSizeBytes) === chunk;
      if (!joins) { cur = { offsetBytes: off, lengthBytes: 0, parts: [] }; runs.push(cur); }
      cur!.parts.push(piece);
      cur!.lengthBytes += piece.length;
      off += piece.length;
      data = data.subarray(piece.length);
    }
  }
  return runs;
}
