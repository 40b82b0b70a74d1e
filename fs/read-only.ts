// mount -o ro (issue 11): every op that would change the filesystem answers EROFS, and files open
// for reading only. The store underneath still heals what reads find (a repair, not a change).
import type { Impl } from './ops-table';
import { posix } from './errno';

const O_ACCMODE = 0o3;
const O_RDONLY = 0;

/** The ops that change the namespace, attributes, xattrs or data. */
const MUTATING = ['chmod', 'chown', 'utimens', 'truncate', 'ftruncate', 'mkdir', 'rmdir', 'mknod', 'unlink', 'rename',
  'link', 'symlink', 'create', 'write', 'setxattr', 'removexattr'] as const;

function refuse(name: string): () => never {
  return () => { throw posix('EROFS', `${name}: mounted read-only`); };
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
