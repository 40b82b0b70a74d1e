// `chunkfs scrub [TARGET] [--repair [--force]] [--rate SIZE/s] [--json]`: online through the
// mount, else on the store opened here; progress on stderr; exit 1 when anything is unrecoverable, the
// leak scan left files (unknown, or a removal refused: DESIGN §4), or (without --repair) anything is bad.
import type { ToolCommand } from '../tool-args';
import type { ScrubSummary } from '../actions/scrub';
import { runAction } from '../run-action';
import { resolveTarget } from '../target';
import { jsonText } from '../output';
import { progressView } from '../progress';
import { shardList } from '../shard-list';
import { leakLines, leaksUnresolved } from '../leak-text';

function problems(c: Extract<ToolCommand, { verb: 'scrub' }>, r: ScrubSummary): string[] {
  const out: string[] = [];
  if (r.unrecoverable.length > 0) {
    out.push(`unrecoverable: ${unrecoverableList(r.unrecoverable)}`);
  }
  const loose = r.looseModes;
  if (loose.count > 0) {
    const listed = loose.paths.map((p) => `${p.path} (${p.mode})`).join(', ');
    const more = loose.count > loose.paths.length ? ` and ${loose.count - loose.paths.length} more` : '';
    out.push(
      c.repair
        ? `made ${loose.fixed} path(s) owner-only that other users could access: ${listed}${more}`
        : `${loose.count} path(s) in the store are accessible to other users (run with --repair to make them owner-only): ${listed}${more}`,
    );
  }
  out.push(...leakLines(r.leaks, c.repair));
  if (r.needles.badCount > 0) {
    out.push(
      `${r.needles.badCount} small file(s) whose needle no replica holds intact: ${r.needles.bad.map((b) => `${b.path ?? `inode ${b.ino}`}: ${b.error}`).join('; ')}`,
    );
  }
  // Shards of a chunk beyond its redundancy are listed as unrecoverable above: --repair cannot help them.
  const lost = new Set(r.unrecoverable.map((f) => `${f.ino}/${f.chunkIndex}`));
  const healable = (r.bad ?? []).filter((b) => !lost.has(`${b.ino}/${b.chunkIndex}`));
  if (!c.repair && healable.length > 0) {
    out.push(`bad or missing (queued for heal; run with --repair): ${shardList(healable)}`);
  }
  return out;
}

/** Failures grouped by chunk and error: "/g (file 5) chunk 0 shards 0,1,2: no replica verifies ...". */
function unrecoverableList(failed: ScrubSummary['unrecoverable']): string {
  const groups = new Map<string, ScrubSummary['unrecoverable']>();
  for (const f of failed) {
    const k = `${f.ino}/${f.chunkIndex}/${f.error}`;
    groups.set(k, [...(groups.get(k) ?? []), f]);
  }
  return [...groups.values()].map((g) => `${shardList(g)}: ${g[0].error}`).join('; ');
}

export async function scrubVerb(c: Extract<ToolCommand, { verb: 'scrub' }>): Promise<number> {
  const view = progressView('chunkfs scrub');
  let r: ScrubSummary;
  try {
    const args = { repair: c.repair, force: c.force, rateBytesPerSec: c.rateBytesPerSec };
    r = (await runAction(resolveTarget(c.target), 'scrub', args, (p) => view.update(p))).result as ScrubSummary;
  } finally {
    view.stop();
  }
  const leaked = r.leaks.leakedShards + r.leaks.leakedTemps;
  if (c.json) process.stdout.write(jsonText(r));
  else {
    process.stdout.write(
      `chunkfs scrub: ${r.store}${r.online ? ' (mounted)' : ''}: ${r.shardsChecked} shards checked, ${r.badFound} bad or missing, ` +
        `${r.repaired} repaired, ${r.unrecoverable.length} unrecoverable, ${r.looseModes.count} path(s) with loose modes, ` +
        `${leaked} leaked file(s)${c.repair ? ` (${r.leaks.removed} moved to quarantine)` : ''}, ${r.leaks.unknown} unknown, ` +
        `${r.needles.checked} needle(s) checked, ${r.needles.badCount} bad` +
        `${r.cancelled ? ' (cancelled before the end)' : ''}\n`,
    );
  }
  for (const line of problems(c, r)) process.stderr.write(`chunkfs scrub: ${line}\n`);
  if (r.unrecoverable.length > 0 || r.needles.badCount > 0 || r.cancelled) return 1;
  if (leaksUnresolved(r.leaks, c.repair)) return 1;
  return !c.repair && (r.badFound > 0 || r.looseModes.count > 0) ? 1 : 0;
}
