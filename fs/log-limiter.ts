// One log line per event, at most one per key (a chunk, or one kind of error) per window (DESIGN §7:
// one unrecoverable chunk was logged 9 times by the reads that met it). Later events of a key within
// the window are counted and the count rides on its next line.
import { LRUCache } from 'lru-cache';

export const LOG_WINDOW_MS = 60_000;
/** Keys remembered; an evicted key simply logs again. */
export const LOG_KEYS_MAX = 1024;

export class LogLimiter {
  private readonly keys = new LRUCache<string, { sinceMs: number; suppressed: number }>({ max: LOG_KEYS_MAX });

  /** The line to log now, or null when this key was logged less than a window ago. */
  line(key: string, text: string, nowMs = Date.now()): string | null {
    const k = this.keys.get(key);
    if (k !== undefined && nowMs - k.sinceMs < LOG_WINDOW_MS) {
      k.suppressed++;
      return null;
    }
    this.keys.set(key, { sinceMs: nowMs, suppressed: 0 });
    return k === undefined || k.suppressed === 0
      ? text
      : `${text} (and ${k.suppressed} more like it since the last line)`;
  }
}
