// Output helpers shared by the verbs.

/** Pretty JSON (bigints as decimal strings) with a final newline: every --json report. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2) + '\n';
}
