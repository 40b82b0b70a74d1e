// `chunkfs inject ...`: resolve where the fault goes (FILE names its mount, else TARGET),
// run the inject action there, and say what was done.
import type { ToolCommand } from '../tool-args';
import type { InjectResult } from '../actions/inject';
import { InjectArgs } from '../actions/inject-args';
import { runAction } from '../run-action';
import { Target, resolveFile, resolveTarget } from '../target';
import { jsonText } from '../output';
import { faultText } from '../status-text';

export async function injectVerb(c: Extract<ToolCommand, { verb: 'inject' }>): Promise<number> {
  let target: Target;
  let args: InjectArgs = c.args;
  if ((args.action === 'corrupt' || args.action === 'drop') && c.file !== undefined) {
    const f = resolveFile(c.file, c.target);
    target = f.target;
    args = { ...args, file: f.relPath };
  } else {
    target = resolveTarget(c.target);
  }
  const { result } = await runAction(target, 'inject', args, () => undefined);
  const r = result as InjectResult;
  if (c.json) {
    process.stdout.write(jsonText(r));
    return 0;
  }
  const lines = [`chunkfs inject: ${r.message}`];
  for (const f of r.faults ?? []) lines.push(`  ${faultText(JSON.parse(JSON.stringify(f)))}`);
  process.stdout.write(lines.join('\n') + '\n');
  return 0;
}
