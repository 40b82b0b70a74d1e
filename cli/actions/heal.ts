// `chunkfs heal` (DESIGN §7 "heal (queue, progress)"): list the persistent heal queue, or
// drain it now (every entry, whatever its backoff) with progress; on the live mount or offline.
import type { HealQueueEntry } from '../../store/store';
import { Action, ActionEnv } from './env';
import { ShardAt } from './scrub';

export interface HealArgs {
  list: boolean;
}

/** Queue entries listed by --list; the length is exact. */
export const HEAL_LISTED_MAX = 1_000;

export interface HealListResult {
  store: string;
  online: boolean;
  queueLength: number;
  entries: HealQueueEntry[];
}

export interface HealRunResult {
  store: string;
  online: boolean;
  tried: number;
  healed: number;
  alreadyGood: number;
  failed: Array<ShardAt & { error: string }>;
  cancelled: boolean;
  queueLength: number;
}

export const healAction: Action = {
  storeAccess: (args) => ((args as HealArgs).list ? 'read' : 'write'),
  async run(env: ActionEnv, args: unknown): Promise<HealListResult | HealRunResult> {
    const store = env.store;
    const online = env.live !== null;
    if ((args as HealArgs).list) {
      return {
        store: store.dir,
        online,
        queueLength: (await store.status()).healQueueLength,
        entries: store.healQueue(HEAL_LISTED_MAX),
      };
    }
    const report = await store.heal(undefined, {
      signal: env.signal,
      onProgress: (p) => env.progress({ phase: 'heal', doneBytes: 0, totalBytes: 0, ...p }),
    });
    return {
      store: store.dir,
      online,
      tried: report.examined,
      healed: report.healed,
      alreadyGood: report.dropped,
      failed: report.failed.map((f) => ({
        ino: f.ino,
        path: store.pathOf(f.ino),
        chunkIndex: f.chunkIndex,
        shardIndex: f.shardIndex,
        error: f.error,
      })),
      cancelled: report.cancelled,
      queueLength: (await store.status()).healQueueLength,
    };
  },
};
