// State shared by the inode-based ops (DESIGN §2): the store, open file and directory handles, the
// write-back buffer and the kernel's lookup counts. Transports (fs/fuse/) turn requests into calls
// of the ops in fs/ops-*.ts, which take inode numbers and file handles.
import { RecentNames } from './recent-names';
import type { StorePort } from './store-port';
import type { Attr } from '../store/meta/attr';
import type { Stat } from './types';
import { Handles, OpenFile, pendingRanges } from './handles';
import { DirHandles } from './dir-handles';
import { LookupCounts } from './lookups';
import { WriteBack } from './write-buffer';
import { AtimeMode, AtimeUpdates } from './atime';
import { GoneDirs } from './gone-dirs';
import { nowNs } from '../store/meta/meta';

/** Deletions started together, so the store may commit them in one transaction (store/file-deletes.ts). */
const DELETES_AT_ONCE = 64;

/** del each inode, DELETES_AT_ONCE at a time; a failure goes to failed (with the inode's index) and does not stop the others. */
export async function deleteEach(
  inos: readonly number[],
  del: (ino: number) => Promise<void>,
  failed: (index: number, err: unknown) => void,
): Promise<void> {
  for (let at = 0; at < inos.length; at += DELETES_AT_ONCE) {
    await Promise.all(
      inos.slice(at, at + DELETES_AT_ONCE).map((ino, i) => del(ino).catch((err: unknown) => failed(at + i, err))),
    );
  }
}

// st_blksize of what is not a regular file. Tools size their I/O by st_blksize; a FUSE write moves up
// to 1 MiB with libfuse3 (128 KiB with fuse-native).
const BLKSIZE_BYTES = 128 * 1024;
/**
 * A regular file's st_blksize is its chunk size: holes come in whole chunks
 * (store/meta/allocated.ts; the format stores every byte of a chunk from its start, spec §8), and
 * tools take st_blksize as the allocation unit (xfstests' seek_sanity_test, cp --sparse=always's
 * hole size). Bounded because cp and Python allocate a buffer of st_blksize per copy or open file:
 * chunks above this (an operator's --chunk-size) have holes coarser than st_blksize.
 */
const FILE_BLKSIZE_BYTES_MAX = 64 * 1024 * 1024;
/** Waits at a last release for flushes queued on the file to end (each finds its buffer empty). */
const RELEASE_IDLE_WAITS_MAX = 1000;
const GENERATION_MODULUS = 2n ** 53n;
/** st_blocks counts 512-byte units whatever the block size (stat(2)). */
const BLOCK_BYTES = 512;

function blksizeOf(a: Attr): number {
  if (a.type !== 'file' || a.chunkSizeBytes <= 0) return BLKSIZE_BYTES;
  return Math.min(a.chunkSizeBytes, FILE_BLKSIZE_BYTES_MAX);
}

export interface CoreOptions {
  bufferBytesMax: number;
  flushDelayMs: number;
  log(message: string): void;
  /** -o debug: log lines carry whole stacks (none otherwise). */
  debug?: boolean;
  /** When reads move atime (fs/atime.ts); default relatime. */
  atime?: AtimeMode;
}

export class FsCore {
  readonly handles = new Handles();
  readonly dirs = new DirHandles();
  readonly lookups = new LookupCounts();
  readonly wb: WriteBack;
  readonly atime: AtimeUpdates;
  /**
   * The kernel enforces POSIX ACLs (libfuse3's FUSE_CAP_POSIX_ACL, set by that transport before it
   * serves): ACL xattrs are stored, and new inodes inherit default ACLs or get the umask (fs/acl.ts).
   */
  posixAcl = false;
  /** Directories removed while the kernel still holds them (fs/gone-dirs.ts). */
  readonly goneDirs = new GoneDirs();
  /** Names changed lately: forgotten by the kernel after a crash of the metadata (fs/recent-names.ts). */
  readonly recentNames = new RecentNames();
  /**
   * Told when a named file's open state went (its last release, everything buffered stored): its
   * attributes now follow the namespace alone (a transport's table of names: fs/fuse/entry-table.ts).
   */
  stateGone: (ino: number) => void = () => undefined;
  /** Files with no name left whose data waits until the kernel forgets them (see lookups.ts). */
  private readonly unlinkedKnown = new Set<number>();

  constructor(
    readonly store: StorePort,
    readonly opts: CoreOptions,
  ) {
    this.wb = new WriteBack(store, {
      bufferBytesMax: opts.bufferBytesMax,
      flushDelayMs: opts.flushDelayMs,
      chunkSizeBytes: store.defaultChunkSizeBytes,
      log: opts.log,
    });
    this.atime = new AtimeUpdates(store.ns, opts.atime ?? 'relatime', opts.log);
  }

  get ns() {
    return this.store.ns;
  }

  /** Read-only, following another process's writes (StorePort.followsWriter). */
  get followsWriter(): boolean {
    return this.store.followsWriter === true;
  }

  /**
   * fn is told, synchronously, each inode whose attributes just changed in the namespace or by a
   * pending atime, before any answer shows the change (a transport's cache of directory attributes:
   * fs/fuse/attr-table.ts, DESIGN §6). False when this store's namespace cannot tell.
   */
  watchAttrs(fn: (ino: number) => void): boolean {
    if (this.ns.attrChanged === undefined) return false;
    this.ns.attrChanged = fn;
    this.atime.attrChanged = fn;
    return true;
  }

