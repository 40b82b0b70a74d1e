// The part of store/Store the mount uses (store-api.md). Declared here so the filesystem core depends
// on the contract, not on the store's classes: store/store.ts's Store (and its Namespace) satisfy it.
import type { Attr, InodeType, SpecialType } from '../store/meta/attr';
import type { PendingRange } from '../store/meta/allocated';
import type { CommitTimes } from '../store/meta/commit-times';
import type { ReadGrantInfo } from '../store/chunks/read-grant';
import type { SpaceLayout } from '../src/space-need';
export type { PendingRange, CommitTimes };

/** The POSIX namespace the core works on (inodes, names, links, xattrs); failures are FsErrors. */
export interface NamespacePort {
  /**
   * Operations are answered before the metadata database ran them (PostgreSQL with the lease, DESIGN
   * §9): a read there may wait for the server, so nothing answered in C may depend on one.
   */
  readonly answersOnceSent: boolean;
  getattr(ino: number): Attr | null;
  /** The inode's attributes; FsError ENOENT when it is gone. */
  attr(ino: number): Attr;
  lookup(parentIno: number, name: string): Attr | null;
  parentOf(dirIno: number): number;
  mkdir(parentIno: number, name: string, mode: number, uid: number, gid: number): Attr;
  create(parentIno: number, name: string, mode: number, uid: number, gid: number, layout?: string): Attr;
  symlink(parentIno: number, name: string, target: string, uid: number, gid: number): Attr;
  mknod(parentIno: number, name: string, type: SpecialType, mode: number, rdev: number, uid: number, gid: number): Attr;
  readlink(ino: number): string;
  link(ino: number, newParentIno: number, newName: string): Attr;
  unlink(parentIno: number, name: string): { ino: number; nlink: number };
  rmdir(parentIno: number, name: string): void;
  /** The replaced inode (its nlink now), or null when nothing was replaced. */
  rename(
    oldParent: number,
    oldName: string,
    newParent: number,
    newName: string,
    flags?: { noReplace?: boolean; whiteout?: { uid: number; gid: number } },
  ): { ino: number; nlink: number } | null;
  exchange(oldParent: number, oldName: string, newParent: number, newName: string): void;
  readdir(ino: number): Array<{ name: string; ino: number; type: InodeType }>;
  setattr(
    ino: number,
    v: { mode?: number; uid?: number; gid?: number; atimeNs?: bigint; mtimeNs?: bigint; ctimeNs?: bigint },
  ): Attr;
  /** Access times of many inodes in one transaction (fs/atime.ts). */
  setAtimes(times: Array<[number, bigint]>): void;
  unlinkByPrefix(prefix: string, countMax: number): Array<{ parent: number; name: string; ino: number; nlink: number }>;
  orphans(): number[];
  getxattr(ino: number, name: string): Buffer;
  /** getxattr, with null where it would fail with ENODATA. */
  findxattr(ino: number, name: string): Buffer | null;
  setxattr(ino: number, name: string, value: Uint8Array, flags?: number): void;
  listxattr(ino: number): string[];
  removexattr(ino: number, name: string): void;
  /** Told each inode whose attributes the namespace changed (store/meta/ops-base.ts); absent: it cannot tell. */
  attrChanged?: (ino: number) => void;
}

export interface StatfsBytes {
  totalBytes: number;
  freeBytes: number;
  availBytes: number;
}

