// Small helpers of the file I/O: range validation and bounded concurrency.

export function validRange(offsetBytes: number, lengthBytes: number): boolean {
  return Number.isSafeInteger(offsetBytes) && offsetBytes >= 0 && Number.isSafeInteger(lengthBytes) && lengthBytes >= 0;
}

/**
 * Run fn over items with at most `limit` in flight. After a failure no new item starts, and the
 * first error is thrown only once every started item has settled: callers read into buffers they
 * reuse or give back to a pool (a FUSE read's target, a pooled chunk payload), and no read may still
 * be writing into one then.
 */
export async function boundedAll<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  let firstError: unknown = null;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failed) {
      try {
        await fn(items[next++]);
      } catch (err) {
        if (!failed) firstError = err;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed) throw firstError;
}
