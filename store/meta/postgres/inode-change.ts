// A change an operation makes to an inode row, applied to the row the mount keeps of it
// (row-cache.ts; DESIGN §9 "Fewer round trips"): the operation says what it wrote, as values, so
// the kept row follows it whatever the statement's text. Values are kept as the server prints them.
import { NEAR_NS_MAX, NEAR_NS_MIN } from '../far-times';
import { CachedResult } from './result';

/** A column's new value: a value, an addition to it, or the larger of it and a value (GREATEST). */
export type ColumnChange = string | null | { add: bigint } | { max: bigint };
/** Columns of one inode row and their new values. */
export type InodeChange = Readonly<Record<string, ColumnChange>>;
/**
 * What a write does to a kept row: the row after it, null when the row is gone, undefined when it
 * cannot be told (the row is dropped and read again).
 */
export type RowPatch = (r: CachedResult) => CachedResult | null | undefined;

/** A value bound to a statement, as the server prints it. */
export function asText(v: bigint | number | string | null): string | null {
  return v === null ? null : String(v);
}

/** The clamps a far time's *_ns column holds (far-times.ts): its *_far column stays. */
const CLAMPS = new Set([String(NEAR_NS_MIN), String(NEAR_NS_MAX)]);
/** Each time's *_ns column and the *_far column its trigger sets NULL when *_ns is written (far-times.ts). */
const FAR_OF: ReadonlyArray<[string, string]> = [
  ['atime_ns', 'atime_far'],
  ['mtime_ns', 'mtime_far'],
  ['ctime_ns', 'ctime_far'],
];

/**
 * change applied to r's row (in place), as the server applies it: the SET values, then the
 * triggers of far-times.ts (a *_ns column written with any value but a clamp clears its *_far).
 */
export function applyChange(r: CachedResult, change: InodeChange): CachedResult | undefined {
  const row = r.values[0];
  for (const col of Object.keys(change)) {
    const c = r.names.indexOf(col);
    if (c < 0) return undefined;
    const v = change[col];
    if (v === null || typeof v === 'string') {
      row[c] = v;
      continue;
    }
    if (row[c] === null) return undefined; // GREATEST skips NULL, + gives NULL: not worth following
    const old = BigInt(row[c]!);
    row[c] = 'add' in v ? String(old + v.add) : String(old >= v.max ? old : v.max);
  }
  for (const [ns, far] of FAR_OF) {
    if (!(ns in change)) continue;
    const n = r.names.indexOf(ns);
    const f = r.names.indexOf(far);
    if (f >= 0 && row[f] !== null && !CLAMPS.has(row[n]!)) row[f] = null;
  }
  return r;
}

/** A patch that writes change into the row. */
export function changing(change: InodeChange): RowPatch {
  return (r) => applyChange(r, change);
}

/** The patch of a DELETE: the row is gone. */
export const GONE: RowPatch = () => null;
