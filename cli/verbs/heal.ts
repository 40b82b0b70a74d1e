// `chunkfs heal [TARGET] [--list] [--json]`: show the heal queue, or drain it now with
// progress. Exit 1 when a shard could not be rebuilt.
import type { ToolCommand } from '../tool-args';
import type { HealListResult, HealRunResult } from '../actions/heal';
import { runAction } from '../run-action';
import { resolveTarget } from '../target';
import { jsonText } from '../output';
import { progressView } from '../progress';
import { shardList } from '../shard-list';
import { durationText } from '../progress-text';

function listText(r: HealListResult): string {
  const lines = [`heal queue of ${r.store}${r.online ? ' (mounted)' : ''}: ${r.queueLength} shard(s)`];
  const now = Date.now();
  for (const e of r.entries) {
    const next =
      e.nextTryMs === null
        ? ''
        : e.nextTryMs > now
          ? `, next try in ${durationText((e.nextTryMs - now) / 1000)}`
          : ', next try now';
    lines.push(`  ${shardList([e])}: ${e.attempts} failed attempt(s)${next}; queued for: ${e.reason}`);
  }
  if (r.queueLength > r.entries.length) lines.push(`  ... and ${r.queueLength - r.entries.length} more`);
  return lines.join('\n') + '\n';
}

export async function healVerb(c: Extract<ToolCommand, { verb: 'heal' }>): Promise<number> {
  const target = resolveTarget(c.target);
  if (c.list) {
    const r = (await runAction(target, 'heal', { list: true }, () => undefined)).result as HealListResult;
    process.stdout.write(c.json ? jsonText(r) : listText(r));
    return 0;
  }
  const view = progressView('chunkfs heal');
  let r: HealRunResult;
  try {
    r = (await runAction(target, 'heal', { list: false }, (p) => view.update(p))).result as HealRunResult;
  } finally {
    view.stop();
  }
  if (c.json) process.stdout.write(jsonText(r));
  else {
    process.stdout.write(
      `chunkfs heal: ${r.store}${r.online ? ' (mounted)' : ''}: ${r.tried} queued shard(s) tried, ${r.healed} rebuilt, ` +
        `${r.alreadyGood} verified good already, ${r.failed.length} failed; ${r.queueLength} left in the queue${r.cancelled ? ' (cancelled before the end)' : ''}\n`,
    );
  }
  for (const f of r.failed) process.stderr.write(`chunkfs heal: cannot rebuild ${shardList([f])}: ${f.error}\n`);
  return r.failed.length > 0 || r.cancelled ? 1 : 0;
}
