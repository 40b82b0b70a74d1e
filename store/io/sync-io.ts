// The synchronous half of the store's I/O interface (store/io/io.ts is the async half, for shards):
// the store's few small files (config, bitrot key, disk identity markers, the lock) and the modes
// of what the store owns. They are read and written at open/mkfs, before any event loop work, so
// synchronous calls keep those paths simple. Everything created here is private to the store's
// owner: files 0600, directories 0700, set explicitly at creation; the umask can only
// narrow that further, never widen it.
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { assert } from '../../src/errors';
import { mkdirTreeSync } from './mkdir-tree';

/** Mode of every file the store creates: shards, temp files, meta.db, config, key, markers, lock. */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of every directory the store creates: the store, disks, .chunks and all beneath. */
export const PRIVATE_DIR_MODE = 0o700;
/** Permission bits of group and others: none may be set on anything the store owns. */
export const GROUP_OTHER_BITS = 0o077;
const SMALL_FILE_BYTES_MAX = 1 << 20; // config, key, marker, lock: far smaller

export interface IoStat {
  /** Permission bits (mode & 0o7777). */
  permBits: number;
  uid: number;
  /** Device id: disks on one filesystem count once in statfs. */
  dev: number;
  kind: 'file' | 'dir' | 'other';
}

export interface SyncIo {
  /** The whole file; refuses files over 1 MiB (none of the store's small files is near that). */
  readFile(path: string): Buffer;
  /** tmp file (0600, exclusive), write, fsync, rename over path, fsync the directory. */
  writeFileDurable(path: string, data: Buffer): void;
  /** O_CREAT|O_EXCL with 0600, write, fsync; throws EEXIST if path exists. */
  createExclusive(path: string, data: Buffer): void;
  /** Recursive; directories it creates are 0700. Succeeds if the directory exists. */
  mkdirPrivate(path: string): void;
  /** stat (a disk path may be a symlink to its device's mount), or null when nothing is at path. */
  stat(path: string): IoStat | null;
  chmod(path: string, mode: number): void;
  readdir(path: string): string[];
  rename(from: string, to: string): void;
  link(from: string, to: string): void;
  /** Remove a file; nothing to do when it is gone. */
  remove(path: string): void;
  /** Remove a directory and all beneath it; nothing to do when it is gone (mkfs undoing what it made). */
  removeTree(path: string): void;
  /** fsync a file or a directory (its entries) that exists. */
  fsync(path: string): void;
}

export function statOf(st: fs.Stats): IoStat {
  const kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other';
  return { permBits: st.mode & 0o7777, uid: st.uid, dev: st.dev, kind };
}

function fsyncPath(path: string, flags: number): void {
  const fd = fs.openSync(path, flags);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function writeAllSync(fd: number, data: Buffer): void {
  let done = 0;
  for (let loop = 0; loop < 1024 && done < data.length; loop++)
    done += fs.writeSync(fd, data, done, data.length - done);
  assert(done === data.length, 'small file: short write');
}

export class NodeSyncIo implements SyncIo {
  readFile(path: string): Buffer {
    const fd = fs.openSync(path, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      if (size > SMALL_FILE_BYTES_MAX)
        throw new Error(`${path} is ${size} bytes, larger than any store file (${SMALL_FILE_BYTES_MAX})`);
      const buf = Buffer.alloc(size);
      return buf.subarray(0, fs.readSync(fd, buf, 0, size, 0));
    } finally {
      fs.closeSync(fd);
    }
  }
  writeFileDurable(path: string, data: Buffer): void {
    const tmp = `${path}.tmp`;
    fs.rmSync(tmp, { force: true }); // left by an interrupted write; never holds the only copy
    try {
      this.createExclusive(tmp, data);
      fs.renameSync(tmp, path);
    } catch (err) {
      fs.rmSync(tmp, { force: true }); // a failed write leaves no temp file beside path
      throw err;
    }
    fsyncPath(nodePath.dirname(path), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  }
  createExclusive(path: string, data: Buffer): void {
    const fd = fs.openSync(path, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, PRIVATE_FILE_MODE);
    let written = false;
    try {
      writeAllSync(fd, data);
      fs.fsyncSync(fd);
      written = true;
    } finally {
      fs.closeSync(fd);
      // Made by this call (O_EXCL): a write that failed (a full disk) leaves no empty or partial file.
      if (!written) fs.rmSync(path, { force: true });
    }
  }
  mkdirPrivate(path: string): void {
    mkdirTreeSync(path, PRIVATE_DIR_MODE);
  }
  stat(path: string): IoStat | null {
    try {
      return statOf(fs.statSync(path));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }
  chmod(path: string, mode: number): void {
    fs.chmodSync(path, mode);
  }
  readdir(path: string): string[] {
    return fs.readdirSync(path);
  }
  rename(from: string, to: string): void {
    fs.renameSync(from, to);
  }
  link(from: string, to: string): void {
    fs.linkSync(from, to);
  }
  remove(path: string): void {
    fs.rmSync(path, { force: true });
  }
  removeTree(path: string): void {
    fs.rmSync(path, { recursive: true, force: true });
  }
  fsync(path: string): void {
    fsyncPath(path, fs.constants.O_RDONLY);
  }
}

/** The production instance (stateless). */
export const nodeSyncIo: SyncIo = new NodeSyncIo();
