// What `chunkfs inject` asks for, as parsed by cli/tool-args.ts and sent to the mount.
export type CorruptWhat = 'data' | 'hash' | 'header';
export type IoFaultKind = 'eio' | 'enospc' | 'latency';
export type FaultOpsArg = 'read' | 'write' | 'all';

export type InjectArgs =
  /** file: the path inside the filesystem, relative to its root. */
  | { action: 'corrupt'; file: string; chunk: number; shard?: number; block: number; what: CorruptWhat }
  | { action: 'drop'; file: string; chunk: number; shard?: number }
  | { action: 'offline' | 'online'; disk: number }
  | { action: IoFaultKind; disk: number; ops: FaultOpsArg; count?: number; durationMs?: number; latencyMs?: number }
  | { action: 'list' }
  | { action: 'clear'; id?: number };

export const INJECT_ACTIONS = ['corrupt', 'drop', 'offline', 'online', 'eio', 'enospc', 'latency'] as const;
