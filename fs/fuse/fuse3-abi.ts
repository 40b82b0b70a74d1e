// The numeric layout shared with the libfuse3 binding: request kinds and the fields of a request
// row (native/fuse3/request.h), the reply scratch rows (native/fuse3/reply_layout.h), and the
// open reply flags (native/fuse3/replies.cc). Change both sides together.

export const OP = {
  lookup: 0,
  forget: 1,
  getattr: 2,
  setattr: 3,
  readlink: 4,
  mknod: 5,
  mkdir: 6,
  unlink: 7,
  rmdir: 8,
  symlink: 9,
  rename: 10,
  link: 11,
  open: 12,
  read: 13,
  write: 14,
  flush: 15,
  release: 16,
  fsync: 17,
  opendir: 18,
  readdir: 19,
  readdirplus: 20,
  releasedir: 21,
  fsyncdir: 22,
  statfs: 23,
  setxattr: 24,
  getxattr: 25,
  listxattr: 26,
  removexattr: 27,
  create: 28,
  fallocate: 29,
  interrupt: 30,
  lseek: 31,
} as const;
export const OP_NAMES: string[] = Object.entries(OP)
  .sort((a, b) => a[1] - b[1])
  .map(([name]) => name);

/** Fields of one request row. */
export const F = {
  op: 0,
  id: 1,
  ino: 2,
  uid: 3,
  gid: 4,
  pid: 5,
  umask: 6,
  fh: 7,
  off: 8,
  size: 9,
  flags: 10,
  mode: 11,
  ino2: 12,
  rdev: 13,
  toSet: 14,
  atimeS: 15,
  atimeNs: 16,
  mtimeS: 17,
  mtimeNs: 18,
  ctimeS: 19,
  ctimeNs: 20,
  attrUid: 21,
  attrGid: 22,
  killSuidgid: 23,
} as const;
export const FIELD_COUNT = 24;

/** Fields of one reply scratch row (an inode's attributes; one row per directory entry). */
export const A = {
  ino: 0,
  generation: 1,
  mode: 2,
  nlink: 3,
  uid: 4,
  gid: 5,
  rdev: 6,
  size: 7,
  blocks: 8,
  blksize: 9,
  atimeS: 10,
  atimeNs: 11,
  mtimeS: 12,
  mtimeNs: 13,
  ctimeS: 14,
  ctimeNs: 15,
  attrTimeout: 16,
  entryTimeout: 17,
  dirOff: 18,
} as const;
export const ATTR_FIELD_COUNT = 19;
/** Rows of the scratch: entries one directory reply may carry. */
export const DIR_ENTRIES_PER_REPLY_MAX = 512;

/** statfs reuses row 0 with these fields. */
export const S = {
  bsize: 0,
  frsize: 1,
  blocks: 2,
  bfree: 3,
  bavail: 4,
  files: 5,
  ffree: 6,
  favail: 7,
  fsid: 8,
  flag: 9,
  namemax: 10,
} as const;

/** open/create reply flags (native/fuse3/replies.cc also reads 2: direct_io, 4: cache_readdir; unused). */
export const OPEN_KEEP_CACHE = 1;
/** FOPEN_NOFLUSH (linux/fuse.h, kernel 5.16): close(2) of the descriptor sends no FLUSH request. */
export const OPEN_NOFLUSH = 8;
/**
 * Ours, not the kernel's (native/fuse3/clean_closes.h): the file a CREATE made holds nothing to store
 * or report, so the binding answers its FLUSH until a request that may change that arrives.
 */
export const OPEN_CLEAN = 1 << 16;

/** setattr to_set bits (fuse_lowlevel.h FUSE_SET_ATTR_*). */
export const SET = {
  mode: 1 << 0,
  uid: 1 << 1,
  gid: 1 << 2,
  size: 1 << 3,
  atime: 1 << 4,
  mtime: 1 << 5,
  atimeNow: 1 << 7,
  mtimeNow: 1 << 8,
  ctime: 1 << 10,
} as const;

/** The largest seconds value a time crosses with (the largest double below 2^63; native/fuse3/time_split.h). */
export const SECONDS_SENT_MAX = 2 ** 63 - 1024;
