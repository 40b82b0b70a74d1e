// Requests whose answer is a promise, tracked while they wait, so a request that waits far longer
// than any disk or database should take is named in the log once ("FSYNC ino 12: no answer after
// 30 s"). A waiting request otherwise leaves no trace: in CI a mount whose metadata server had
// restarted held one fsync for 60 s and said nothing (4 Dec), so the cause could not be found.
// Requests answered at once are not tracked (the thread cannot be waiting on them).
import type { Log } from './guard';

/** A request waiting this long is named in the log (disks and the database answer in ms; a heal in s). */
export const SLOW_REQUEST_MS = 30_000;
/** How often the waiting requests are looked at. */
const CHECK_INTERVAL_MS = 5_000;
/** Requests tracked at once; past it new ones go untracked (the kernel bounds what it has in flight). */
const TRACKED_MAX = 65_536;
/** Slow requests named per check: the rest are counted in one line. */
const NAMED_PER_CHECK_MAX = 8;

interface Waiting {
  name: string;
  subject: () => string;
  startMs: number;
  told: boolean;
}

export class SlowRequests {
  private readonly waiting = new Map<number, Waiting>();
  private next = 1;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: Log,
    private readonly now: () => number = Date.now,
  ) {}

  /** A request starts waiting; the token ends it. 0: not tracked (too many waiting). */
  start(name: string, subject: () => string): number {
    if (this.waiting.size >= TRACKED_MAX) return 0;
    const token = this.next++;
    this.waiting.set(token, { name, subject, startMs: this.now(), told: false });
    if (this.timer === null) {
      this.timer = setInterval(() => this.check(), CHECK_INTERVAL_MS);
      this.timer.unref();
    }
    return token;
  }

  end(token: number): void {
    this.waiting.delete(token);
    if (this.waiting.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** Names each request waiting past SLOW_REQUEST_MS once; returns how many were named or counted. */
  check(): number {
    const nowMs = this.now();
    const slow = [...this.waiting.values()].filter((w) => !w.told && nowMs - w.startMs >= SLOW_REQUEST_MS);
    for (const w of slow.slice(0, NAMED_PER_CHECK_MAX)) {
      this.log(`${w.name} ${w.subject()}: no answer after ${Math.round((nowMs - w.startMs) / 1000)} s (still waiting)`);
    }
    if (slow.length > NAMED_PER_CHECK_MAX)
      this.log(
        `${slow.length - NAMED_PER_CHECK_MAX} more requests without an answer after ${SLOW_REQUEST_MS / 1000} s`,
      );
    for (const w of slow) w.told = true;
    return slow.length;
  }

  get waitingCount(): number {
    return this.waiting.size;
  }
}
