// One async lock per key (inode): writes, truncates, deletes and reads of one file
// are serialized so a read never sees a chunk version being swapped out under it.
import { assert } from '../../src/errors';
import { Maybe, isPromise } from './maybe-async';

const WAITERS_MAX = 100_000;

export class KeyedMutex {
  private readonly tails = new Map<number, { tail: Promise<void>; waiters: number }>();

  /** Whether an operation holds or waits for key's lock (a synchronous reader must not overtake it). */
  busy(key: number): boolean {
    return this.tails.has(key);
  }

  /** Operations holding or waiting for key's lock (1: one holds it and nobody waits). */
  holders(key: number): number {
    return this.tails.get(key)?.waiters ?? 0;
  }

  /**
   * Run fn at once when key's lock is free, holding the lock until fn's promise settles; a result
   * fn has at once (no promise) needs no lock entry at all. Else null: the caller uses run().
   * For the read pipeline (store/file-io.ts): a cached read takes no promise and no lock entry.
   */
  runIfFree<T>(key: number, fn: () => Maybe<T>): Maybe<T> | null {
    if (this.tails.has(key)) return null;
    const r = fn();
    if (!isPromise(r)) return r;
    assert(!this.tails.has(key), 'runIfFree: fn took the lock it runs under');
    const entry = { tail: Promise.resolve(), waiters: 1 };
    // The caller sees the result only once the lock is released: a read right after it is free to run at once.
    const done = r.finally(() => {
      entry.waiters--;
      if (entry.waiters === 0 && this.tails.get(key) === entry) this.tails.delete(key);
    });
    entry.tail = done.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, entry);
    return done;
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
