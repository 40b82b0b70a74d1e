// `chunkfs status`: the store's status report (store/store.ts status()), with what a live mount
// adds: where it is mounted, by which process, and the faults injected into it.
import { FaultTable } from '../../store/io/fault-table';
import type { StatusReport } from '../../store/store';
import { Action, ActionEnv } from './env';

export interface FaultListing {
  id: number;
  kind: string;
  diskId: number;
  ops: string;
  latencyMs?: number;
  hits: number;
  remainingCount?: number;
  remainingMs?: number;
}

export interface StatusResult extends StatusReport {
  store: string;
  mount: { mountpoint: string; pid: number; readOnly: boolean } | null;
  faults: FaultListing[];
}

export function faultListing(faults: FaultTable): FaultListing[] {
  const now = Date.now();
  return faults.list(now).map((f) => {
    const left = FaultTable.remaining(f, now);
    return { id: f.id, kind: f.kind, diskId: f.diskId, ops: f.ops, latencyMs: f.latencyMs, hits: f.hits, remainingCount: left.count, remainingMs: left.ms };
  });
}

export const statusAction: Action = {
  storeAccess: () => 'read',
  async run(env: ActionEnv): Promise<StatusResult> {
    const report = await env.store.status();
    const live = env.live;
    return {
      store: env.store.dir,
      mount: live === null ? null : { mountpoint: live.mountpoint, pid: live.pid, readOnly: live.readOnly },
      ...report,
      faults: live === null ? [] : faultListing(live.faults),
    };
  },
};
