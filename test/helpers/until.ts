// Waiting for a state a test can observe (a log line, a file, a count), never for a time: the bound
// only turns a state that never comes into a failure saying what was awaited, and is far past what
// a loaded machine takes (CI is a 2-core machine shared with other work).
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a state may take to come before the test fails. */
export const STATE_WAIT_MS = 120_000;
/** How often the state is looked at. */
const STATE_POLL_MS = 20;

/** Resolves once ok() holds; throws, naming what and detail(), if it does not within limitMs. */
export async function until(
  ok: () => boolean | Promise<boolean>,
  what: string,
  detail: () => string = () => '',
  limitMs = STATE_WAIT_MS,
): Promise<void> {
  const startMs = Date.now();
  while (!(await ok())) {
    if (Date.now() - startMs > limitMs) throw new Error(`no ${what} within ${limitMs} ms ${detail()}`.trim());
    await sleep(STATE_POLL_MS);
  }
}
