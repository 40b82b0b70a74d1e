// Inode times outside what a signed 64-bit nanosecond count holds (before 1677-09-21 or after
// 2262-04-11: `touch -d 2500-01-01` gave EIO). The kernel passes signed 64-bit seconds
// plus nanoseconds, so a time may be far outside that range. Schema v6 adds atime_far, mtime_far
// and ctime_far: for such a time, the decimal nanoseconds since the epoch; NULL for every other
// time, which stays in the *_ns column alone. A far time leaves its *_ns column at a clamp (the
// nearest end of the range) so code reading *_ns alone still sorts it right; a trigger clears a far
// column whenever its *_ns column gets any other value (a write setting mtime to now; the
// engines' schema.sql and migrations.ts write these clamps out).

/** The clamps a far time leaves in its *_ns column; strictly between them a time is stored there. */
export const NEAR_NS_MIN = -(2n ** 63n) + 1n;
export const NEAR_NS_MAX = 2n ** 63n - 1n;

/** A time as its two columns: the *_ns value and the *_far text (null when *_ns holds it). */
export function toColumns(t: bigint): { ns: bigint; far: string | null } {
  if (t > NEAR_NS_MIN && t < NEAR_NS_MAX) return { ns: t, far: null };
  return { ns: t < 0n ? NEAR_NS_MIN : NEAR_NS_MAX, far: t.toString() };
}

/** The time of a row's two columns. */
export function fromColumns(ns: bigint | number, far: string | null | undefined): bigint {
  if (far === null || far === undefined) return BigInt(ns);
  if (!/^-?[0-9]+$/.test(far)) throw new RangeError(`inode time '${far}' is not a nanosecond count`);
  return BigInt(far);
}
