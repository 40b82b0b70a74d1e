// `chunkfs status [TARGET] [--json]`: asks the live mount when the store is mounted (so it
// sees live disk health and injected faults), else opens the store read-only. Exit 1 while the
// metadata server is unreachable (the report is printed all the same).
import type { ToolCommand } from '../tool-args';
import { runAction } from '../run-action';
import { resolveTarget } from '../target';
import { outageText, statusText } from '../status-text';
import type { StatusResult } from '../actions/status';
import { jsonText } from '../output';

export async function statusVerb(c: Extract<ToolCommand, { verb: 'status' }>): Promise<number> {
  const { result } = await runAction(resolveTarget(c.target), 'status', {}, () => undefined);
  process.stdout.write(c.json ? jsonText(result) : statusText(JSON.parse(jsonText(result))));
  // Degraded: the metadata server is down (DESIGN §9 "A broken connection"); printed above all the same.
  const meta = (result as StatusResult).metadata;
  if (meta.unreachable === undefined || meta.unreachable === null) return 0;
  const down = outageText(JSON.parse(jsonText(meta.unreachable)));
  process.stderr.write(`chunkfs status: the metadata server ${meta.location} is ${down}\n`);
  return 1;
}
