// Open directories by handle for inode-based transports: opendir, a page of the listing from an
// offset (with each entry's attributes for readdirplus), releasedir. See dir-handles.ts.
import type { FsCore } from './core';
import type { DirEntry, Stat } from './types';
import { listing } from './ops-names';
import { posix } from './errno';
import { relist, resumeIndex } from './dir-handles';

export function opendir(core: FsCore, ino: number): number {
  if (core.ns.attr(ino).type !== 'dir') throw posix('ENOTDIR', `inode ${ino} is not a directory`);
  return core.dirs.open(ino).fh;
}

/** Up to countMax entries after the cookie offset (0 re-reads the directory: rewinddir). */
export function readdir(core: FsCore, fh: number, offset: number, countMax: number): DirEntry[] {
  const h = core.dirs.get(fh);
  if (core.goneDirs.get(h.ino) !== undefined && core.ns.getattr(h.ino) === null) return []; // removed: Linux lists nothing
  let entries = h.entries;
  if (offset === 0 || entries === null) {
    entries = relist(h, listing(core, h.ino));
    core.atime.accessed(h.ino);
  }
  const from = resumeIndex(entries, offset);
  return entries.slice(from, from + countMax);
}

/** Entries with their attributes; an entry removed since the listing was read is left out. */
export function readdirplus(
  core: FsCore,
  fh: number,
  offset: number,
  countMax: number,
): Array<{ entry: DirEntry; stat: Stat }> {
  const out: Array<{ entry: DirEntry; stat: Stat }> = [];
  for (const entry of readdir(core, fh, offset, countMax)) {
    const a = core.ns.getattr(entry.ino);
    if (a !== null) out.push({ entry, stat: core.stat(a) });
  }
  return out;
}

export function releasedir(core: FsCore, fh: number): void {
  core.dirs.close(fh);
}
