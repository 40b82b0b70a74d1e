// Loader and types of the chunkfs_fuse3 addon (native/fuse3/, built from the root binding.gyp
// against Debian's libfuse3-dev). Every reply returns libfuse's result: 0, or a negative errno
// (-ENOENT: the kernel gave up on an interrupted request and dropped the reply).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UnsupportedError } from '../../src/errors';
import { FIELD_COUNT } from './fuse3-abi';

/** An opaque mounted session. */
export type Session = { readonly __fuse3Session: unique symbol };

export interface Fuse3MountOptions {
  mountpoint: string;
  fsname: string;
  subtype: string;
  allowOther: boolean;
  defaultPermissions: boolean;
  autoUnmount: boolean;
  readOnly: boolean;
  writebackCache: boolean;
  readdirplus: boolean;
  /** Set-id bits and device files take effect (no nosuid / nodev mount flag); root only. */
  suid: boolean;
  dev: boolean;
  /** Ask for kernel-enforced POSIX ACLs (with the umask left to the file system). */
  posixAcl: boolean;
  maxWriteBytes: number;
  maxBackground: number;
  congestionThreshold: number;
  /** Microseconds the JS thread keeps reading /dev/fuse after answering every request of a wake-up. */
  spinUs: number;
  /** getxattr of other names is answered ENODATA by the binding (no JS round trip); empty: none is */
  xattrPrefixes: readonly string[];
}

/** (rows, count, names, buffers, ended, loopResult): see native/fuse3/to_js.h. */
export type OnBatch = (
  rows: Float64Array,
  count: number,
  names: Array<string | undefined>,
  bufs: Array<Buffer | undefined>,
  ended: boolean,
  loopResult: number,
) => void;

