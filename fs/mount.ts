// Mount a Store on a directory: the inode-based core (fs/) served by one transport (fs/fuse/):
// libfuse3 low-level (our binding, native/fuse3/) or fuse-native (libfuse 2, path-based).
import * as os from 'node:os';
import type { StorePort } from './store-port';
import { FsCore, deleteEach } from './core';
import { HIDDEN_PREFIX } from './ops-names';
import { SPIN_US_DEFAULT } from './fuse/transport';
import type { ReadGrantStats, Transport, TransportName, TransportOptions } from './fuse/transport';
import type { OpObserver } from './fuse/op-observer';
import type { AtimeMode } from './atime';
import { applySetIdFlags, setIdDefaults } from './mount-flags';
import { posix } from './errno';

export interface MountOptions {
  transport?: TransportName;
  bufferBytesMax?: number;
  flushDelayMs?: number;
  allowOther?: boolean;
  /** libfuse3 only: let the kernel cache written pages (writeback_cache) */
  writebackCache?: boolean;
  /** libfuse3 only: how long the JS thread keeps reading after answering (fs/fuse/transport.ts) */
  spinUs?: number;
  /** per-op timeout of fuse-native; a store op slower than this answers ETIMEDOUT */
  opTimeoutMs?: number;
  log?: (message: string) => void;
  /** Mount source shown in /proc/mounts: the store directory, so a mount point leads to its store. */
  fsname?: string;
  /** Log whole stacks (-o debug). */
  debug?: boolean;
  /** -o ro: the kernel mount is read-only and every change answers EROFS (fs/fuse/read-only.ts). */
  readOnly?: boolean;
  /** Told every op's duration and result (-o metrics; fs/fuse/op-observer.ts). */
  observeOp?: OpObserver;
  /** -o noatime / -o strictatime; default relatime (fs/atime.ts). A read-only mount writes none. */
  atime?: AtimeMode;
  /** -o suid / nosuid: set-id bits take effect. Default: when mounted by root, as other root mounts. */
  suid?: boolean;
  /** -o dev / nodev: device files can be opened. Default: when mounted by root. */
  dev?: boolean;
  /** -o acl / noacl: POSIX ACLs (fs/acl.ts). Default: on with fuse3; fuse-native has none. */
  acl?: boolean;
}

/** Used when no transport is named. */
export const DEFAULT_TRANSPORT: TransportName = 'fuse3';

export interface MountedFs {
  core: FsCore;
  transport: TransportName;
  /** Unmount, then flush. goneAlready: the kernel mount was removed from outside (fusermount -u). */
  unmount(goneAlready?: boolean): Promise<void>;
  /** The kernel drops what it caches of this mount's files, so the next reads reach the store. */
  dropKernelCache(): Promise<void>;
  /** Reads answered by read grants so far (fs/fuse/read-grants.ts); null: none on this mount. */
  readGrantStats(): ReadGrantStats | null;
}

/**
 * The default bound's ceiling (mount peak RSS <= 350 MiB while a 4 GiB file is written,
 * test/mount/memory.test.ts). With transaction groups (DESIGN §5) a stored chunk leaves the buffer
 * as soon as its shards are written, so the bound holds chunks being filled and those waiting for a
 * store, not a flush backlog. Measured (4 GiB file, random bytes): with 192 MiB the mount peaked at
 * 291 MiB on replica:3 and 389-403 MiB on ec:4+2; with 128 MiB at 236 and 320 MiB; sequential writes
 * were as fast (2 GiB of zeros on ec:4+2 in 8.70 s against 8.61 s with 96 MiB). -o buffer_mb raises it.
 */
export const DEFAULT_BUFFER_BYTES_MAX = 128 << 20;
/** The default bound's floor: with 64 MiB, random 4 KiB writes over a 256 MiB file stalled on memory pressure every few seconds. */
const DEFAULT_BUFFER_BYTES_MIN = 64 << 20;

/**
 * 5% of RAM, from DEFAULT_BUFFER_BYTES_MIN to DEFAULT_BUFFER_BYTES_MAX: like the kernel's dirty page
 * cache (dirty_background_ratio is 10% of RAM), so rewrites of hot data meet in memory instead of
 * each costing a chunk rewrite.
 */
