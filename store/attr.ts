// Inode attributes as the namespace returns them (store-api.md), and the mode bits.
export const S_IFMT = 0o170000;
export const S_IFREG = 0o100000;
export const S_IFDIR = 0o040000;
export const S_IFLNK = 0o120000;
export const TREE_DEPTH_MAX = 4096;

export type InodeType = 'file' | 'dir' | 'symlink';

export interface Attr {
  ino: number; type: InodeType; mode: number; uid: number; gid: number; sizeBytes: number; nlink: number;
  atimeNs: bigint; mtimeNs: bigint; ctimeNs: bigint; birthtimeNs: bigint; layout: string;
  /** Device number of a character or block device node, 0 for every other type. */
  rdev: number;
}

export const LAYOUT_XATTR = 'user.chunkfs.layout';

export type Row = Record<string, bigint | string | null>;

export function attrOf(r: Row): Attr {
  return {
    ino: Number(r.ino), type: r.type as InodeType, mode: Number(r.mode), uid: Number(r.uid), gid: Number(r.gid),
    sizeBytes: Number(r.size), nlink: Number(r.nlink), atimeNs: BigInt(r.atime_ns as bigint),
    mtimeNs: BigInt(r.mtime_ns as bigint), ctimeNs: BigInt(r.ctime_ns as bigint), birthtimeNs: BigInt(r.birth_ns as bigint),
    layout: (r.layout as string | null) ?? '', rdev: Number(r.rdev ?? 0),
  };
}

