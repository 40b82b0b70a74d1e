// `chunkfs fsck [TARGET] [--repair] [--json]`: a summary line, one line per problem, exit 1
// unless consistent (or everything was repaired).
import type { ToolCommand } from '../tool-args';
import type { FsckResult } from '../actions/fsck';
import { runAction } from '../run-action';
import { resolveTarget } from '../target';
import { jsonText } from '../output';
import { progressView } from '../progress';
import { shardList } from '../shard-list';
import { leakLines, leaksUnresolved } from '../leak-text';

function summary(r: FsckResult): string {
  const leaks = r.leaks;
  const fixed = r.repair
    ? ` (rebuilt ${r.rebuilt}, ${r.rebuildFailed} failed; moved ${leaks.removed} leaked file(s) to quarantine; ` +
      `deleted ${r.orphansDeleted} unlinked inode(s); reclaimed ${r.reclaimed} version(s))`
    : '';
  return (
    `chunkfs fsck: ${r.store}${r.online ? ' (mounted)' : ''}: ${r.chunks} chunks, ${r.shardsChecked} shards checked` +
    `${r.shardsOnOfflineDisks > 0 ? ` (${r.shardsOnOfflineDisks} on offline disks not checked)` : ''}: ${r.missing} missing, ${r.badHeaders} bad headers, ` +
    `${r.ioErrors} unreadable, ${leaks.leakedShards} leaked shard file(s), ${leaks.leakedTemps} leaked temp file(s), ` +
    `${leaks.unknown} unknown file(s), ${r.orphanInodes} unlinked inode(s), ` +
    `${r.unaccountedInodes.length} unaccounted inode(s), ${r.containerRowsWithoutInode.length} container row(s) without an inode; ` +
    `reclaim backlog ${r.reclaimBacklog}, open intents ${r.openIntents}, heal queue ${r.healQueueLength}${fixed}${r.cancelled ? ' (cancelled before the end)' : ''}\n`
  );
}

/** Anything left that needs attention. */
function unresolved(r: FsckResult): boolean {
  const shardProblems = r.missing + r.badHeaders + r.ioErrors;
  if (r.unaccountedInodes.length > 0 || r.containerRowsWithoutInode.length > 0) return true; // never repaired here
  if (leaksUnresolved(r.leaks, r.repair)) return true;
  if (!r.repair) return shardProblems > 0 || (r.orphanInodes > 0 && !r.online) || r.cancelled;
  return r.rebuilt < shardProblems || r.rebuildFailed > 0 || r.cancelled;
}

export async function fsckVerb(c: Extract<ToolCommand, { verb: 'fsck' }>): Promise<number> {
  const view = progressView('chunkfs fsck');
  let r: FsckResult;
  try {
    const args = { repair: c.repair, force: c.force };
    r = (await runAction(resolveTarget(c.target), 'fsck', args, (p) => view.update(p))).result as FsckResult;
  } finally {
    view.stop();
  }
  if (c.json) process.stdout.write(jsonText(r));
  else process.stdout.write(summary(r));
  for (const p of r.problems)
    process.stderr.write(
      `chunkfs fsck: ${p.kind}: ${shardList([{ ...p, path: p.file }])} (disk ${p.diskId}, ${p.path}): ${p.detail}\n`,
    );
  if (r.unaccountedInodes.length > 0)
    process.stderr.write(
      `chunkfs fsck: inodes with no name, orphan entry or container row (left as they are): ${r.unaccountedInodes.join(', ')}\n`,
    );
  if (r.containerRowsWithoutInode.length > 0)
    process.stderr.write(
      `chunkfs fsck: container rows whose inode is gone (left as they are): ${r.containerRowsWithoutInode.join(', ')}\n`,
    );
  for (const line of leakLines(r.leaks, c.repair)) process.stderr.write(`chunkfs fsck: ${line}\n`);
  return unresolved(r) ? 1 : 0;
}