export interface StorePort {
  readonly ns: NamespacePort;
  /** Chunk size of new files (the store default), for sizing the write-back buffer's extents. */
  readonly defaultChunkSizeBytes: number;
  /**
   * Read-only, following another process's commits (DESIGN §9, store/follower.ts): the mount holds
   * nothing of its own, every size is the database's, and the kernel keeps nothing across changes.
   */
  readonly followsWriter?: boolean;
  /** Why every change answers EROFS: the store lost its lease to another writer (DESIGN §9); null or absent: it did not. */
  readonly leaseLost?: string | null;
  /** A follower: fn hears the inodes each of the writer's commits changed ('all': unknown). */
  onWriterChange?(fn: (changed: number[] | 'all') => void): void;
  /** fn hears why, when the metadata server restarted or failed over: changes not fsync'd may be lost (DESIGN §9). */
  onMetaLoss?(fn: (why: string) => void): void;
  /** fn hears of every change a read could show (fs/fuse/read-grants.ts: grants end then). Absent: no grants. */
  onReadChange?(fn: () => void): void;
  /** A read grant of ino's chunk holding offsetBytes (store/chunks/read-grant.ts), or null. */
  readGrant?(ino: number, offsetBytes: number): ReadGrantInfo | null;
  /** Verified read; short at EOF; holes read as zeros. */
  read(ino: number, offsetBytes: number, lengthBytes: number): Promise<Buffer>;
  /**
   * read() into target[targetOffset..]: the byte count (short only at EOF), at once when the data
   * is cached (no promise), else a promise; errors always reject. sizeBytes: read up to this size
   * instead of the committed one (the mount's, which covers chunks it stored past the committed size).
   */
  readInto(
    ino: number,
    offsetBytes: number,
    target: Buffer,
    targetOffset?: number,
    sizeBytes?: number,
  ): number | Promise<number>;
  /**
   * The shards are durable when it resolves; the metadata commit is not flushed (see sync).
   * sizeBytes: the size to commit with it, no further than the first byte still held only in memory
   * (DESIGN §5 prefix rule); default: the end of data. times: the mtime and ctime to commit with it,
   * the ones the mount showed while the bytes were buffered (DESIGN §5 "One view"); default: now.
   */
  write(ino: number, offsetBytes: number, data: Uint8Array, sizeBytes?: number, times?: CommitTimes): Promise<void>;
  /**
   * write() of parts laid back to back, stored without joining them (DESIGN §5 "Write-back pieces");
   * the store keeps no reference to them once it settles. Null, with nothing done, when this file's
   * chunks cannot take parts: join them and write(). Absent: always join.
   */
  writeParts?(
    ino: number,
    offsetBytes: number,
    parts: readonly Uint8Array[],
    sizeBytes?: number,
    times?: CommitTimes,
  ): Promise<void> | null;
  /**
   * One full commit: every metadata change so far durable (fsync, fsyncdir, syncfs; DESIGN §5).
   * ino (fsync of that file): rejects with what a transaction group could not keep of it (EIO).
   */
  sync(ino?: number): Promise<void>;
  /** What a transaction group's close could not keep of ino (EIO), once: close(2) reports it. */
  takeWriteError?(ino: number): Error | null;
  /**
   * The file's stored chunks committed (its open transaction group closed, DESIGN §5), not flushed:
   * a rename over another file must not commit before the renamed file's bytes (ext4's auto_da_alloc).
   */
  commitStored(ino: number): Promise<void>;
  truncate(ino: number, sizeBytes: number): Promise<void>;
  /** Whole chunks in the range become holes (their space freed); resolves to the partly covered parts. */
  punchHole(
    ino: number,
    offsetBytes: number,
    lengthBytes: number,
  ): Promise<Array<{ offsetBytes: number; lengthBytes: number }>>;
  /** fallocate (mode 0, KEEP_SIZE): the range is the file's (st_blocks, SEEK_DATA), reading zeros; absent: nothing is kept. */
  preallocate?(ino: number, offsetBytes: number, lengthBytes: number): void;
  /** PUNCH_HOLE, ZERO_RANGE: whole chunks inside the range are allocated no more. */
  unpreallocate?(ino: number, offsetBytes: number, lengthBytes: number): void;
  /**
   * Logical bytes the file holds (st_blocks), with the ranges the mount holds in memory counted as
   * they will be stored (DESIGN §5 "One view": storing never changes the answer); sizeBytes: the size
   * the mount shows. Absent: every byte up to its size counts.
   */
  allocatedBytes?(ino: number, pending?: readonly PendingRange[], sizeBytes?: number): number;
  /** SEEK_DATA / SEEK_HOLE over what is stored and pending (null: ENXIO); absent: the whole file is data. */
  seekData?(
    ino: number,
    offsetBytes: number,
    sizeBytes: number,
    what: 'data' | 'hole',
    pending?: readonly PendingRange[],
  ): number | null;
  /** Chunk c's logical length now (0: a hole); absent: chunks reach the file's size. */
  chunkLengthBytes?(ino: number, chunkIndex: number): number;
  /** Delete the data of an nlink-0 inode (from the orphan list). */
  deleteFile(ino: number): Promise<void>;
  /** A path that names the inode now (for log lines), or null when it has no name. */
  pathOf(ino: number): string | null;
  /**
   * Usable capacity: raw disk space divided by the default layout's overhead; reservedRawBytes (disk
   * bytes the write-back reserved, DESIGN §5 "Space for buffered bytes") count as used.
   */
  statfs(reservedRawBytes?: number): Promise<StatfsBytes>;
  /** Raw space of the disks, each file system once; absent: the write-back reserves nothing. */
  rawStatfs?(): Promise<StatfsBytes>;
  /** What the disk bytes of ino's stored bytes follow (src/space-need.ts: layout, chunk and block sizes). */
  spaceLayoutOf?(ino: number): SpaceLayout;
  close(): Promise<void>;
}
