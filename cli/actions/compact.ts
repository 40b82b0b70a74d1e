// `chunkfs compact` (DESIGN §5 "Small files"): seal full containers and compact the sealed
// ones whose dead bytes reached the ratio, now, instead of waiting for the background compactor.
import type { CompactReport } from '../../store/small/compactor';
import { Action, ActionEnv } from './env';

export interface CompactResult extends CompactReport {
  store: string;
  online: boolean;
  containers: {
    open: number;
    full: number;
    sealed: number;
    liveBytes: number;
    deadBytes: number;
    compactionBacklog: number;
  };
}

export const compactAction: Action = {
  storeAccess: () => 'write',
  async run(env: ActionEnv): Promise<CompactResult> {
    env.progress({ phase: 'compact', doneBytes: 0, totalBytes: 0, doneItems: 0, totalItems: 1 });
    const r = await env.store.compact();
    env.progress({ phase: 'compact', doneBytes: 0, totalBytes: 0, doneItems: 1, totalItems: 1 });
    return { ...r, store: env.store.dir, online: env.live !== null, containers: (await env.store.status()).containers };
  },
};
