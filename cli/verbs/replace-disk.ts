// `chunkfs replace-disk DISK NEW_PATH [TARGET] [--json]`: adopt the new directory, rebuild
// onto it with progress, and say what was rebuilt.
import * as path from 'node:path';
import type { ToolCommand } from '../tool-args';
import type { ReplaceDiskResult } from '../actions/replace-disk';
import { runAction } from '../run-action';
import { resolveTarget } from '../target';
import { jsonText } from '../output';
import { progressView } from '../progress';
import { shardList } from '../shard-list';

export async function replaceDiskVerb(c: Extract<ToolCommand, { verb: 'replace-disk' }>): Promise<number> {
  const view = progressView('chunkfs replace-disk');
  let r: ReplaceDiskResult;
  try {
    const args = { diskId: c.diskId, newPath: path.resolve(c.newPath) };
    r = (await runAction(resolveTarget(c.target), 'replace-disk', args, (p) => view.update(p)))
      .result as ReplaceDiskResult;
  } finally {
    view.stop();
  }
  if (c.json) process.stdout.write(jsonText(r));
  else {
    process.stdout.write(
      `chunkfs replace-disk: ${r.store}${r.online ? ' (mounted)' : ''}: disk ${r.diskId} is now ${r.path}; ` +
        `${r.shardsChecked} shard(s) placed on it checked, ${r.rebuilt} rebuilt, ${r.failed.length} failed${r.cancelled ? ' (cancelled before the end)' : ''}\n`,
    );
  }
  for (const f of r.failed)
    process.stderr.write(`chunkfs replace-disk: cannot rebuild ${shardList([f])}: ${f.error}\n`);
  return r.failed.length > 0 || r.cancelled ? 1 : 0;
}
