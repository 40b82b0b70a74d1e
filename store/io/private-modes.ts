// The store is private to its owner: every directory 0700, every file 0600, so no other
// local user reads shard bytes, names, owners or xattrs around the mount's own permission checks
// (ZFS and ext4 keep their devices root-only for the same reason). New paths get these modes at
// creation (store/io/io.ts, store/io/sync-io.ts); this file checks stores made before that rule:
// tightenStoreModes at open, findLooseModes for scrub, refuseSharedDiskDir at mkfs.
import * as nodePath from 'node:path';
import { ChunkfsError } from '../../src/errors';
import { Io } from './io';
import { GROUP_OTHER_BITS, IoStat, SyncIo } from './sync-io';

/** A walk of one disk visits at most this many entries (a bound on the loop; far above any store). */
export const WALK_ENTRIES_MAX = 1 << 30;
/** Loose paths a scrub lists by name; the count stays exact. */
export const LOOSE_LISTED_MAX = 100;

/** The store cannot be made private (chmod refused): nothing is opened. */
export class ModeError extends ChunkfsError {
  readonly code = 'EACCES';
  /** path leads the message, so it is not repeated as a site suffix. */
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

export interface ModeChange {
  path: string;
  fromBits: number;
  toBits: number;
}

export function octal(bits: number): string {
  return `0${bits.toString(8).padStart(3, '0')}`;
}

/**
 * Clear group and other bits on each existing path (the store directory, disks, config, key,
 * meta.db and its WAL/SHM, the lock). Returns what changed; a chmod that fails refuses the store
 * with a ModeError naming the path, before anything else on disk is touched.
 */
export function tightenStoreModes(io: SyncIo, paths: string[]): ModeChange[] {
  const changes: ModeChange[] = [];
  for (const path of paths) {
    const st = io.stat(path);
    if (st === null || (st.permBits & GROUP_OTHER_BITS) === 0) continue;
    const toBits = st.permBits & ~GROUP_OTHER_BITS;
    try {
      io.chmod(path, toBits);
    } catch (err) {
      throw new ModeError(
        path,
        `group or others can access it (mode ${octal(st.permBits)}) and it cannot be made private: ` +
          `${(err as Error).message}; run chmod go-rwx ${path} as its owner (uid ${st.uid})`,
      );
    }
    changes.push({ path, fromBits: st.permBits, toBits });
  }
  return changes;
}

/** The one log line for changes made at open. */
export function describeModeChanges(dir: string, changes: ModeChange[]): string {
  const list = changes
    .map((c) => `${nodePath.relative(dir, c.path) || '.'} ${octal(c.fromBits)}->${octal(c.toBits)}`)
    .join(', ');
  return `store ${dir} was readable or writable by other users; made ${changes.length} path(s) owner-only: ${list}`;
}

/** mkfs: a disk directory others can write to is shared (like /tmp), and never becomes a disk. */
export function refuseSharedDiskDir(io: SyncIo, root: string): void {
  const st = io.stat(root);
  if (st === null) return;
  if (st.kind !== 'dir') throw new ModeError(root, 'disk path is not a directory');
  if ((st.permBits & 0o022) !== 0) {
    throw new ModeError(
      root,
      `disk directory is writable by group or others (mode ${octal(st.permBits)}); ` +
        `use a directory only its owner can write (chmod go-w ${root}, or pick another)`,
    );
  }
}

export interface LooseModes {
  /** Paths (file or directory) whose mode lets group or others in. */
  count: number;
  paths: Array<{ path: string; permBits: number }>;
  /** Made owner-only (repair). */
  fixed: number;
}

/** True when path is loose (then counted, and listed while the list is short). */
function noteLoose(out: LooseModes, path: string, st: IoStat): boolean {
  if ((st.permBits & GROUP_OTHER_BITS) === 0) return false;
  out.count++;
  if (out.paths.length < LOOSE_LISTED_MAX) out.paths.push({ path, permBits: st.permBits });
  return true;
}

/**
 * Walk each root (a disk directory) and report every entry group or others can access; with
 * repair, clear those bits on each as it is found (counted in fixed).
 */
export async function findLooseModes(io: Io, roots: string[], repair = false): Promise<LooseModes> {
  const out: LooseModes = { count: 0, paths: [], fixed: 0 };
  for (const root of roots) {
    const todo: string[] = [root];
    for (let visited = 0; todo.length > 0 && visited < WALK_ENTRIES_MAX; visited++) {
      const path = todo.pop()!;
      const st = await io.stat(path);
      if (st === null) continue; // removed meanwhile (reclaim, heal)
      if (noteLoose(out, path, st) && repair) {
        await io.chmod(path, st.permBits & ~GROUP_OTHER_BITS);
        out.fixed++;
      }
      if (st.kind !== 'dir') continue;
      let names: string[];
      try {
        names = await io.readdir(path);
      } catch {
        continue; // vanished while walking
      }
      for (const n of names) todo.push(nodePath.join(path, n));
    }
  }
  return out;
}
