// Whether the kernel may have dropped cached names (dentries, negative ones too) in a span of time:
// another process writing 2 or 3 to /proc/sys/vm/drop_caches (a benchmark starting cold), or memory
// pressure running the slab shrinkers. A test counting the FUSE requests a cached name saves tells
// such a span from a broken cache by these counters of /proc/vmstat, and measures again.
import { readFileSync } from 'node:fs';

/** /proc/vmstat counters that move whenever dentries may have been reclaimed. */
const RECLAIM_COUNTERS = ['drop_slab', 'slabs_scanned'] as const;

export type ReclaimMark = Record<(typeof RECLAIM_COUNTERS)[number], number>;

export function reclaimMark(): ReclaimMark {
  const counters = new Map(
    readFileSync('/proc/vmstat', 'utf8')
      .split('\n')
      .map((line) => line.split(' ') as [string, string]),
  );
  const mark = {} as ReclaimMark;
  for (const name of RECLAIM_COUNTERS) {
    const value = counters.get(name);
    if (value === undefined) throw new Error(`/proc/vmstat has no ${name}: cannot tell a dropped cache`);
    mark[name] = Number(value);
  }
  return mark;
}

/** What may have dropped cached names since mark (one line), or null: nothing did. */
export function reclaimedSince(mark: ReclaimMark): string | null {
  const now = reclaimMark();
  const moved = RECLAIM_COUNTERS.filter((name) => now[name] !== mark[name]);
  return moved.length === 0 ? null : moved.map((name) => `${name} +${now[name] - mark[name]}`).join(', ');
}

/** Measures taken again when the kernel may have dropped cached names meanwhile. */
export const UNDISTURBED_ATTEMPTS_MAX = 10;

/**
 * measure(attempt) (attempt from 1), taken again while its result is not as expected and the kernel
 * may have dropped cached names meanwhile (reclaimedSince): a dropped name only adds requests, so an
 * expected result holds either way, and an unexpected one only when nothing was dropped. The result
 * to check; log hears each attempt not counted. Throws when every attempt was disturbed so.
 */
export async function undisturbed<T>(
  measure: (attempt: number) => Promise<T>,
  expected: (result: T) => boolean,
  log: (line: string) => void,
): Promise<T> {
  for (let attempt = 1; attempt <= UNDISTURBED_ATTEMPTS_MAX; attempt++) {
    const mark = reclaimMark();
    const result = await measure(attempt);
    if (expected(result)) return result;
    const why = reclaimedSince(mark);
    if (why === null) return result;
    log(`attempt ${attempt} not counted: the kernel may have dropped cached names (${why})`);
  }
  throw new Error(`in each of ${UNDISTURBED_ATTEMPTS_MAX} attempts the kernel may have dropped cached names`);
}
