// The kernel's mount table (/proc/self/mounts), read without touching any mount point (a hung or
// stale FUSE mount must not hang the CLI). A chunkfs mount names its store as the mount source
// (fsname, set by `chunkfs mount`), so a mount point leads to its store (every verb
// accepts a store path, a mount point, or nothing).
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

export const CHUNKFS_FSTYPE = 'fuse.chunkfs';
const MOUNT_LINES_MAX = 100_000;

export interface MountEntry {
  source: string;
  mountpoint: string;
  fstype: string;
  options: string[];
}

/** /proc/mounts escapes space, tab, newline and backslash as octal (\040, \011, \012, \134). */
export function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** The inverse of unescapeMountField: a path as the kernel writes it in /proc/self/mount{s,info}. */
export function escapeMountField(field: string): string {
  return field.replace(/[ \t\n\\]/g, (c) => '\\' + c.charCodeAt(0).toString(8).padStart(3, '0'));
}

export function parseMountTable(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n').slice(0, MOUNT_LINES_MAX)) {
    const f = line.split(' ');
    if (f.length < 4) continue;
    out.push({
      source: unescapeMountField(f[0]),
      mountpoint: unescapeMountField(f[1]),
      fstype: f[2],
      options: f[3].split(','),
    });
  }
  return out;
}

export function mountTable(): MountEntry[] {
  return parseMountTable(readFileSync('/proc/self/mounts', 'utf8'));
}

export function mountedAt(mountpoint: string): boolean {
  return mountTable().some((m) => m.mountpoint === mountpoint);
}

/** Live chunkfs mounts, newest last. */
export function chunkfsMounts(): MountEntry[] {
  return mountTable().filter((m) => m.fstype === CHUNKFS_FSTYPE);
}

/** The chunkfs mount whose mount point is absPath or contains it (the innermost), or null. */
export function chunkfsMountContaining(absPath: string): MountEntry | null {
  let best: MountEntry | null = null;
  for (const m of chunkfsMounts()) {
    const inside = absPath === m.mountpoint || absPath.startsWith(m.mountpoint === '/' ? '/' : m.mountpoint + path.sep);
    if (inside && (best === null || m.mountpoint.length > best.mountpoint.length)) best = m;
  }
  return best;
}

/**
 * libfuse splits -o options at commas and unescapes backslashes (fuse_opt.c), so a store path used
 * as fsname escapes both.
 */
export function fsnameOption(storeDir: string): string {
  return storeDir.replace(/\\/g, '\\\\').replace(/,/g, '\\,');
}
