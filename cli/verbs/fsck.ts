// `chunkfs fsck [TARGET] [--repair] [--json]` (issue 11): a summary line, one line per problem, exit 1
// unless consistent (or everything was repaired).
import type { ToolCommand } from '../tool-args';
import type { FsckResult } from '../actions/fsck';
import { runAction } from '../run-action';
import { resolveTarget } from '../target';
import { jsonText } from '../output';
import { progressView } from '../progress';
import { shardList } from '../shard-list';

function summary(r: FsckResult): string {
  const leaks = r.leaks;
  const fixed = r.repair ? ` (rebuilt ${r.rebuilt}, ${r.rebuildFailed} failed; removed ${leaks.removed} leaked file(s); deleted ${r.orphansDeleted} unlinked inode(s); reclaimed ${r.reclaimed} version(s))` : '';
  return `chunkfs fsck: ${r.store}${r.online ? ' (mounted)' : ''}: ${r.chunks} chunks, ${r.shardsChecked} shards checked` +
    `${r.shardsOnOfflineDisks > 0 ? ` (${r.shardsOnOfflineDisks} on offline disks not checked)` : ''}: ${r.missing} missing, ${r.badHeaders} bad headers, ` +
    `${r.ioErrors} unreadable, ${leaks.leakedShards} leaked shard file(s), ${leaks.leakedTemps} leaked temp file(s), ${r.orphanInodes} unlinked inode(s); ` +
    `reclaim backlog ${r.reclaimBacklog}, open intents ${r.openIntents}, heal queue ${r.healQueueLength}${fixed}${r.cancelled ? ' (cancelled before the end)' : ''}\n`;
}

/** Anything left that needs attention. */
function unresolved(r: FsckResult): boolean {
  const shardProblems = r.missing + r.badHeaders + r.ioErrors;
  const leaked = r.leaks.leakedShards + r.leaks.leakedTemps;
  if (!r.repair) return shardProblems > 0 || leaked > 0 || (r.orphanInodes > 0 && !r.online) || r.cancelled;
  return r.rebuilt < shardProblems || r.rebuildFailed > 0 || r.leaks.removed < leaked || r.cancelled;
}

export async function fsckVerb(c: Extract<ToolCommand, { verb: 'fsck' }>): Promise<number> {
  const view = progressView('chunkfs fsck');
  let r: FsckResult;
  try {
    r = (await runAction(resolveTarget(c.target), 'fsck', { repair: c.repair }, (p) => view.update(p))).result as FsckResult;
  } finally {
    view.stop();
  }
  if (c.json) process.stdout.write(jsonText(r));
  else process.stdout.write(summary(r));
  for (const p of r.problems) process.stderr.write(`chunkfs fsck: ${p.kind}: ${shardList([{ ...p, path: p.file }])} (disk ${p.diskId}, ${p.path}): ${p.detail}\n`);
  if (!c.repair && r.leaks.paths.length > 0) process.stderr.write(`chunkfs fsck: leaked (run with --repair to remove): ${r.leaks.paths.join(', ')}\n`);
  return unresolved(r) ? 1 : 0;
}
