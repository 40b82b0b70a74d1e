// `chunkfs fsck`: the metadata against the shards (store/upkeep/fsck.ts), on the live mount's
// store or offline, with progress in chunks; repair rebuilds, removes leaked files, drains the
// reclaim queue and (offline only) deletes unlinked inodes.
import type { FsckReport } from '../../store/upkeep/fsck';
import { Action, ActionEnv } from './env';

export interface FsckArgs {
  repair: boolean;
  force?: boolean;
}

export interface FsckResult extends Omit<FsckReport, 'problems'> {
  store: string;
  online: boolean;
  repair: boolean;
  problems: Array<FsckReport['problems'][number] & { file: string | null }>;
}

export const fsckAction: Action = {
  storeAccess: () => 'write', // problems found are queued for heal
  async run(env: ActionEnv, args: unknown): Promise<FsckResult> {
    const { repair, force } = args as FsckArgs;
    const r = await env.store.fsck({
      repair,
      force: force === true,
      offline: env.live === null,
      signal: env.signal,
      onProgress: (p) => env.progress({ phase: 'fsck', doneBytes: 0, totalBytes: 0, ...p }),
    });
    return {
      ...r,
      store: env.store.dir,
      online: env.live !== null,
      repair,
      problems: r.problems.map((p) => ({ ...p, file: env.store.pathOf(p.ino) })),
    };
  },
};
