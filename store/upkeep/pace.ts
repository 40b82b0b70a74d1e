// A byte-rate limit for background passes over the store (scrub --rate): after each unit
// of work, wait until the bytes done so far fit the rate since the start. Waits in short slices so
// a cancelled pass stops promptly.
export const PACE_SLICE_MS = 250;
/** A pass sleeps at most this many slices per call (about 40 min): a bounded loop. */
export const PACE_SLICES_MAX = 10_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class Pacer {
  private readonly startMs = Date.now();

  /** rateBytesPerSec undefined: no limit. */
  constructor(private readonly rateBytesPerSec: number | undefined) {}

  async pace(doneBytes: number, signal?: AbortSignal): Promise<void> {
    const rate = this.rateBytesPerSec;
    if (rate === undefined || rate <= 0) return;
    for (let slice = 0; slice < PACE_SLICES_MAX; slice++) {
      const aheadMs = (doneBytes * 1000) / rate - (Date.now() - this.startMs);
      if (aheadMs <= 0 || signal?.aborted === true) return;
      await sleep(Math.min(aheadMs, PACE_SLICE_MS));
    }
  }
}
