// One async lock per key (inode): writes, truncates, deletes and reads of one file
// are serialized so a read never sees a chunk version being swapped out under it.
import { assert } from '../src/errors';

const WAITERS_MAX = 100_000;

export class KeyedMutex {
  private readonly tails = new Map<number, { tail: Promise<void>; waiters: number }>();

  /** Whether an operation holds or waits for key's lock (a synchronous reader must not overtake it). */
  busy(key: number): boolean {
    return this.tails.has(key);
  }

  async run<T>(key: number, fn: () => Promise<T>): Promise<T> {
    const entry = this.tails.get(key) ?? { tail: Promise.resolve(), waiters: 0 };
    assert(entry.waiters < WAITERS_MAX, 'too many operations queued on one inode');
    const previous = entry.tail;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    entry.tail = previous.then(() => mine);
    entry.waiters++;
    this.tails.set(key, entry);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      entry.waiters--;
      if (entry.waiters === 0 && this.tails.get(key) === entry) this.tails.delete(key);
    }
  }
}