export interface Fuse3Native {
  /** Fields per request row of the build (native/fuse3/request.h); absent in builds before it was exported. */
  readonly requestFieldCount?: number;
  mount(options: Fuse3MountOptions, onBatch: OnBatch, attrScratch: Float64Array): Session;
  loopEnded(s: Session): boolean;
  /** The kernel's connection number, or null once the connection ended (the number may be another mount's then). */
  connectionId(s: Session): number | null;
  /** Answers EIO to whatever JS left unanswered (returns how many), frees the libfuse session. */
  destroy(s: Session): number;
  /** Drops the kernel's cached pages and attributes of these inodes (on a worker thread); resolves to how many it held. */
  invalidate(s: Session, inos: Float64Array): Promise<number>;
  /** Makes the kernel forget the names (parents[i], names[i]) (on a worker thread); resolves to how many it held. */
  invalidateEntries(s: Session, parents: Float64Array, names: string[]): Promise<number>;
  /** [a pidfd of this process, this end of fusermount3's auto_unmount socket], or why there are none (unmount-guard.ts). */
  unmountGuardFds(s: Session): [number, number] | string;
  replyErr(s: Session, id: number, errno: number): number;
  /** keep: a LOOKUP's entry the name table may keep (native/fuse3/entry_table.h). */
  replyEntry(s: Session, id: number, keep?: boolean): number;
  /** clean: after a SETATTR, the file's FLUSH may be answered by the binding (native/fuse3/clean_closes.h). */
  replyAttr(s: Session, id: number, clean?: boolean): number;
  replyOpen(s: Session, id: number, fh: number, openFlags: number): number;
  replyCreate(s: Session, id: number, fh: number, openFlags: number): number;
  /** clean: the file's FLUSH may be answered by the binding (native/fuse3/clean_closes.h). */
  replyWrite(s: Session, id: number, count: number, clean?: boolean): number;
  /** A flush of the open file ino started: its next FLUSH goes to JS (native/fuse3/clean_closes.h). */
  cleanCloseForget(s: Session, ino: number): void;
  replyBuf(s: Session, id: number, data: Buffer, lengthBytes: number): number;
  replyReadlink(s: Session, id: number, target: string): number;
  replyXattrSize(s: Session, id: number, sizeBytes: number): number;
  replyStatfs(s: Session, id: number): number;
  /** Packs entries 0..count-1 (scratch rows) into at most sizeBytes; returns how many fit, or a negative errno. */
  replyDir(s: Session, id: number, plus: boolean, sizeBytes: number, names: string[], count: number): number;
  /** Read grants (native/fuse3/read_grant.h, fs/fuse/read-grants.ts): the epoch a grant made now carries. */
  grantEpoch(s: Session): number;
  /** Every grant is void. */
  grantsBump(s: Session): void;
  /**
   * paths: the granted shards (replica: 1; EC: the k data shards, '' where not granted); nums: [ino,
   * chunk, chunkSize, fileSize, dataAt, blockBytes, shardDataLen, logicalLen, ttlMs, segmentBytes,
   * payloadLen, ecK (0: replica), ecBlockBytes]; tables: each shard's table in turn, one size (zeros
   * where not granted); keys: each shard's block 0 key (32 bytes); cipher: empty, or an encrypted
   * chunk's nonce base (12) || data key (32) with segmentBytes > 0. True, or why not.
   */
  grantRead(
    s: Session,
    epoch: number,
    paths: string[],
    nums: Float64Array,
    tables: Buffer,
    keys: Buffer,
    cipher: Buffer,
  ): true | string;
  /** [reads answered natively, grants dropped after a failed read, chunks granted now]. */
  grantStats(s: Session): [number, number, number, number];
  /** Directory attributes answered by the binding (native/fuse3/attr_table.h, fs/fuse/attr-table.ts). */
  attrsEnable(s: Session): void;
  /** Scratch row 0 is a directory's attributes now; false when refused (not a directory, table off). */
  attrPut(s: Session): boolean;
  attrRevoke(s: Session, ino: number): void;
  /** attrRevoke also revokes the inode's entry in the name table, attrsClear clears that table too. */
  attrsClear(s: Session): void;
  /** Names answered by the binding (native/fuse3/entry_table.h, fs/fuse/entry-table.ts). */
  /** missingTimeoutS: the entry timeout of a missing name answered there. */
  entriesEnable(s: Session, missingTimeoutS: number): void;
  /** Scratch row 0 is the directory just made as name in parent (empty: the binding knows all its names). */
  entryDirMade(s: Session, parent: number, name: string): boolean;
  /** name in directory parent names nothing now. */
  entryNameGone(s: Session, parent: number, name: string): void;
  /** Scratch row 0 is the entry of name in directory parent now; false when refused. */
  entryPut(s: Session, parent: number, name: string): boolean;
  /** name in directory parent is inode ino now (answered once the inode's entry is put too). */
  entryNamePut(s: Session, parent: number, name: string, ino: number): boolean;
  /** Scratch row 0 is an inode's entry now, for the names the table holds of it; false when refused. */
  entryAttrsPut(s: Session): boolean;
  entryRevokeName(s: Session, parent: number, name: string): void;
  /** [ino, count, ...] of the lookups the binding answered since the last call, or null. */
  entryLookupsTake(s: Session): Float64Array | null;
  /** The offset lseek(SEEK_DATA / SEEK_HOLE) found. */
  replyLseek(s: Session, id: number, offsetBytes: number): number;
}

const ADDON_NAME = 'chunkfs_fuse3.node';
const SEARCH_DEPTH_MAX = 6;

/** Where the addon is (its build folder also holds the auto_unmount guard, unmount-guard.ts). */
export function findAddon(): string {
  // Runs from fs/fuse/ (ts) or dist/fs/fuse/ (js): walk up to the folder with binding.gyp.
  let dir = __dirname;
  for (let depth = 0; depth < SEARCH_DEPTH_MAX; depth++) {
    if (fs.existsSync(path.join(dir, 'binding.gyp'))) return path.join(dir, 'build', 'Release', ADDON_NAME);
    dir = path.dirname(dir);
  }
  throw new UnsupportedError(`libfuse3 binding: binding.gyp not found above ${__dirname}`);
}

let loaded: Fuse3Native | undefined;

export function fuse3Native(): Fuse3Native {
  if (loaded !== undefined) return loaded;
  const addonPath = findAddon();
  if (!fs.existsSync(addonPath)) {
    throw new UnsupportedError(
      `libfuse3 binding missing at ${addonPath}: run \`npm run setup\` (needs libfuse3-dev, g++, python3)`,
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const addon = require(addonPath) as Fuse3Native;
  // An addon built before a change of the request layout would hand JS misaligned rows.
  if (addon.requestFieldCount !== FIELD_COUNT) {
    throw new UnsupportedError(
      `libfuse3 binding at ${addonPath} was built from other sources (request rows of ` +
        `${addon.requestFieldCount ?? 'an older layout'} fields, this build reads ${FIELD_COUNT}): run \`npm run setup\` to rebuild it`,
    );
  }
  loaded = addon;
  return loaded;
}
