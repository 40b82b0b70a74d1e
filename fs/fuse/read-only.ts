// mount -o ro: every op that would change the filesystem answers EROFS, and files open
// for reading only. The store underneath still heals what reads find (a repair, not a change).
// One list of refusals for both transports: fuse-native's path-based op table (readOnlyImpl) and the
// libfuse3 request handlers (refusalOf, by op name). The libfuse3 mount is also "ro" in the kernel.
import type { Impl } from './ops-table';
import { posix } from '../errno';
import type { FsError } from '../../store/fs-error';
import type { FsCore } from '../core';

const O_ACCMODE = 0o3;
const O_RDONLY = 0;

/** fuse-native's ops that change the namespace, attributes, xattrs or data. */
const MUTATING = [
  'chmod',
  'chown',
  'utimens',
  'truncate',
  'ftruncate',
  'mkdir',
  'rmdir',
  'mknod',
  'unlink',
  'rename',
  'link',
  'symlink',
  'create',
  'write',
  'setxattr',
  'removexattr',
] as const;
/** The same for libfuse3's low-level requests (fuse3-abi.ts OP names). */
const MUTATING_LOWLEVEL = new Set([
  'setattr',
  'mknod',
  'mkdir',
  'unlink',
  'rmdir',
  'symlink',
  'rename',
  'link',
  'create',
  'write',
  'fallocate',
  'setxattr',
  'removexattr',
]);

function refuse(name: string): () => never {
  return () => {
    throw posix('EROFS', `${name}: mounted read-only`);
  };
}

/** Why every change answers EROFS now (the store lost its lease, DESIGN §9 "Lease and fencing"), or null. */
function leaseLostOf(core: FsCore): string | null {
  return core.store.leaseLost ?? null;
}

function lostRefusal(name: string, why: string): FsError {
  return posix('EROFS', `${name}: this mount lost the store's lease (${why}); unmount it`);
}

/** fuse-native: impl, with every change refused (EROFS) once the store lost its lease. */
export function leaseGuardImpl(impl: Impl): Impl {
  const guarded: Record<string, unknown> = { ...impl };
  for (const name of MUTATING) {
    const op = impl[name] as (core: FsCore, ...args: unknown[]) => unknown;
    guarded[name] = (core: FsCore, ...args: unknown[]) => {
      const why = leaseLostOf(core);
      if (why !== null) throw lostRefusal(name, why);
      return op(core, ...args);
    };
  }
  const open = impl.open;
  guarded.open = (core: Parameters<Impl['open']>[0], path: string, flags: number) => {
    const why = leaseLostOf(core);
    if (why !== null && (flags & O_ACCMODE) !== O_RDONLY) throw lostRefusal(`open ${path} for writing`, why);
    return open(core, path, flags);
  };
  return guarded as Impl;
}

/** libfuse3: the refusal of a request once the store lost its lease, or null. */
export function leaseLostRefusal(core: FsCore, opName: string, flags: number): FsError | null {
  const why = leaseLostOf(core);
  if (why === null || refusalOf(opName, flags) === null) return null;
  return lostRefusal(opName, why);
}

export function readOnlyImpl(impl: Impl): Impl {
  const ro: Record<string, unknown> = { ...impl };
  for (const name of MUTATING) ro[name] = refuse(name);
  const open = impl.open;
  ro.open = (core: Parameters<Impl['open']>[0], path: string, flags: number) => {
    if ((flags & O_ACCMODE) !== O_RDONLY) throw posix('EROFS', `open ${path} for writing: mounted read-only`);
    return open(core, path, flags);
  };
  return ro as Impl;
}

/** The refusal of a libfuse3 request on a read-only mount, or null when it may run. */
export function refusalOf(opName: string, flags: number): FsError | null {
  if (MUTATING_LOWLEVEL.has(opName)) return posix('EROFS', `${opName}: mounted read-only`);
  if (opName === 'open' && (flags & O_ACCMODE) !== O_RDONLY)
    return posix('EROFS', 'open for writing: mounted read-only');
  return null;
}
