// What the inode-based core (fs/) speaks with its transports (fs/fuse/): the caller of a request,
// an inode's attributes as the kernel sees them, attribute changes, file system counts. No FUSE
// library type appears here; each transport converts to its own.

/** The process a request comes from (every transport passes it; new inodes belong to it). */
export interface Caller {
  uid: number;
  gid: number;
  pid: number;
  umask: number;
}

/** stat(2) of an inode, with the write-back buffer's size and mtime laid over the database row. */
export interface Stat {
  ino: number;
  /** Differs between inodes that reuse one number (SQLite reuses the highest deleted rowid). */
  generation: number;
  mode: number;
  nlink: number;
  uid: number;
  gid: number;
  /** Device number of a character or block device node (0 otherwise), as the kernel encodes it. */
  rdev: number;
  sizeBytes: number;
  /** 512-byte units, as st_blocks. */
  blocks: number;
  blksizeBytes: number;
  atimeNs: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

/** A time to set: nanoseconds since the epoch, or the current time (UTIME_NOW). */
export type TimeArg = bigint | 'now';

/** setattr(2)-like changes; absent fields stay. */
export interface AttrChanges {
  mode?: number;
  uid?: number;
  gid?: number;
  sizeBytes?: number;
  atime?: TimeArg;
  mtime?: TimeArg;
  ctimeNs?: bigint;
  /**
   * The kernel asks the file system to drop set-id bits with this change (FUSE_HANDLE_KILLPRIV_V2:
   * FATTR_KILL_SUIDGID, the caller has no CAP_FSETID); not a change of its own.
   */
  killSuidgid?: boolean;
}

/** statfs(2) in bytes and counts; each transport picks its block size. */
export interface FsCounts {
  totalBytes: number;
  freeBytes: number;
  availBytes: number;
  files: number;
  filesFree: number;
  nameBytesMax: number;
}

/** One directory entry of a listing; offset is where the entry after it starts (readdir cookie). */
export interface DirEntry {
  name: string;
  ino: number;
  mode: number;
  offset: number;
}
