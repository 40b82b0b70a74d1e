// The kernel's dirty-page share for this mount. A FUSE device gets 1% of the
// dirty-page budget with a strict limit, so with -o writeback_cache writers were throttled to
// write-back speed (docs/filesystem.md: slower than no cache at all). Root may raise it per device, as here:
// /sys/class/bdi/0:<connection id>/max_ratio. Measured on this VM (one noisy run, load 10-14,
// replica:3, 128 MiB file): random 4 KiB writes 4 jobs 11,215-12,172 IOPS at 1% and 23,775-23,987
// at 40% without the strict limit; 1 job 6,973-12,870 and 10,416-13,744.
import { promises as fsp } from 'node:fs';

/** Percent of the dirty-page budget a writeback-cache mount may hold (the kernel's default: 1). */
export const DIRTY_MAX_RATIO_PERCENT = 40;

/** Raise the dirty share of FUSE connection connId; a failure (not root, no sysfs) is logged, not fatal. */
export async function raiseDirtyShare(connId: number, log: (m: string) => void): Promise<void> {
  const bdi = `/sys/class/bdi/0:${connId}`;
  try {
    await fsp.writeFile(`${bdi}/max_ratio`, String(DIRTY_MAX_RATIO_PERCENT));
    await fsp.writeFile(`${bdi}/strict_limit`, '0').catch(() => undefined); // kernels before 6.2 have no such file
  } catch (err) {
    log(
      `writeback_cache: could not raise the dirty-page share of ${bdi} (${(err as Error).message}): writers are throttled at 1%`,
    );
  }
}
