// What fs/mount.ts needs from a transport: mounted on start, and a stop that returns once no
// request is left unanswered and the kernel connection is gone.
export type TransportName = 'fuse3' | 'fuse-native';
export const TRANSPORTS: readonly TransportName[] = ['fuse3', 'fuse-native'];

export interface TransportOptions {
  allowOther: boolean;
  /** per-op timeout (fuse-native only): a store op slower than this answers ETIMEDOUT */
  opTimeoutMs: number;
  /** libfuse3: the kernel caches written pages and sends them in large writes (writeback_cache) */
  writebackCache: boolean;
  log(message: string): void;
}

export interface Transport {
  readonly name: TransportName;
  /** Unmount (unless goneAlready: unmounted from outside) and wait until every request is answered. */
  stop(goneAlready: boolean): Promise<void>;
}
