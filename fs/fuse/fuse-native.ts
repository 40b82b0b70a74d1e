// The path-based transport: fuse-native (libfuse 2 high-level API, patched: caller uid/gid,
// utimens, fgetattr). default_permissions makes the kernel check modes and owners; allow_other
// (when root) lets every user in; big_writes brings 128 KiB writes; use_ino keeps hard links'
// st_ino equal. An open file that is unlinked is renamed by libfuse to .fuse_hidden* (hidden from
// readdir) and unlinked at its last release: with hard_remove instead, fstat on it would fail
// (libfuse cannot name it), and SQLite fstat()s its unlinked temp files.
// getxattr/listxattr: fuse-native's own handlers ignore the caller's buffer size (a 1-byte listxattr
// threw in the binding and was never answered); SizedXattrFuse hands the buffer to the op table.
import Fuse = require('fuse-native');
import type { FsCore } from '../core';
import { IMPL, makeOps, ChunkfsOps } from './ops-table';
import { leaseGuardImpl, readOnlyImpl } from './read-only';
import { observeOps } from './op-observer';
import type { Transport, TransportOptions } from './transport';

export async function mountFuseNative(core: FsCore, mountpoint: string, opts: TransportOptions): Promise<Transport> {
  const ops = makeOps(core, opts.log, opts.readOnly ? readOnlyImpl(IMPL) : leaseGuardImpl(IMPL));
  const fuse = new SizedXattrFuse(
    mountpoint,
    opts.observeOp === undefined ? ops : observeOps(ops, opts.observeOp),
    {
      allowOther: opts.allowOther,
      defaultPermissions: true,
      autoUnmount: true,
      bigWrites: true,
      useIno: true,
      fsname: opts.fsname,
      subtype: 'chunkfs',
      timeout: opts.opTimeoutMs,
      // High-level libfuse gives each hard link its own kernel inode, so cached attributes of one name
      // go stale when another changes (nlink, size): ask every time. '0' as a string: the binding
      // drops a falsy number.
      attrTimeout: '0',
      // A follower (DESIGN §9): names change by another process's writes, and libfuse 2 cannot tell
      // the kernel (no notify_inval_entry in fuse-native): no name is cached (the default is 1 s).
      ...(core.followsWriter ? { entryTimeout: '0' } : {}),
    },
    { suid: opts.suid, dev: opts.dev },
  );
  await new Promise<void>((resolve, reject) => fuse.mount((err) => (err ? reject(err) : resolve())));
  return {
    name: 'fuse-native',
    // libfuse 2 without kernel_cache: the kernel drops a file's pages at each open, and attributes
    // are never cached (attr_timeout 0), so there is nothing to drop.
    dropKernelCache: () => Promise.resolve(),
    // Nothing to drop but the pages of files held open meanwhile, which fuse-native cannot reach
    // (no notify_inval_inode): they are dropped at the next open.
    writerChanged: () => undefined,
    readGrantStats: () => null,
    async stop(goneAlready: boolean): Promise<void> {
      // Still called when gone already: it also stops the binding's FUSE thread. Its fusermount
      // then fails with EINVAL, which says nothing new.
      await new Promise<void>((resolve) =>
        fuse.unmount((err) => {
          if (err && !goneAlready) opts.log(`unmount: ${err.message}`);
          resolve();
        }),
      );
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
  constructor(
    mountpoint: string,
    private readonly sized: ChunkfsOps,
    opts: Fuse.Options,
    private readonly setId: { suid: boolean; dev: boolean },
  ) {
    // The binding only checks which ops exist; the two sized ones are called by the overrides below.
    super(mountpoint, sized as unknown as Fuse.Ops, opts);
  }

  /** fuse-native knows no suid/dev option: libfuse 2 mounts nosuid,nodev unless told (fs/mount.ts). */
  override _fuseOptions(): string {
    const base = super._fuseOptions();
    const extra = `${this.setId.suid ? 'suid' : 'nosuid'},${this.setId.dev ? 'dev' : 'nodev'}`;
    return base === '' ? `-o${extra}` : `${base},${extra}`;
  }

  _op_getxattr(signal: Signal, path: string, name: string, buf: Buffer, position: number, ctx: Fuse.Context): void {
    this.sized.getxattr(path, name, buf, (n) => signal(n, buf.buffer as ArrayBuffer), ctx);
  }

  _op_listxattr(signal: Signal, path: string, buf: Buffer, ctx: Fuse.Context): void {
    this.sized.listxattr(path, buf, (n) => signal(n, buf.buffer as ArrayBuffer), ctx);
  }
}
