// The kernel's per-mount table (/proc/self/mountinfo), which /proc/mounts lacks one field of: the
// device number of each mount's superblock. Every mount point of one FUSE connection (the first
// mount and its binds, DESIGN §7) shows the same device number, so a mount process finds all the
// mount points it serves by it, and a new mount of its store finds the mount to bind to.
import { readFileSync } from 'node:fs';
import { CHUNKFS_FSTYPE, unescapeMountField } from './mounts';

const MOUNTINFO_LINES_MAX = 100_000;

export interface MountInfo {
  /** The superblock's device number, "major:minor": shared by a mount and its binds. */
  dev: string;
  /** The directory of the file system this mount shows ('/' unless a bind of a subdirectory). */
  root: string;
  mountpoint: string;
  /** Per-mount flags (ro/rw, nosuid, nodev, noexec, atime): a bind may differ from its source. */
  mountOptions: string[];
  fstype: string;
  source: string;
}

/** Lines: id parent major:minor root mountpoint options [optional...] - fstype source superoptions. */
export function parseMountInfo(text: string): MountInfo[] {
  const out: MountInfo[] = [];
  for (const line of text.split('\n').slice(0, MOUNTINFO_LINES_MAX)) {
    const f = line.split(' ');
    const dash = f.indexOf('-', 6);
    if (f.length < 10 || dash < 0 || dash + 2 >= f.length) continue;
    out.push({
      dev: f[2],
      root: unescapeMountField(f[3]),
      mountpoint: unescapeMountField(f[4]),
      mountOptions: f[5].split(','),
      fstype: f[dash + 1],
      source: unescapeMountField(f[dash + 2]),
    });
  }
  return out;
}

export function mountInfoTable(): MountInfo[] {
  return parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8'));
}

/** The device number of the chunkfs mount at mountpoint (the newest there), or null. */
export function chunkfsDevAt(mountpoint: string, table: MountInfo[] = mountInfoTable()): string | null {
  const m = table.filter((e) => e.mountpoint === mountpoint && e.fstype === CHUNKFS_FSTYPE).pop();
  return m?.dev ?? null;
}

/**
 * The mount points of one chunkfs connection (its device number), whole-tree mounts only, oldest
 * first. The source is checked too: once a connection ends, a new mount may reuse its number.
 */
export function connectionMounts(dev: string, storeDir: string, table: MountInfo[] = mountInfoTable()): MountInfo[] {
  return table.filter((e) => e.dev === dev && e.fstype === CHUNKFS_FSTYPE && e.source === storeDir && e.root === '/');
}
