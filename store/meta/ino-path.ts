// An inode's path in the namespace, for reports and log lines that name files ("naming the
// file path"): one of its names (a hard-linked file has several), walked up to the root.
import { Db, ROOT_INO } from './meta';

/** Deeper paths are cut (reports name them by inode then). */
const PATH_DEPTH_MAX = 4096;

export function pathOfIno(db: Db, ino: number): string | null {
  if (ino === ROOT_INO) return '/';
  const stmt = db.prepare('SELECT parent, name FROM dirents WHERE ino = ? ORDER BY parent, name LIMIT 1');
  const names: string[] = [];
  let at = ino;
  for (let depth = 0; depth < PATH_DEPTH_MAX && at !== ROOT_INO; depth++) {
    const r = stmt.get(at) as { parent: bigint; name: string } | undefined;
    if (r === undefined) return null; // unlinked (open, or an orphan)
    names.push(r.name);
    at = Number(r.parent);
  }
  return at === ROOT_INO ? '/' + names.reverse().join('/') : null;
}
