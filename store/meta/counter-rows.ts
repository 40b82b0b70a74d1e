// Rows of table `counters` (name -> value) as an engine reads and writes them (DESIGN §9
// "Operations"; sql/counter-rows.ts for both SQL engines): counts that only grow
// (store/meta/counters.ts), and values set whole (the intent log's tail, store/meta/intent-log-tail.ts).

/** Counts: a bump adds to a row (made at 0 when missing). */
export interface CounterRows {
  add(name: string, by: number): void;
  all(): Array<{ name: string; value: number }>;
}

/** Values set whole. */
export interface CounterValues {
  /** The rows among these two names that exist. */
  pair(a: string, b: string): Array<{ name: string; value: bigint }>;
  /** undefined: no such row. */
  value(name: string): bigint | undefined;
  set(name: string, value: bigint | number): void;
}
