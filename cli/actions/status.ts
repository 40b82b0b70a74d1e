// `chunkfs status`: the store's status report (store/store.ts operatorStatus(): it answers while the
// metadata server is down), with what a live mount adds: where it is mounted, by which process, and
// the faults injected into it.
import { FaultTable } from '../../store/io/fault-table';
import type { OperatorStatus } from '../../store/store';
import { Action, ActionEnv, LiveMount, MountMemory } from './env';
import type { ReadGrantStats } from '../../fs/fuse/transport';

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

export type StatusResult = OperatorStatus & {
  store: string;
  mount: LiveMountStatus | null;
  faults: FaultListing[];
};

export interface LiveMountStatus {
  /** The first of mountpoints (where it was mounted first, while that is mounted). */
  mountpoint: string;
  /** Every mount point of the mount's FUSE connection: the first mount and its binds. */
  mountpoints: string[];
  pid: number;
  readOnly: boolean;
  dev: string | null;
  memory: MountMemory;
  options: Record<string, string>;
  readGrants: ReadGrantStats | null;
}

export function faultListing(faults: FaultTable): FaultListing[] {
  const now = Date.now();
  return faults.list(now).map((f) => {
    const left = FaultTable.remaining(f, now);
    return {
      id: f.id,
      kind: f.kind,
      diskId: f.diskId,
      ops: f.ops,
      latencyMs: f.latencyMs,
      hits: f.hits,
      remainingCount: left.count,
      remainingMs: left.ms,
    };
  });
}

function liveStatus(live: LiveMount): LiveMountStatus {
  const mountpoints = live.mountpoints();
  return {
    mountpoint: mountpoints[0] ?? live.mountpoint,
    mountpoints,
    pid: live.pid,
    readOnly: live.readOnly,
    dev: live.dev,
    options: live.options,
    memory: live.memory(),
    readGrants: live.readGrants(),
  };
}

export const statusAction: Action = {
  storeAccess: () => 'read',
  async run(env: ActionEnv): Promise<StatusResult> {
    const report = await env.store.operatorStatus(); // answers while the metadata server is down
    const live = env.live;
    return {
      store: env.store.dir,
      mount: live === null ? null : liveStatus(live),
      ...report,
      faults: live === null ? [] : faultListing(live.faults),
    };
  },
};
