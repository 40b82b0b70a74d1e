// Path -> inode for the path-based transport (fuse-native / libfuse 2 high-level API): each path
// is walked from the root through the namespace. The kernel resolves symlinks and checks search
// permission itself (default_permissions), so this only follows directory entries.
import type { FsCore } from '../core';
import type { Attr } from '../../store/meta/attr';
import { ROOT_INO } from '../../store/meta/meta';
import { checkLength } from '../ops-names';
import { posix } from '../errno';

export const PATH_DEPTH_MAX = 4096;

/** Inode of a path ("/a/b"), following no symlinks. */
export function resolve(core: FsCore, path: string): Attr {
  let a = core.ns.attr(ROOT_INO);
  const parts = path.split('/').filter((p) => p.length > 0);
  if (parts.length > PATH_DEPTH_MAX) throw posix('ENAMETOOLONG', 'path too deep');
  for (const name of parts) {
    if (a.type !== 'dir') throw posix('ENOTDIR', `${name}: parent is not a directory`);
    checkLength(name);
    const next = core.ns.lookup(a.ino, name);
    if (next === null) throw posix('ENOENT', `${path}: no such entry`);
    a = next;
  }
  return a;
}

/** Parent directory and last name of a path. */
export function resolveParent(core: FsCore, path: string): { parent: Attr; name: string } {
  const cut = path.lastIndexOf('/');
  const name = path.slice(cut + 1);
  if (name.length === 0) throw posix('EINVAL', `${path}: no name`);
  const parent = resolve(core, path.slice(0, cut));
  if (parent.type !== 'dir') throw posix('ENOTDIR', `${path}: parent is not a directory`);
  return { parent, name };
}