export function defaultBufferBytes(totalMemBytes = os.totalmem()): number {
  return Math.min(
    DEFAULT_BUFFER_BYTES_MAX,
    Math.max(DEFAULT_BUFFER_BYTES_MIN, Math.floor(totalMemBytes / 20 / (1 << 20)) << 20),
  );
}
// Like the kernel's 5 s writeback interval: a shorter timer rewrites the chunks under scattered random
// writes again and again (measured: random 4 KiB writes, 4 jobs, 3.4x faster than with 1 s).
export const DEFAULT_FLUSH_DELAY_MS = 5000;
const OP_TIMEOUT_MS = 120_000;

export async function mountFs(store: StorePort, mountpoint: string, opts: MountOptions = {}): Promise<MountedFs> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`chunkfs: ${m}\n`));
  const core = new FsCore(store, {
    bufferBytesMax: opts.bufferBytesMax ?? defaultBufferBytes(),
    flushDelayMs: opts.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS,
    log,
    debug: opts.debug,
    atime: opts.readOnly === true ? 'noatime' : opts.atime,
  });
  if (opts.readOnly !== true) await deleteOrphans(core, log); // read-only: changes nothing (a follower's writer does it)
  const name = opts.transport ?? DEFAULT_TRANSPORT;
  if (opts.acl === true && name !== 'fuse3') throw new Error('-o acl: POSIX ACLs need the fuse3 transport');
  const { suid, dev } = setIdDefaults(opts, process.getuid?.() === 0);
  const topts: TransportOptions = {
    allowOther: opts.allowOther ?? process.getuid?.() === 0,
    opTimeoutMs: opts.opTimeoutMs ?? OP_TIMEOUT_MS,
    writebackCache: opts.writebackCache ?? false,
    spinUs: opts.spinUs ?? SPIN_US_DEFAULT,
    log,
    fsname: opts.fsname ?? 'chunkfs',
    readOnly: opts.readOnly === true,
    observeOp: opts.observeOp,
    suid,
    dev,
    posixAcl: opts.acl ?? true,
  };
  // Loaded on demand: each transport's native library is needed only when it is used.
  let transport: Transport;
  if (name === 'fuse3') transport = await (await import('./fuse/fuse3')).mountFuse3(core, mountpoint, topts);
  else transport = await (await import('./fuse/fuse-native')).mountFuseNative(core, mountpoint, topts);
  if (suid || dev) await applySetIdFlags(mountpoint, { suid, dev }, log);
  let unmounted = false;
  // A follower (DESIGN §9): the kernel drops what it caches of each inode the writer changed.
  store.onWriterChange?.((changed) => {
    if (!unmounted) transport.writerChanged(changed);
  });
  // DESIGN §9 "A broken connection": what each open file wrote may be gone; its next fsync says EIO, once.
  store.onMetaLoss?.((why) => {
    for (const f of core.handles.allFiles()) f.flushError ??= posix('EIO', why);
  });
  return {
    core,
    transport: name,
    async dropKernelCache(): Promise<void> {
      if (!unmounted) await transport.dropKernelCache();
    },
    readGrantStats: () => (unmounted ? null : transport.readGrantStats()),
    async unmount(goneAlready = false): Promise<void> {
      if (unmounted) return;
      unmounted = true;
      await transport.stop(goneAlready);
      await core.wb.flushAll();
      core.atime.flush();
      await core.forgetAll();
    },
  };
}

/** Files unlinked while open when the last mount ended (crash): nothing holds them now. */
async function deleteOrphans(core: FsCore, log: (m: string) => void): Promise<void> {
  let hidden: ReturnType<FsCore['ns']['unlinkByPrefix']> = [];
  try {
    hidden = core.ns.unlinkByPrefix(HIDDEN_PREFIX, HIDDEN_ENTRIES_MAX);
  } catch (err) {
    log(`hidden names: ${(err as Error).message}`);
  }
  const unlinked = hidden.filter((e) => e.nlink === 0); // others: another name still links them
  await deleteEach(
    unlinked.map((e) => e.ino),
    (ino) => core.store.deleteFile(ino),
    (i, err) => log(`hidden ${unlinked[i].name}: ${(err as Error).message}`),
  );
  const orphans = core.ns.orphans();
  await deleteEach(
    orphans,
    (ino) => core.store.deleteFile(ino),
    (i, err) => log(`orphan ${orphans[i]}: ${(err as Error).message}`),
  );
}

const HIDDEN_ENTRIES_MAX = 1_000_000;
