// Mount a Store on a directory with fuse-native (patched: caller uid/gid, utimens, fgetattr).
// default_permissions makes the kernel check modes and owners; allow_other (when root) lets every
// user in; big_writes brings 128 KiB writes; use_ino keeps hard links' st_ino equal. An open file that
// is unlinked is renamed by libfuse to .fuse_hidden* (hidden from readdir) and unlinked at its last
// release: with hard_remove instead, fstat on it would fail (libfuse cannot name it), and SQLite
// fstat()s its unlinked temp files.
// getxattr/listxattr: fuse-native's own handlers ignore the caller's buffer size (a 1-byte listxattr
// threw in the binding and was never answered); SizedXattrFuse hands the buffer to the op table.
import * as os from 'node:os';
import Fuse = require('fuse-native');
import type { StorePort } from './store-port';
import { FsCore } from './core';
import { IMPL, makeOps, ChunkfsOps } from './ops-table';
import { readOnlyImpl } from './read-only';
import { OpObserver, observeOps } from './op-observer';
import { HIDDEN_PREFIX } from './ops-names';

export interface MountOptions {
  bufferBytesMax?: number;
  flushDelayMs?: number;
  allowOther?: boolean;
  /** per-op timeout of the binding; a store op slower than this answers ETIMEDOUT */
  opTimeoutMs?: number;
  log?: (message: string) => void;
  /** Mount source shown in /proc/mounts: the store directory, so a mount point leads to its store (issue 11). */
  fsname?: string;
  /** Log whole stacks (-o debug). */
  debug?: boolean;
  /** -o ro: every change answers EROFS (fs/read-only.ts). */
  readOnly?: boolean;
  /** Told every op's duration and result (-o metrics; fs/op-observer.ts). */
  observeOp?: OpObserver;
}

export interface MountedFs {
  core: FsCore;
  /** Unmount, then flush every buffer. The caller closes the store afterwards. */
  /** Unmount, then flush. goneAlready: the kernel mount was removed from outside (fusermount -u). */
  unmount(goneAlready?: boolean): Promise<void>;
}

/**
 * 5% of RAM, from 64 MiB to 1 GiB: like the kernel's dirty page cache (dirty_background_ratio is 10%
 * of RAM), so rewrites of hot data meet in memory instead of each costing a chunk rewrite. With
 * 64 MiB, random 4 KiB writes over a 256 MiB file stalled on memory pressure every few seconds.
 */
export function defaultBufferBytes(totalMemBytes = os.totalmem()): number {
  return Math.min(1 << 30, Math.max(64 << 20, Math.floor(totalMemBytes / 20 / (1 << 20)) << 20));
}
// Like the kernel's 5 s writeback interval: a shorter timer rewrites the chunks under scattered random
// writes again and again (measured: random 4 KiB writes, 4 jobs, 3.4x faster than with 1 s).
export const DEFAULT_FLUSH_DELAY_MS = 5000;

export async function mountFs(store: StorePort, mountpoint: string, opts: MountOptions = {}): Promise<MountedFs> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`chunkfs: ${m}\n`));
  const core = new FsCore(store, {
    bufferBytesMax: opts.bufferBytesMax ?? defaultBufferBytes(),
    flushDelayMs: opts.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS,
    log, debug: opts.debug,
  });
  await deleteOrphans(core, log);
  const ops = makeOps(core, log, opts.readOnly === true ? readOnlyImpl(IMPL) : IMPL);
  const fuse = new SizedXattrFuse(mountpoint, opts.observeOp === undefined ? ops : observeOps(ops, opts.observeOp), {
    allowOther: opts.allowOther ?? process.getuid?.() === 0,
    defaultPermissions: true, autoUnmount: true, bigWrites: true, useIno: true,
    fsname: opts.fsname ?? 'chunkfs', subtype: 'chunkfs', timeout: opts.opTimeoutMs ?? 120_000,
    // High-level libfuse gives each hard link its own kernel inode, so cached attributes of one name
    // go stale when another changes (nlink, size): ask every time. '0' as a string: the binding
    // drops a falsy number.
    attrTimeout: '0',
  });
  await new Promise<void>((resolve, reject) => fuse.mount((err) => (err ? reject(err) : resolve())));
  let unmounted = false;
  return {
    core,
    async unmount(goneAlready = false): Promise<void> {
      if (unmounted) return;
      unmounted = true;
      // Still called when gone already: it also stops the binding's FUSE thread. Its fusermount
      // then fails with EINVAL, which says nothing new.
      await new Promise<void>((resolve) => fuse.unmount((err) => {
        if (err && !goneAlready) log(`unmount: ${err.message}`);
        resolve();
      }));
      await core.wb.flushAll();
    },
  };
}

type Signal = (res: number, detach?: ArrayBuffer) => void;

/**
 * fuse-native with getxattr/listxattr that honour the caller's size (these override the binding's
 * handlers of the same name; it looks them up per request). The native side detaches the buffer on
 * every answer, so it is always passed back.
 */
class SizedXattrFuse extends Fuse {
  constructor(mountpoint: string, private readonly sized: ChunkfsOps, opts: Fuse.Options) {
    // The binding only checks which ops exist; the two sized ones are called by the overrides below.
    super(mountpoint, sized as unknown as Fuse.Ops, opts);
  }

  _op_getxattr(signal: Signal, path: string, name: string, buf: Buffer, position: number, ctx: Fuse.Context): void {
    this.sized.getxattr(path, name, buf, (n) => signal(n, buf.buffer as ArrayBuffer), ctx);
  }

  _op_listxattr(signal: Signal, path: string, buf: Buffer, ctx: Fuse.Context): void {
    this.sized.listxattr(path, buf, (n) => signal(n, buf.buffer as ArrayBuffer), ctx);
  }
}

/** Files unlinked while open when the last mount ended (crash): nothing holds them now. */
async function deleteOrphans(core: FsCore, log: (m: string) => void): Promise<void> {
  let hidden: ReturnType<FsCore['ns']['unlinkByPrefix']> = [];
  try { hidden = core.ns.unlinkByPrefix(HIDDEN_PREFIX, HIDDEN_ENTRIES_MAX); } catch (err) { log(`hidden names: ${(err as Error).message}`); }
  for (const e of hidden) {
    if (e.nlink !== 0) continue; // another name still links it
    try { await core.store.deleteFile(e.ino); } catch (err) { log(`hidden ${e.name}: ${(err as Error).message}`); }
  }
  for (const ino of core.ns.orphans()) {
    try { await core.store.deleteFile(ino); } catch (err) { log(`orphan ${ino}: ${(err as Error).message}`); }
  }
}

const HIDDEN_ENTRIES_MAX = 1_000_000;
