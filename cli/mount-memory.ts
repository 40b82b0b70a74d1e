// The mount process's own memory settings (issue 20: the mount's peak RSS during the fio run). The
// mount is one process, started as `node dist/cli/cli.js`: V8 flags fixed when its heap is made
// (--max-semi-space-size, --max-old-space-size) cannot be set here; the two used here are read as
// the heap grows, so setting them before the mount serves requests is enough.
import * as v8 from 'node:v8';
import { PerformanceObserver } from 'node:perf_hooks';

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

export function limitHeapGrowth(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${OLD_GENERATION_GROWTH_PERCENT}`);
  // Only the growth factor is read after start-up: once a collection shows the cap reached, the
  // young generation keeps its size (it may still grow once more before this runs).
  const youngAtCap = (): boolean => (v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0) >= 2 * SEMI_SPACE_BYTES_MAX;
  const stopGrowing = (): void => v8.setFlagsFromString('--semi-space-growth-factor=1');
  if (youngAtCap()) {
    stopGrowing();
    return;
  }
  const gcs = new PerformanceObserver(() => {
    if (!youngAtCap()) return;
    stopGrowing();
    gcs.disconnect();
  });
  gcs.observe({ entryTypes: ['gc'] });
}
