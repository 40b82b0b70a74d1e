// `chunkfs scrub`: verify every shard on the live mount's store or on the store opened
// here, with progress in shard bytes and an optional rate limit; the report names each damaged
// file by its path as well as its inode.
import type { Store } from '../../store/store';
import type { LeakReport } from '../../store/upkeep/leak-scan';
import { Action, ActionEnv } from './env';

export interface ScrubArgs {
  repair: boolean;
  force?: boolean;
  rateBytesPerSec?: number;
}

export interface ShardAt {
  ino: number;
  path: string | null;
  chunkIndex: number;
  shardIndex: number;
}

export interface ScrubSummary {
  store: string;
  online: boolean;
  repair: boolean;
  cancelled: boolean;
  shardsChecked: number;
  badFound: number;
  repaired: number;
  unrecoverable: Array<ShardAt & { error: string }>;
  /** Without --repair: the bad shards (bounded; badFound is exact). */
  bad?: ShardAt[];
  leaks: LeakReport;
  /** Small files' needles read back and checked (magic, file_id, cookie, crc); bad: the first of them. */
  needles: { checked: number; badCount: number; bad: Array<{ ino: number; path: string | null; error: string }> };
  looseModes: { count: number; fixed: number; paths: Array<{ path: string; mode: string }> };
}

function at(store: Store, r: { ino: number; chunkIndex: number; shardIndex: number }): ShardAt {
  return { ino: r.ino, path: store.pathOf(r.ino), chunkIndex: r.chunkIndex, shardIndex: r.shardIndex };
}

export const scrubAction: Action = {
  storeAccess: () => 'write',
  async run(env: ActionEnv, args: unknown): Promise<ScrubSummary> {
    const a = args as ScrubArgs;
    const report = await env.store.scrub({
      repair: a.repair,
      force: a.force === true,
      rateBytesPerSec: a.rateBytesPerSec,
      signal: env.signal,
      onProgress: (p) => env.progress({ phase: 'verify', ...p }),
    });
    const loose = report.looseModes;
    return {
      store: env.store.dir,
      online: env.live !== null,
      repair: a.repair,
      cancelled: report.cancelled,
      shardsChecked: report.examined,
      badFound: report.badCount,
      repaired: report.healed,
      unrecoverable: report.failed.map((f) => ({ ...at(env.store, f), error: f.error })),
      bad: a.repair ? undefined : report.bad.map((b) => at(env.store, b)),
      leaks: report.leaks,
      needles: {
        checked: report.needles.checked,
        badCount: report.needles.badCount,
        bad: report.needles.bad.map((b) => ({ ...b, path: env.store.pathOf(b.ino) })),
      },
      looseModes: {
        count: loose.count,
        fixed: loose.fixed,
        paths: loose.paths.map((p) => ({ path: p.path, mode: `0${p.permBits.toString(8)}` })),
      },
    };
  },
};
