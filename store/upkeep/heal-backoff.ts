// Per-shard exponential backoff of the background healer (a chunk beyond repair was retried
// 132-138 times in 20 s and never logged). A shard whose rebuild fails is retried after 2 s, 4 s, ...
// up to an hour; its first failure is logged once, with what was tried and why it failed, and a
// later success says how many attempts it took. Kept in memory: after a restart each queued shard is
// tried once more, then backs off again.
import { LRUCache } from 'lru-cache';

export const HEAL_BACKOFF_BASE_MS = 2_000;
export const HEAL_BACKOFF_MAX_MS = 3_600_000;
/** Shards with a backoff state; the least recently failed are forgotten first (then retried at once). */
export const HEAL_BACKOFF_ENTRIES_MAX = 100_000;

export interface HealKey {
  ino: number;
  chunkIndex: number;
  version: bigint;
  shardIndex: number;
}

interface State {
  failures: number;
  nextMs: number;
}

export class HealBackoff {
  private readonly states = new LRUCache<string, State>({ max: HEAL_BACKOFF_ENTRIES_MAX });

  constructor(private readonly log: (line: string) => void) {}

  private static key(e: HealKey): string {
    return `${e.ino}/${e.chunkIndex}/${e.version}/${e.shardIndex}`;
  }

  /** May the background healer try this shard now? */
  due(e: HealKey, nowMs = Date.now()): boolean {
    const s = this.states.peek(HealBackoff.key(e));
    return s === undefined || nowMs >= s.nextMs;
  }

  /** When the shard is next tried, or undefined when it has not failed. */
  nextTryMs(e: HealKey): number | undefined {
    return this.states.peek(HealBackoff.key(e))?.nextMs;
  }

  failed(e: HealKey, what: string, reason: string, nowMs = Date.now()): void {
    const key = HealBackoff.key(e);
    const s = this.states.get(key) ?? { failures: 0, nextMs: 0 };
    s.failures++;
    s.nextMs = nowMs + Math.min(HEAL_BACKOFF_BASE_MS * 2 ** Math.min(s.failures - 1, 31), HEAL_BACKOFF_MAX_MS);
    this.states.set(key, s);
    if (s.failures === 1) {
      this.log(
        `heal: cannot rebuild ${what}: ${reason}; retrying after ${HEAL_BACKOFF_BASE_MS / 1000} s, doubling up to ` +
          `${HEAL_BACKOFF_MAX_MS / 60_000} min (not logged again; chunkfs heal --list shows it)`,
      );
    }
  }

  succeeded(e: HealKey, what: string): void {
    const key = HealBackoff.key(e);
    const s = this.states.peek(key);
    if (s === undefined) return;
    this.states.delete(key);
    this.log(`heal: rebuilt ${what} after ${s.failures} failed attempt(s)`);
  }
}
