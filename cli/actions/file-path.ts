// A file named by its path inside the filesystem (relative to the root, as cli/target.ts makes it):
// looked up name by name in the store's namespace, following no symlinks.
import type { Store } from '../../store/store';
import { ROOT_INO } from '../../store/meta/meta';
import { ActionError } from './env';

const PATH_DEPTH_MAX = 4096;

export function regularFileIno(store: Store, relPath: string): number {
  const parts = relPath.split('/').filter((p) => p.length > 0 && p !== '.');
  const shown = '/' + parts.join('/');
  if (parts.length === 0) throw new ActionError('name a regular file, not the root directory');
  if (parts.length > PATH_DEPTH_MAX) throw new ActionError(`${shown}: path too deep`);
  let a = store.ns.attr(ROOT_INO);
  for (const name of parts) {
    if (a.type !== 'dir') throw new ActionError(`${shown}: a parent is not a directory`);
    const next = store.ns.lookup(a.ino, name);
    if (next === null) throw new ActionError(`${shown}: no such file in the store`);
    a = next;
  }
  if (a.type !== 'file')
    throw new ActionError(`${shown} is a ${a.type === 'dir' ? 'directory' : a.type}, not a regular file`);
  return a.ino;
}
