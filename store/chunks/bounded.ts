// Small helpers of the file I/O: range validation and bounded concurrency.

export function validRange(offsetBytes: number, lengthBytes: number): boolean {
  return Number.isSafeInteger(offsetBytes) && offsetBytes >= 0 && Number.isSafeInteger(lengthBytes) && lengthBytes >= 0;
}

/** Run fn over items with at most `limit` in flight; first error wins. */
export async function boundedAll<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
