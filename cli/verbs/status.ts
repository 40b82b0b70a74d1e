// `chunkfs status [TARGET] [--json]`: asks the live mount when the store is mounted (so it
// sees live disk health and injected faults), else opens the store read-only.
import type { ToolCommand } from '../tool-args';
import { runAction } from '../run-action';
import { resolveTarget } from '../target';
import { statusText } from '../status-text';
import { jsonText } from '../output';

export async function statusVerb(c: Extract<ToolCommand, { verb: 'status' }>): Promise<number> {
  const { result } = await runAction(resolveTarget(c.target), 'status', {}, () => undefined);
  process.stdout.write(c.json ? jsonText(result) : statusText(JSON.parse(jsonText(result))));
  return 0;
}
