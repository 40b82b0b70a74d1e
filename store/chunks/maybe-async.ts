// Results that are ready at once or later (the read pipeline, DESIGN §6): a verified read of cached
// shard data completes on the calling thread with no promise (a FUSE read answered in the same
// turn), and only what must wait for the disk pool, a lock or a failover becomes a promise. The
// functions that return a Maybe may throw synchronously; asPromise turns that into a rejection at
// the API edge.
export type Maybe<T> = T | Promise<T>;

export function isPromise<T>(r: Maybe<T>): r is Promise<T> {
  return r instanceof Promise;
}

/** fn() as a promise: its synchronous throw becomes a rejection. */
export function asPromise<T>(fn: () => Maybe<T>): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** fn() as a Maybe that never throws: a synchronous throw becomes a rejected promise. */
export function noThrow<T>(fn: () => Maybe<T>): Maybe<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

/** r, then next(value): synchronous while r is. */
export function andThen<T, U>(r: Maybe<T>, next: (value: T) => Maybe<U>): Maybe<U> {
  return isPromise(r) ? r.then(next) : next(r);
}
