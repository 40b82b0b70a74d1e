// `chunkfs compact [TARGET] [--json]`: what was sealed and compacted, and the containers now.
import type { ToolCommand } from '../tool-args';
import type { CompactResult } from '../actions/compact';
import { runAction } from '../run-action';
import { resolveTarget } from '../target';
import { jsonText } from '../output';
import { bytesText } from '../status-text';

/** Live needles whose append failed: they stay where they were (DESIGN §5 "Small files"). */
function failedText(r: CompactResult): string {
  return r.needlesFailed > 0 ? `, ${r.needlesFailed} could not be moved` : '';
}

export async function compactVerb(c: Extract<ToolCommand, { verb: 'compact' }>): Promise<number> {
  const r = (await runAction(resolveTarget(c.target), 'compact', {}, () => undefined)).result as CompactResult;
  if (c.json) process.stdout.write(jsonText(r));
  else {
    const k = r.containers;
    process.stdout.write(
      `chunkfs compact: ${r.store}${r.online ? ' (mounted)' : ''}: sealed ${r.sealed}, compacted ${r.compacted} container(s), ` +
        `moved ${r.needlesMoved} needle(s) (${bytesText(r.bytesCopied)})${failedText(r)}; containers now: ${k.open} open, ${k.full} full, ${k.sealed} sealed, ` +
        `${bytesText(k.liveBytes)} live, ${bytesText(k.deadBytes)} dead, ${k.compactionBacklog} due for compaction\n`,
    );
  }
  for (const e of r.errors) process.stderr.write(`chunkfs compact: ${e}\n`);
  return r.errors.length > 0 ? 1 : 0;
}
