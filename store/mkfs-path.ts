// mkfs names paths it makes (the store directory, its disks): one that cannot be a directory is
// refused in one line naming the file that stands in the way, not with a stat's bare ENOTDIR
// (docs/design.md §4 "mkfs": everything is checked before anything is made).
import * as path from 'node:path';
import { ChunkfsError } from '../src/errors';
import { IoStat, SyncIo } from './io/sync-io';

/** A path mkfs would make a directory of is a file, or lies under one. */
export class NotADirectoryError extends ChunkfsError {
  readonly code = 'ENOTDIR';
  constructor(p: string, problem: string) {
    super(`${p}: ${problem}`, { path: p });
  }
}

/** The nearest level of p that exists and is not a directory (p's ancestors hold ENOTDIR). */
function fileInTheWay(io: SyncIo, p: string): string {
  for (let up = path.dirname(p); up !== path.dirname(up); up = path.dirname(up)) {
    try {
      const st = io.stat(up);
      if (st !== null && st.kind !== 'dir') return up;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
    }
  }
  return path.dirname(p);
}

/**
 * What is at p (null: nothing yet), refusing a p that cannot be a directory: a file there, or a
 * file on the way to it. what: the role of p in the store (e.g. "disk directory").
 */
export function statToMake(io: SyncIo, p: string, what: string): IoStat | null {
  let st: IoStat | null;
  try {
    st = io.stat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
    throw new NotADirectoryError(p, `cannot be a ${what}: ${fileInTheWay(io, p)} is a file, not a directory`);
  }
  if (st !== null && st.kind !== 'dir') throw new NotADirectoryError(p, `is a file, not a ${what}`);
  return st;
}
