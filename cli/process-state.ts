// What /proc says of a process the CLI waits on (a mount process): stopped, a state a wait cannot
// end by itself, is told at once with what ends it (DESIGN §7).
import { readFileSync } from 'node:fs';

/** Process pid is stopped (state T: SIGSTOP or a paused job; t: a debugger); false when it cannot be told. */
export function processStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')'); // the command name may hold spaces and parentheses
    return /^[tT]$/.test(stat.slice(close + 2, close + 3));
  } catch {
    return false;
  }
}
