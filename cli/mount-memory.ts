// The mount process's own memory settings (the mount's peak RSS during the fio run). The
// mount is one process, started as `node dist/cli/cli.js`: V8 flags fixed when its heap is made
// (--max-semi-space-size, --max-old-space-size) cannot be set here; the two used here are read as
// the heap grows, so setting them before the mount serves requests is enough.
import * as v8 from 'node:v8';
import { PerformanceObserver } from 'node:perf_hooks';
import { rsNative } from '../src/rs-native';

/**
 * How far V8 lets the old generation grow past what the last full collection kept, in percent. At
 * V8's own factor (up to 4x for a small heap) a mount taking random writes let 50-60 MiB of dead
 * write-back bookkeeping (promoted while buffered) pile up before a collection.
 */
export const OLD_GENERATION_GROWTH_PERCENT = 50;

/**
 * The young generation's semi-space size past which it stops growing. V8 starts at 1 MiB and
 * doubles it up to 16 MiB (32 MiB resident: two semi-spaces) while many objects survive a scavenge,
 * as they do under a mount's request rate. Kept at 1 MiB, fsync'd 4 KiB writes ran 10-20% slower.
 */
export const SEMI_SPACE_BYTES_MAX = 4 << 20;
/** V8's own growth factor of the young generation (`node --v8-options`), given back below the cap. */
export const SEMI_SPACE_GROWTH_FACTOR = 2;

/** The young generation's size now (both semi-spaces). */
function youngBytes(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

/**
 * Caps the young generation at SEMI_SPACE_BYTES_MAX and lets it grow back below the cap. Only the
 * growth factor is read after start-up, so it is set after each collection: 1 at the cap, V8's own
 * below it (it may still grow once more before a collection shows the cap reached). Why not once:
 * V8 shrinks the young generation when allocation slows (an idle mount, between two benchmark
 * jobs), and with the factor left at 1 it stayed at 1 MiB for good. Measured (fsync'd 4 KiB writes,
 * replica:3, the mount's --trace-gc): 45-56 scavenges per 1,000 writes, 48-69 us of scavenge per
 * write, against 10 per 1,000 while it still held 4 MiB.
 */
export function limitHeapGrowth(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${OLD_GENERATION_GROWTH_PERCENT}`);
  let capped: boolean | null = null;
  const follow = (): void => {
    const atCap = youngBytes() >= 2 * SEMI_SPACE_BYTES_MAX;
    if (atCap === capped) return;
    capped = atCap;
    v8.setFlagsFromString(`--semi-space-growth-factor=${atCap ? 1 : SEMI_SPACE_GROWTH_FACTOR}`);
  };
  follow();
  new PerformanceObserver(follow).observe({ entryTypes: ['gc'] });
}

/**
 * How often the mount looks at glibc's arenas. glibc returns only an arena's top to the kernel by
 * itself: measured over scripts/bench/bench-fio.sh (replica:3), the fsync'd-write job's intent spans (16 KiB
 * each, up to half the 32 MiB backlog) grew the main arena from 9 to 44-58 MiB, and it stayed so
 * after the backlog drained, under the next round's write-back buffer (that round's peak RSS: 349 MiB
 * against 313 in the first; trimmed: 317-322).
 */
export const MALLOC_CHECK_INTERVAL_MS = 1000;
/**
 * Bytes malloc must have got back since its high point before a trim runs. A trim is not cheap: it
 * advises away every free page of every arena, released before or not (measured 5 ms on average,
 * up to 80 ms, on the JavaScript thread, when run every second through the fio run); checking costs
 * about 60 us. Smaller amounts of free memory are left to glibc's own reuse.
 */
export const MALLOC_TRIM_FREED_BYTES_MIN = 8 << 20;

/** Trims the malloc arenas when much was freed (a timer, unref'd: it never keeps the mount alive). */
export function trimMallocWhenFreed(): void {
  const native = rsNative();
  if (typeof native.trimMalloc !== 'function' || typeof native.mallocInUseBytes !== 'function') return; // an addon built before them
  let highBytes = native.mallocInUseBytes();
  setInterval(() => {
    const inUseBytes = native.mallocInUseBytes();
    highBytes = Math.max(highBytes, inUseBytes);
    if (highBytes - inUseBytes < MALLOC_TRIM_FREED_BYTES_MIN) return;
    native.trimMalloc();
    highBytes = inUseBytes;
  }, MALLOC_CHECK_INTERVAL_MS).unref();
}
