// The metadata operations of the POSIX namespace (DESIGN §9 "Operations"): what the store and fs/
// ask of the metadata about names, inodes and extended attributes, as typed calls, never as SQL.
// store/meta/ops-base.ts holds the rules every engine shares (checks, errors, the order of writes,
// one transaction per operation); each engine's folder (sqlite/, postgres/) implements the rows
// behind them with its own statements and caches (namespace-ops.ts there).
import type { Attr, InodeType, SpecialType } from './attr';

export const XATTR_CREATE = 1; // Linux <sys/xattr.h>
export const XATTR_REPLACE = 2;

/** Layout chosen for new files: from an ancestor's user.chunkfs.layout or the store default. */
export interface NamespaceOptions {
  defaults: { layout: string; chunkSizeBytes: number; bitrotBlockBytes: number; ecBlockSizeBytes: number };
  clusterMapEpoch: number;
  /** Throws FsError EINVAL for a layout this store cannot hold. */
  checkLayout(text: string): void;
  /** A file's layout changed (while it held no data): caches of it must be dropped. */
  layoutChanged?(ino: number): void;
}

/** renameat2(2) flags the namespace carries out (RENAME_EXCHANGE is exchange()). */
export interface RenameFlags {
  noReplace?: boolean;
  /** RENAME_WHITEOUT: leave a whiteout owned by this caller at the old name. */
  whiteout?: { uid: number; gid: number };
}

export interface DirEntry {
  name: string;
  ino: number;
  type: InodeType;
}

/** An inode that lost a name: nlink 0 => the caller deletes its data when no handle holds it. */
export interface Unlinked {
  ino: number;
  nlink: number;
}

/** The attributes setattr changes; unset ones stay (ctime: now). */
export interface AttrChange {
  mode?: number;
  uid?: number;
  gid?: number;
  atimeNs?: bigint;
  mtimeNs?: bigint;
  ctimeNs?: bigint;
}

/**
 * The namespace's operations. Each change is one transaction (a savepoint inside an open one, and
 * inside the open group while group commits are on: DESIGN §5 "Group commit"); failures are FsErrors.
 * A file's size and data are the data path's (store/meta/file-rows.ts), not these.
 */
export interface NamespaceOps {
  readonly opts: NamespaceOptions;
  /** Operations are answered before the database ran them (EngineCaps.answersOnceSent). */
  readonly answersOnceSent: boolean;
  /** The size a transaction group will commit for ino (DESIGN §5 one view): getattr and lookup show it already. */
  pendingSize: (ino: number) => number | undefined;

  getattr(ino: number): Attr | null;
  /** getattr that throws ENOENT. */
  attr(ino: number): Attr;
  /** The inode name holds in directory parent, or null (ENOENT/ENOTDIR when parent is not a directory). */
  lookup(parent: number, name: string): Attr | null;
  /** Parent directory of a directory (root's parent is root). */
  parentOf(dir: number): number;
  /** Entries of a directory by name, after the name `after` (exclusive), at most limit; no '.' and '..'. */
  readdir(dir: number, after?: string, limit?: number): DirEntry[];
  readlink(ino: number): string;
  /**
   * One of ino's paths from the root (the first of its names by parent and name, walked up), for
   * reports and log lines that name files; null when it has no name (unlinked, open or an orphan).
   */
  pathOf(ino: number): string | null;
  /** Layout text a new file under dir gets: nearest ancestor's user.chunkfs.layout, else the store default. */
  inheritedLayout(dir: number): string;

  create(parent: number, name: string, mode: number, uid: number, gid: number, layout?: string): Attr;
  mkdir(parent: number, name: string, mode: number, uid: number, gid: number): Attr;
  symlink(parent: number, name: string, target: string, uid: number, gid: number): Attr;
  /** A FIFO, socket or device node; rdev is the device number of devices. */
  mknod(parent: number, name: string, type: SpecialType, mode: number, rdev: number, uid: number, gid: number): Attr;
  link(ino: number, newParent: number, newName: string): Attr;
  /** Remove a name of a non-directory; nlink 0 files go on the orphan list. */
  unlink(parent: number, name: string): Unlinked;
  rmdir(parent: number, name: string): void;
  /** rename(2) with replace rules; the inode that lost its name by being replaced, or null. */
  rename(oldParent: number, oldName: string, newParent: number, newName: string, flags?: RenameFlags): Unlinked | null;
  /** renameat2(RENAME_EXCHANGE): the two names swap inodes atomically. */
  exchange(oldParent: number, oldName: string, newParent: number, newName: string): void;
  setattr(ino: number, change: AttrChange): Attr;
  /** Access times only, no ctime change, in one transaction; inodes gone meanwhile are skipped. */
  setAtimes(times: Array<[number, bigint]>): void;
  /** Unlink every non-directory name starting with prefix, at most countMax, in one transaction. */
  unlinkByPrefix(prefix: string, countMax: number): Array<{ parent: number; name: string } & Unlinked>;
  /** Files unlinked while open or before a crash: their data still has to be deleted. */
  orphans(): number[];

  getxattr(ino: number, name: string): Buffer;
  /** getxattr, with null for a name the inode does not have (no ENODATA built on a hot path: ACLs). */
  findxattr(ino: number, name: string): Buffer | null;
  /** flags: XATTR_CREATE / XATTR_REPLACE, as Linux. */
  setxattr(ino: number, name: string, value: Uint8Array, flags?: number): void;
  listxattr(ino: number): string[];
  removexattr(ino: number, name: string): void;
  /** Told each inode whose attributes an operation changed, before it returns (DESIGN §6 "Answers in C"). */
  attrChanged?: (ino: number) => void;
}
