// `chunkfs replace-disk` (DESIGN §3): a new directory takes over a lost disk's id and so
// its placement slot; every shard placed there is rebuilt onto it at once, with progress.
import { Action, ActionEnv, ActionError } from './env';

export interface ReplaceDiskArgs {
  diskId: number;
  newPath: string;
}

export interface ReplaceDiskResult {
  store: string;
  online: boolean;
  diskId: number;
  path: string;
  shardsChecked: number;
  rebuilt: number;
  failed: Array<{ ino: number; path: string | null; chunkIndex: number; shardIndex: number; error: string }>;
  cancelled: boolean;
}

export const replaceDiskAction: Action = {
  storeAccess: () => 'write',
  async run(env: ActionEnv, args: unknown): Promise<ReplaceDiskResult> {
    const a = args as ReplaceDiskArgs;
    let r;
    try {
      r = await env.store.replaceDiskWith(a.diskId, a.newPath, {
        signal: env.signal,
        onProgress: (p) => env.progress({ phase: 'rebuild', ...p }),
      });
    } catch (err) {
      if ((err as { code?: string }).code === 'EINVAL' || (err as { code?: string }).code === 'EPERM')
        throw new ActionError((err as Error).message.replace(/^E[A-Z]+: /, ''));
      throw err;
    }
    return {
      store: env.store.dir,
      online: env.live !== null,
      diskId: a.diskId,
      path: env.store.diskPaths().get(a.diskId)!,
      shardsChecked: r.examined,
      rebuilt: r.healed,
      cancelled: r.cancelled,
      failed: r.failed.map((f) => ({ ...f, path: env.store.pathOf(f.ino) })),
    };
  },
};
