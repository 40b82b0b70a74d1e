// Directories removed (rmdir, or replaced by a rename) while the kernel still holds them: an open
// descriptor of one must still fstat, with nlink 0, as on Linux file systems (xfstests
// generic/035). The store deletes a directory's row at once (it holds no data),
// so the mount keeps its last attributes here until the kernel forgets the inode. fuse-native
// (libfuse 2 high-level) asks by path, which is gone: there it stays ENOENT.
import type { Stat } from './types';

/** Removed directories remembered at once; past it the oldest is dropped (its fstat: ENOENT). */
const GONE_DIRS_MAX = 65_536;

export class GoneDirs {
  private readonly stats = new Map<number, Stat>();

  /** A directory lost its last name while the kernel knows it: its stat from now on (nlink 0). */
  add(st: Stat, ctimeNs: bigint): void {
    if (this.stats.size >= GONE_DIRS_MAX) this.stats.delete(this.stats.keys().next().value as number);
    this.stats.set(st.ino, { ...st, nlink: 0, ctimeNs });
  }

  get(ino: number): Stat | undefined {
    return this.stats.get(ino);
  }

  /** The kernel forgot the inode (or a new inode took its number). */
  delete(ino: number): void {
    this.stats.delete(ino);
  }

  clear(): void {
    this.stats.clear();
  }
}
