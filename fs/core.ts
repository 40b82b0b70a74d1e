// State shared by the FUSE op handlers: the store, open handles, the write-back buffer, and path
// resolution (the binding speaks paths; the namespace speaks inodes).
import type Fuse from 'fuse-native';
import type { StorePort } from './store-port';
import type { Attr } from '../store/namespace';
import { ROOT_INO } from '../store/meta';
import { Handles, OpenFile } from './handles';
import { WriteBack } from './write-buffer';
import { posix } from './errno';

export const PATH_DEPTH_MAX = 4096;
const BLKSIZE_BYTES = 128 * 1024; // tools size their I/O by st_blksize; FUSE moves 128 KiB per call

export interface CoreOptions {
  bufferBytesMax: number;
  flushDelayMs: number;
  log(message: string): void;
  /** -o debug: log lines carry whole stacks (issue 11: none otherwise). */
  debug?: boolean;
}

export class FsCore {
  readonly handles = new Handles();
  readonly wb: WriteBack;
  constructor(readonly store: StorePort, readonly opts: CoreOptions) {
    this.wb = new WriteBack(store, {
      bufferBytesMax: opts.bufferBytesMax, flushDelayMs: opts.flushDelayMs,
      chunkSizeBytes: store.ns.opts.defaults.chunkSizeBytes, log: opts.log,
    });
  }

  get ns() { return this.store.ns; }

  /** Inode of a path ("/a/b"), following no symlinks (the kernel resolves them). */
  resolve(path: string): Attr {
    let a = this.ns.attr(ROOT_INO);
    const parts = path.split('/').filter((p) => p.length > 0);
    if (parts.length > PATH_DEPTH_MAX) throw posix('ENAMETOOLONG', 'path too deep');
    for (const name of parts) {
      if (a.type !== 'dir') throw posix('ENOTDIR', `${name}: parent is not a directory`);
      const next = this.ns.lookup(a.ino, name);
      if (next === null) throw posix('ENOENT', `${path}: no such entry`);
      a = next;
    }
    return a;
  }

  /** Parent directory and last name of a path. */
  resolveParent(path: string): { parent: Attr; name: string } {
    const cut = path.lastIndexOf('/');
    const name = path.slice(cut + 1);
    if (name.length === 0) throw posix('EINVAL', `${path}: no name`);
    const parent = this.resolve(path.slice(0, cut));
    if (parent.type !== 'dir') throw posix('ENOTDIR', `${path}: parent is not a directory`);
    return { parent, name };
  }

  /** Database attributes with what only the mount knows (buffered size and mtime) laid over. */
  overlay(a: Attr): Attr {
    const f = this.handles.file(a.ino);
    if (f === undefined) return a;
    const mtime = f.mtimeNs ?? a.mtimeNs;
    return { ...a, sizeBytes: f.sizeBytes, mtimeNs: mtime, ctimeNs: mtime > a.ctimeNs ? mtime : a.ctimeNs };
  }

  stat(a: Attr): Fuse.Stat {
    const o = this.overlay(a);
    return {
      mode: o.mode, uid: o.uid, gid: o.gid, size: o.sizeBytes, nlink: o.nlink, ino: o.ino, dev: 0, rdev: 0,
      blksize: BLKSIZE_BYTES, blocks: Math.ceil(o.sizeBytes / 512), atime: o.atimeNs, mtime: o.mtimeNs, ctime: o.ctimeNs,
    };
  }

  /** An inode lost its last name: delete its data now, or at the last release if it is open. */
  async dropped(ino: number, nlink: number): Promise<void> {
    if (nlink > 0) return;
    const f = this.handles.file(ino);
    if (f !== undefined) { f.unlinked = true; return; }
    const a = this.ns.getattr(ino);
    if (a !== null && a.type === 'file') await this.store.deleteFile(ino);
  }

  /** Called after the last handle of a file closed and its buffer was flushed. */
  async lastRelease(f: OpenFile): Promise<void> {
    this.handles.forget(f);
    if (f.unlinked && this.handles.file(f.ino) === undefined) await this.store.deleteFile(f.ino);
  }
}
