// A small async readers-writer lock: reads of one file run together; a flush or truncate of that
// file runs alone, so a read never mixes store bytes from before a flush with a buffer from after it.
// Writers are preferred (a waiting flush blocks new readers) so memory pressure cannot be starved.

const WAITERS_MAX = 1_000_000; // far above any FUSE concurrency; a bound so a bug cannot grow forever

export class RwLock {
  private readers = 0;
  private writer = false;
  private readonly queue: Array<{ exclusive: boolean; grant: () => void }> = [];
  private idleWaiters: Array<() => void> = [];

  async shared<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(false);
    try {
      return await fn();
    } finally {
      this.release(false);
    }
  }

  /**
   * fn at once, shared, when the lock is idle: a result fn has at once (no promise) needs no lock
   * at all; a promise holds the shared lock until it settles. Else null: the caller uses shared().
   */
  sharedIfIdle<T>(fn: () => T | Promise<T>): T | Promise<T> | null {
    if (!this.idle) return null;
    const r = fn();
    if (!(r instanceof Promise)) return r;
    this.take(false);
    return r.finally(() => this.release(false));
  }

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(true);
    try {
      return await fn();
    } finally {
      this.release(true);
    }
  }

  get idle(): boolean {
    return this.readers === 0 && !this.writer && this.queue.length === 0;
  }

  /** Resolves once nothing holds the lock or waits for it (at once when idle now). */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    if (this.idleWaiters.length >= WAITERS_MAX) throw new Error('rwlock: too many idle waiters');
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private acquire(exclusive: boolean): Promise<void> {
    if (this.queue.length === 0 && this.canGrant(exclusive)) {
      this.take(exclusive);
      return Promise.resolve();
    }
    if (this.queue.length >= WAITERS_MAX) throw new Error('rwlock: too many waiters');
    return new Promise((resolve) => this.queue.push({ exclusive, grant: resolve }));
  }

  private canGrant(exclusive: boolean): boolean {
    return exclusive ? this.readers === 0 && !this.writer : !this.writer;
  }

  private take(exclusive: boolean): void {
    if (exclusive) this.writer = true;
    else this.readers += 1;
  }

  private release(exclusive: boolean): void {
    if (exclusive) this.writer = false;
    else this.readers -= 1;
    while (this.queue.length > 0 && this.canGrant(this.queue[0].exclusive)) {
      const next = this.queue.shift()!;
      this.take(next.exclusive);
      next.grant();
      if (next.exclusive) break;
    }
    if (this.idle && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}
