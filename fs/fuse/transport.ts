// What fs/mount.ts needs from a transport: mounted on start, and a stop that returns once no
// request is left unanswered and the kernel connection is gone.
export type TransportName = 'fuse3' | 'fuse-native';
/** -o spin_us default (TransportOptions.spinUs; the measured reason is in docs/benchmarks.md). */
export const SPIN_US_DEFAULT = 50;
/** -o spin_us bound: the event loop's timers wait while the thread spins. */
export const SPIN_US_MAX = 1000;

import type { OpObserver } from './op-observer';

export interface TransportOptions {
  allowOther: boolean;
  /** per-op timeout (fuse-native only): a store op slower than this answers ETIMEDOUT */
  opTimeoutMs: number;
  /** libfuse3: the kernel caches written pages and sends them in large writes (writeback_cache) */
  writebackCache: boolean;
  /**
   * libfuse3, whose JS thread reads the requests from /dev/fuse itself (no thread hand-off per
   * request, DESIGN §6; native/fuse3/session.h): after a wake-up whose requests were all answered at
   * once, it keeps reading this many microseconds before it sleeps (native/fuse3/session.cc
   * ReadRequests): a client waiting for each answer sends its next request within microseconds, and
   * taking it without sleeping saves a wake-up through another CPU. 0: sleep at once.
   */
  spinUs?: number;
  log(message: string): void;
  /** Mount source in /proc/mounts (escaped for libfuse's option parser). */
  fsname: string;
  /** -o ro: refuse every change with EROFS (read-only.ts). */
  readOnly: boolean;
  /** Set-id bits honoured (no nosuid mount flag); only root may mount so (fs/mount.ts). */
  suid: boolean;
  /** Device files usable (no nodev mount flag); root only. */
  dev: boolean;
  /** POSIX ACLs (fuse3 only: fuse-native has none); -o noacl turns them off. */
  posixAcl: boolean;
  /** Told each request's duration and result (metrics). */
  observeOp?: OpObserver;
}

export interface Transport {
  readonly name: TransportName;
  /** Unmount (unless goneAlready: unmounted from outside) and wait until every request is answered. */
  stop(goneAlready: boolean): Promise<void>;
  /** The kernel drops the file pages and attributes it caches for this mount. */
  dropKernelCache(): Promise<void>;
  /** A follower (DESIGN §9): the writer changed these inodes, so the kernel drops what it holds of them, soon. */
  writerChanged(changed: readonly number[] | 'all'): void;
  /** Reads answered by read grants (fs/fuse/read-grants.ts); null when this mount has none. */
  readGrantStats(): ReadGrantStats | null;
}

/** What read grants did since the mount (chunkfs status). */
export interface ReadGrantStats {
  /** Reads answered in C, verified, without JavaScript. */
  servedReads: number;
  /** Grants dropped because a read through them failed (JS read it again: failover, heal). */
  failedReads: number;
  /** Chunks granted now. */
  grantedChunks: number;
  /** Bytes the served reads answered (none of them passed through JS: the metrics add them). */
  servedBytes: number;
}
