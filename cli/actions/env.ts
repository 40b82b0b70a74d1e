// What a verb's action runs against: the store, opened by the CLI when the store is not
// mounted, or the live mount's own store when the request came through the control socket. One
// implementation per verb serves both, so online and offline answers are the same reports.
import type { Store } from '../../store/store';
import type { FaultTable } from '../../store/io/fault-table';
import type { Progress } from '../control/protocol';
import type { ReadGrantStats } from '../../fs/fuse/transport';

/** What only a live mount has. */
export interface LiveMount {
  faults: FaultTable;
  /** Where it was mounted first. */
  mountpoint: string;
  /** Every mount point of its FUSE connection now: the first mount and its binds (cli/store-bind.ts). */
  mountpoints(): string[];
  /** The connection's device number ("major:minor", cli/mount-info.ts); null when it was not found. */
  dev: string | null;
  /** The options it serves with, as -o spells them (cli/bind-options.ts). */
  options: Record<string, string>;
  pid: number;
  readOnly: boolean;
  /** Store every byte buffered in the write-back buffer (inject and fsck look at the shards). */
  flush(): Promise<void>;
  /**
   * Drop the file pages and attributes the kernel caches for this mount (libfuse3 keeps pages
   * across opens), so the next read after an injected fault reaches the store and meets it.
   */
  dropKernelCache(): Promise<void>;
  /** What the mount process holds in memory now (chunkfs status). */
  memory(): MountMemory;
  /** Reads answered by read grants (fs/fuse/read-grants.ts); null: the mount has none. */
  readGrants(): ReadGrantStats | null;
}

/** A mount's memory (process.memoryUsage, and the write-back buffer's share), in bytes. */
export interface MountMemory {
  rssBytes: number;
  heapUsedBytes: number;
  /** Outside the JavaScript heap: buffers, the write-back buffer's slabs, native pools. */
  externalBytes: number;
  /** Bytes buffered for writing (accepted, not yet stored). */
  writeBufferBytes: number;
  /** Memory those bytes pin (slabs with some live bytes), and the buffer's bound (-o buffer_mb). */
  writeBufferHeldBytes: number;
  writeBufferMaxBytes: number;
}

export interface ActionEnv {
  store: Store;
  live: LiveMount | null;
  progress(p: Progress): void;
  signal: AbortSignal;
}

/** A request the store cannot carry out as asked (bad disk id, no such file, ...): said to the user as is. */
export class ActionError extends Error {}

export interface Action {
  /** How an offline run opens the store: read-only (no lock), or read-write (lock, recovery). */
  storeAccess(args: unknown): 'read' | 'write';
  /** Refused offline (faults in the Io exist only in a live mount). */
  needsLiveMount?(args: unknown): string | null;
  run(env: ActionEnv, args: unknown): Promise<unknown>;
}