  /** Database attributes with what only the mount knows (buffered size and mtime) laid over. */
  overlay(a: Attr): Attr {
    const f = this.handles.file(a.ino);
    if (f === undefined || this.followsWriter) return a; // a follower's open files hold nothing: the writer's size counts
    // A buffered write moves ctime with mtime; a row's own mtime (utimens: 1901, 2446) never moves ctime.
    const w = f.mtimeNs;
    return {
      ...a,
      sizeBytes: f.sizeBytes,
      mtimeNs: w ?? a.mtimeNs,
      ctimeNs: w !== null && w > a.ctimeNs ? w : a.ctimeNs,
    };
  }

  stat(a: Attr): Stat {
    const o = this.overlay(a);
    const atimeNs = this.atime.pendingOf(a.ino) ?? o.atimeNs;
    return {
      ino: o.ino,
      generation: Number(o.birthtimeNs % GENERATION_MODULUS),
      mode: o.mode,
      nlink: o.nlink,
      uid: o.uid,
      gid: o.gid,
      rdev: o.rdev,
      sizeBytes: o.sizeBytes,
      blocks: this.blocksOf(o),
      blksizeBytes: blksizeOf(o),
      atimeNs,
      mtimeNs: o.mtimeNs,
      ctimeNs: o.ctimeNs,
    };
  }

  /**
   * st_blocks (512-byte units) of what the inode allocates: for a regular file the
   * logical bytes of its live chunks, with what the mount still holds in memory counted as it will be
   * stored (the same answer before and after the bytes reach the disks), at most its size
   * plus what fallocate allocated past it, so a sparse file shows fewer blocks (du, cp --sparse);
   * other types count their size.
   */
  private blocksOf(o: Attr): number {
    if (o.type !== 'file' || this.store.allocatedBytes === undefined) return Math.ceil(o.sizeBytes / BLOCK_BYTES);
    const f = this.handles.file(o.ino);
    const pending = f === undefined ? [] : pendingRanges(f);
    return Math.ceil(this.store.allocatedBytes(o.ino, pending, o.sizeBytes) / BLOCK_BYTES);
  }

  /** A directory (its attributes before) was removed: kept for fstat while the kernel holds it. */
  removedDir(a: Attr): void {
    if (a.type === 'dir' && this.lookups.known(a.ino)) this.goneDirs.add(this.stat(a), nowNs());
  }

  /** An inode lost a name: with none left, delete its data unless a handle or the kernel holds it. */
  async dropped(ino: number, nlink: number): Promise<void> {
    if (nlink > 0) return;
    const f = this.handles.file(ino);
    if (f !== undefined) {
      f.unlinked = true;
      return;
    }
    if (this.lookups.known(ino)) {
      this.unlinkedKnown.add(ino);
      return;
    }
    await this.deleteData(ino);
  }

  /**
   * Called after the last handle of a file closed and its buffer was flushed. A flush that queued
   * on the file meanwhile (its timer, memory pressure, the whole-chunk stream, a rename over another
   * file) finds nothing left to store, and without a handle nothing queues more: the state is
   * forgotten once it ends. Forgotten here or never: a state kept without handles made a later unlink
   * only mark it, and that file's chunks stayed on the disks until the next mount (seen: 15-30 MiB
   * after a 15 s stress, with a 192 MiB buffer's more frequent pressure flushes).
   */
  async lastRelease(f: OpenFile): Promise<void> {
    for (let round = 0; round < RELEASE_IDLE_WAITS_MAX && f.handles === 0 && !f.lock.idle; round++)
      await f.lock.whenIdle();
    if (!this.handles.forget(f)) return; // still open (reopened meanwhile)
    if (!f.unlinked) {
      this.stateGone(f.ino);
      return;
    }
    if (this.lookups.known(f.ino)) {
      this.unlinkedKnown.add(f.ino);
      return;
    }
    await this.deleteData(f.ino);
  }

  /** The kernel dropped n references to an inode (FUSE forget). */
  async forget(ino: number, n: number): Promise<void> {
    if (!this.lookups.forget(ino, n)) return;
    this.goneDirs.delete(ino);
    if (!this.unlinkedKnown.has(ino)) return;
    if (this.handles.file(ino) !== undefined) return; // its last release deletes it
    this.unlinkedKnown.delete(ino);
    await this.deleteData(ino);
  }

  /** At unmount the kernel forgets everything at once: delete what only it still held. */
  async forgetAll(): Promise<void> {
    this.goneDirs.clear();
    const inos = [...this.unlinkedKnown].filter((ino) => this.handles.file(ino) === undefined);
    for (const ino of inos) this.unlinkedKnown.delete(ino);
    let first: unknown = null;
    await deleteEach(
      inos,
      (ino) => this.deleteData(ino),
      (_, err) => {
        first ??= err;
      },
    );
    if (first !== null) throw first;
  }

  private async deleteData(ino: number): Promise<void> {
    const a = this.ns.getattr(ino);
    if (a !== null && a.type === 'file' && a.nlink === 0) await this.store.deleteFile(ino);
  }
}
