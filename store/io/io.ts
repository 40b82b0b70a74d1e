// The one small I/O interface every disk access of the store goes through
// (tests substitute store/io/faulty-io.ts to inject EIO/ENOSPC, latency
// and crashes). NodeIo is the production implementation: it keeps a bounded
// LRU cache of open descriptors so hot shard files are not reopened per read.
import * as fs from 'node:fs';
import { LRUCache } from 'lru-cache';
import { assert } from '../../src/errors';
import { rsNative } from '../../src/rs-native';
import { mkdirTree } from './mkdir-tree';
import { IoStat, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, statOf } from './sync-io';

export type { IoStat } from './sync-io';

/**
 * 'create-direct': 'create-exclusive' whose writes bypass the page cache (O_DIRECT): every buffer,
 * length and offset written must be 4 KiB-aligned (DIRECT_ALIGN_BYTES), else the write fails EINVAL.
 */
export type OpenMode = 'read' | 'readwrite' | 'create-exclusive' | 'create-direct';

export interface IoFile {
  /** Reads up to lengthBytes at positionBytes; short only at EOF. */
  pread(lengthBytes: number, positionBytes: number): Promise<Buffer>;
  /** pread into target[targetOffset..]; returns the bytes read (short only at EOF). */
  preadInto(target: Buffer, targetOffset: number, lengthBytes: number, positionBytes: number): Promise<number>;
  pwrite(data: Uint8Array, positionBytes: number): Promise<void>;
  /** The parts written back to back from positionBytes in one call, off the calling thread (optional). */
  pwritev?(parts: Uint8Array[], positionBytes: number): Promise<void>;
  fsync(): Promise<void>;
  /** inlineOk false: always on the libuv pool (several files' syncs at once stay concurrent). */
  fdatasync(inlineOk?: boolean): Promise<void>;
  sizeBytes(): Promise<number>;
  truncate(lengthBytes: number): Promise<void>;
  close(): Promise<void>;
  /** preadInto done now, on the calling thread (only files from Io.openNow have it). */
  preadIntoNow?(target: Buffer, targetOffset: number, lengthBytes: number, positionBytes: number): number;
}

export interface StatfsResult {
  totalBytes: number;
  freeBytes: number;
  availBytes: number;
}

export interface Io {
  /** 'create-exclusive' creates the file 0600 (the store is private to its owner). */
  open(path: string, mode: OpenMode): Promise<IoFile>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  /** Recursive; succeeds if the directory exists. Directories it creates are 0700. */
  mkdir(path: string): Promise<void>;
  /** stat, or null when nothing is at path (the scrub's walk for loose modes). */
  stat(path: string): Promise<IoStat | null>;
  chmod(path: string, mode: number): Promise<void>;
  readdir(path: string): Promise<string[]>;
  fsyncDir(path: string): Promise<void>;
  /**
   * syncfs(2) of the one file system holding every path of roots (disk roots the caller found on one
   * st_dev), off the calling thread: every file's data and every directory entry on it is durable
   * once it resolves, and a writeback error of any file there since the last syncfs of roots[0]
   * rejects it (Linux >= 5.8). Each root is named so that a fault set on any of those disks fails it.
   * DESIGN §5 "One syncfs per file system".
   */
  syncfs(roots: readonly string[]): Promise<void>;
  statfs(path: string): Promise<StatfsResult>;
  exists(path: string): Promise<boolean>;
  /**
   * Drop any cached descriptor of path that no longer names the file now at path
   * (unlinked or replaced from outside the Io), so the next open sees the truth.
   */
  revalidate(path: string): Promise<void>;
  /**
   * Optional synchronous fast path: the file at path if its descriptor is already open and a
   * small read may run inline now (see InlineGate), else null. Close it like any other.
   */
  openNow?(path: string): IoFile | null;
  /**
   * True when nothing injected stands between this Io and the disks, so a read made outside it (a
   * read grant, fs/fuse/read-grants.ts) sees what a read through it would. Absent: never (the
   * crash-model twin, store/io/faulty-io.ts).
   */
  passThrough?(): boolean;
}

const DESCRIPTORS_MAX_DEFAULT = 256;
const PREAD_LOOPS_MAX = 1024; // a pread returning 0 < n < asked repeatedly means EOF soon
/**
 * Small reads and writes (a FUSE request's worth) and fdatasync run inline on the calling
 * thread when no other Io call is in flight. Measured in this VM (fio 4 KiB random reads,
 * caches dropped, fuse-native passthrough): 2225 IOPS through the libuv pool, 8506 inline;
 * each pool round trip costs ~300 us of thread wake-ups on an idle 2-vCPU machine. Under
 * concurrency the pool is used, so one slow call never serializes the others behind it.
 */
export const INLINE_BYTES_MAX = 256 * 1024;

/** Counts pool calls in flight so a lone small call can run inline (see INLINE_BYTES_MAX). */
export class InlineGate {
  inFlight = 0;
  inlineCalls = 0;
  constructor(readonly enabled: boolean) {}

  run<T>(inline: (() => T) | null, pooled: () => Promise<T>): Promise<T> {
    if (inline !== null && this.enabled && this.inFlight === 0) {
      this.inlineCalls++;
      try {
        return Promise.resolve(inline());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    this.inFlight++;
    return pooled().finally(() => {
      this.inFlight--;
    });
  }
}

function preadIntoSync(
  fd: number,
  target: Buffer,
  targetOffset: number,
  lengthBytes: number,
  positionBytes: number,
): number {
  let done = 0;
  for (let loop = 0; loop < PREAD_LOOPS_MAX && done < lengthBytes; loop++) {
    const n = fs.readSync(fd, target, targetOffset + done, lengthBytes - done, positionBytes + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

function pwriteSync(fd: number, data: Uint8Array, positionBytes: number): void {
  let done = 0;
  for (let loop = 0; loop < PREAD_LOOPS_MAX && done < data.length; loop++) {
    done += fs.writeSync(fd, data, done, data.length - done, positionBytes + done);
  }
  assert(done === data.length, 'pwrite: short write');
}

function fdRead(fd: number, buf: Buffer, offset: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    fs.read(fd, buf, offset, length, position, (err, n) => (err ? reject(err) : resolve(n)));
  });
}

function fdWrite(fd: number, buf: Uint8Array, offset: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    fs.write(fd, buf, offset, length, position, (err, n) => (err ? reject(err) : resolve(n)));
  });
}

function fdWritev(fd: number, parts: Uint8Array[], position: number): Promise<number> {
  return new Promise((resolve, reject) => fs.writev(fd, parts, position, (err, n) => (err ? reject(err) : resolve(n))));
}

/** writev at positionBytes until every part is written (a short write resumes where it stopped). */
async function pwritevFd(fd: number, parts: Uint8Array[], positionBytes: number): Promise<void> {
  const total = parts.reduce((n, p) => n + p.length, 0);
  let rest = [...parts]; // the caller's array stays as it was
  let done = 0;
  for (let loop = 0; loop < PREAD_LOOPS_MAX && done < total; loop++) {
    let n = await fdWritev(fd, rest, positionBytes + done);
    done += n;
    while (rest.length > 0 && n >= rest[0].length) n -= rest.shift()!.length;
    if (n > 0) rest = [rest[0].subarray(n), ...rest.slice(1)];
  }
  assert(done === total, 'pwritev: short write');
}

function fdCall(fn: (fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => void, fd: number): Promise<void> {
  return new Promise((resolve, reject) => fn(fd, (err) => (err ? reject(err) : resolve())));
}

export async function preadIntoFd(
  fd: number,
  target: Buffer,
  targetOffset: number,
  lengthBytes: number,
  positionBytes: number,
): Promise<number> {
  assert(lengthBytes >= 0 && positionBytes >= 0 && targetOffset + lengthBytes <= target.length, 'pread: bad range');
  let done = 0;
  for (let loop = 0; loop < PREAD_LOOPS_MAX && done < lengthBytes; loop++) {
    const n = await fdRead(fd, target, targetOffset + done, lengthBytes - done, positionBytes + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

export async function preadFd(fd: number, lengthBytes: number, positionBytes: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(lengthBytes);
  const done = await preadIntoFd(fd, buf, 0, lengthBytes, positionBytes);
  return done === lengthBytes ? buf : buf.subarray(0, done);
}

const PARALLEL_PIECE_BYTES = 1 << 19;

/**
 * A large read as concurrent 1 MiB preads into one buffer: a single big pread of a
 * cold file is served by the kernel as a series of small readahead-sized requests;
 * concurrent pieces keep the device busy (verified sequential reads).
 */
export async function preadParallel(f: IoFile, lengthBytes: number, positionBytes: number): Promise<Buffer> {
  if (lengthBytes <= PARALLEL_PIECE_BYTES) return f.pread(lengthBytes, positionBytes);
  const buf = Buffer.allocUnsafe(lengthBytes);
  const total = await preadIntoParallel(f, buf, 0, lengthBytes, positionBytes);
  return total === lengthBytes ? buf : buf.subarray(0, total);
}

/** preadParallel into target[targetOffset..]; returns the bytes read (short only at EOF). */
export async function preadIntoParallel(
  f: IoFile,
  target: Buffer,
  targetOffset: number,
  lengthBytes: number,
  positionBytes: number,
): Promise<number> {
  if (lengthBytes <= PARALLEL_PIECE_BYTES) return f.preadInto(target, targetOffset, lengthBytes, positionBytes);
  const pieces: Promise<number>[] = [];
  for (let at = 0; at < lengthBytes; at += PARALLEL_PIECE_BYTES) {
    pieces.push(
      f.preadInto(target, targetOffset + at, Math.min(PARALLEL_PIECE_BYTES, lengthBytes - at), positionBytes + at),
    );
  }
  const got = await settledAll(pieces); // every piece done before the caller may reuse target
  // Short pieces only at EOF: the bytes read are the full pieces before the first short one.
  let total = 0;
  for (let i = 0; i < got.length; i++) {
    total += got[i];
    if (got[i] < Math.min(PARALLEL_PIECE_BYTES, lengthBytes - i * PARALLEL_PIECE_BYTES)) break;
  }
  return total;
}

/** Promise.all that waits for every promise to settle, then throws the first rejection (in order). */
export async function settledAll<T>(promises: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
}

export async function pwriteFd(fd: number, data: Uint8Array, positionBytes: number): Promise<void> {
  let done = 0;
  for (let loop = 0; loop < PREAD_LOOPS_MAX && done < data.length; loop++) {
    done += await fdWrite(fd, data, done, data.length - done, positionBytes + done);
  }
  assert(done === data.length, 'pwrite: short write');
}

/** A descriptor shared by the cache and its users; closed when evicted and unused. */
class Descriptor {
  refs = 0;
  evicted = false;
  constructor(
    readonly fd: number,
    readonly writable: boolean,
  ) {}
  release(): Promise<void> {
    this.refs--;
    assert(this.refs >= 0, 'descriptor released twice');
    return this.evicted && this.refs === 0 ? fdCall(fs.close, this.fd) : Promise.resolve();
  }
}

class NodeFile implements IoFile {
  private closed = false;
  constructor(
    private readonly d: Descriptor,
    private readonly gate: InlineGate,
  ) {}
  pread(lengthBytes: number, positionBytes: number): Promise<Buffer> {
    const fd = this.d.fd;
    const inline =
      lengthBytes <= INLINE_BYTES_MAX
        ? () => {
            const buf = Buffer.allocUnsafe(lengthBytes);
            const done = preadIntoSync(fd, buf, 0, lengthBytes, positionBytes);
            return done === lengthBytes ? buf : buf.subarray(0, done);
          }
        : null;
    return this.gate.run(inline, () => preadFd(fd, lengthBytes, positionBytes));
  }
  preadIntoNow(target: Buffer, targetOffset: number, lengthBytes: number, positionBytes: number): number {
    assert(
      lengthBytes >= 0 &&
        lengthBytes <= INLINE_BYTES_MAX &&
        positionBytes >= 0 &&
        targetOffset + lengthBytes <= target.length,
      'pread now: bad range',
    );
    return preadIntoSync(this.d.fd, target, targetOffset, lengthBytes, positionBytes);
  }
  preadInto(target: Buffer, targetOffset: number, lengthBytes: number, positionBytes: number): Promise<number> {
    assert(lengthBytes >= 0 && positionBytes >= 0 && targetOffset + lengthBytes <= target.length, 'pread: bad range');
    const fd = this.d.fd;
    const inline =
      lengthBytes <= INLINE_BYTES_MAX
        ? () => preadIntoSync(fd, target, targetOffset, lengthBytes, positionBytes)
        : null;
    return this.gate.run(inline, () => preadIntoFd(fd, target, targetOffset, lengthBytes, positionBytes));
  }
  pwrite(data: Uint8Array, positionBytes: number): Promise<void> {
    assert(this.d.writable, 'pwrite on a read-only descriptor');
    const fd = this.d.fd;
    const inline = data.length <= INLINE_BYTES_MAX ? () => pwriteSync(fd, data, positionBytes) : null;
    return this.gate.run(inline, () => pwriteFd(fd, data, positionBytes));
  }
  pwritev(parts: Uint8Array[], positionBytes: number): Promise<void> {
    assert(this.d.writable, 'pwritev on a read-only descriptor');
    return this.gate.run(null, () => pwritevFd(this.d.fd, parts, positionBytes));
  }
  fsync(): Promise<void> {
    // Whole-shard writes fsync several shard files at once: they stay concurrent in the pool.
    return this.gate.run(null, () => fdCall(fs.fsync, this.d.fd));
  }
  fdatasync(inlineOk = true): Promise<void> {
    // A lone small sync (one §8.2 patch, the WAL) runs inline when nothing else is in flight.
    const fd = this.d.fd;
    return this.gate.run(inlineOk ? () => fs.fdatasyncSync(fd) : null, () => fdCall(fs.fdatasync, fd));
  }
  sizeBytes(): Promise<number> {
    return new Promise((resolve, reject) => fs.fstat(this.d.fd, (err, st) => (err ? reject(err) : resolve(st.size))));
  }
  truncate(lengthBytes: number): Promise<void> {
    return new Promise((resolve, reject) =>
      fs.ftruncate(this.d.fd, lengthBytes, (err) => (err ? reject(err) : resolve())),
    );
  }
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return this.d.release();
  }
}

function fdStat(fd: number): Promise<fs.Stats> {
  return new Promise((resolve, reject) => fs.fstat(fd, (err, st) => (err ? reject(err) : resolve(st))));
}

function openFd(path: string, flags: string | number): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.open(path, flags, PRIVATE_FILE_MODE, (err, fd) => (err ? reject(err) : resolve(fd))),
  );
}

export interface NodeIoOptions {
  descriptorsMax?: number;
  /** Run a lone small call inline (INLINE_BYTES_MAX); false: always the libuv pool. */
  inlineWhenIdle?: boolean;
}

export class NodeIo implements Io {
  private readonly cache: LRUCache<string, Descriptor>;
  /**
   * A descriptor per path synced with syncfs, kept open: syncfs reports the file system's writeback
   * errors since the descriptor was opened or last synced, so one opened per call could miss an
   * error another process's syncfs already saw.
   */
  private readonly syncfsFds = new Map<string, Promise<number>>();
  readonly gate: InlineGate;

  constructor(opts: NodeIoOptions = {}) {
    const descriptorsMax = opts.descriptorsMax ?? DESCRIPTORS_MAX_DEFAULT;
    assert(descriptorsMax > 0, 'NodeIo: descriptorsMax must be positive');
    this.gate = new InlineGate(opts.inlineWhenIdle ?? true);
    this.cache = new LRUCache<string, Descriptor>({
      max: descriptorsMax,
      dispose: (d) => {
        d.evicted = true;
        if (d.refs === 0) fs.close(d.fd, () => undefined);
      },
    });
  }

  async open(path: string, mode: OpenMode): Promise<IoFile> {
    if (mode === 'create-exclusive' || mode === 'create-direct') {
      // Temp files are written once and renamed; never cached.
      const c = fs.constants;
      const fd = await openFd(path, mode === 'create-direct' ? c.O_CREAT | c.O_EXCL | c.O_RDWR | c.O_DIRECT : 'wx+');
      const d = new Descriptor(fd, true);
      d.evicted = true;
      d.refs = 1;
      return new NodeFile(d, this.gate);
    }
    const writable = mode === 'readwrite';
    let d = this.cache.get(path);
    if (d === undefined || (writable && !d.writable)) {
      const fd = await openFd(path, writable ? 'r+' : 'r');
      // Another open may have raced us; the cache keeps the newest, the old one closes when released.
      d = new Descriptor(fd, writable);
      this.cache.set(path, d);
    }
    d.refs++;
    return new NodeFile(d, this.gate);
  }

  passThrough(): boolean {
    return true;
  }

  openNow(path: string): IoFile | null {
    if (!this.gate.enabled || this.gate.inFlight > 0) return null;
    const d = this.cache.get(path);
    if (d === undefined) return null;
    d.refs++;
    return new NodeFile(d, this.gate);
  }

  /** A path whose file is replaced or removed must not be served from a stale descriptor. */
  private forget(path: string): void {
    this.cache.delete(path);
  }

  async rename(from: string, to: string): Promise<void> {
    this.forget(from);
    this.forget(to);
    await fs.promises.rename(from, to);
  }
  async unlink(path: string): Promise<void> {
    this.forget(path);
    await fs.promises.unlink(path);
  }
  async rmdir(path: string): Promise<void> {
    await fs.promises.rmdir(path);
  }
  async mkdir(path: string): Promise<void> {
    await mkdirTree(path, PRIVATE_DIR_MODE);
  }
  async stat(path: string): Promise<IoStat | null> {
    try {
      return statOf(await fs.promises.stat(path));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return null;
      throw err;
    }
  }
  async chmod(path: string, mode: number): Promise<void> {
    await fs.promises.chmod(path, mode);
  }
  async readdir(path: string): Promise<string[]> {
    return fs.promises.readdir(path);
  }
  async fsyncDir(path: string): Promise<void> {
    const fd = await openFd(path, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    try {
      await fdCall(fs.fsync, fd);
    } finally {
      await fdCall(fs.close, fd);
    }
  }
  async syncfs(roots: readonly string[]): Promise<void> {
    assert(roots.length > 0, 'syncfs: no path');
    const fd = await this.syncfsFd(roots[0]);
    await this.gate.run(null, () => rsNative().syncfs(fd));
  }
  /**
   * The kept descriptor of path, opened again when path no longer names what it holds (a device
   * mounted or unmounted there since): a syncfs through it would flush the wrong file system.
   */
  private async syncfsFd(path: string): Promise<number> {
    const kept = this.syncfsFds.get(path);
    if (kept !== undefined) {
      const fd = await kept.catch(() => null);
      if (fd !== null) {
        const [now, held] = await Promise.all([fs.promises.stat(path), fdStat(fd)]);
        if (now.dev === held.dev && now.ino === held.ino) return fd;
      }
      // Closed by the one call that drops it (a group's closes, its only caller, run one at a time).
      if (this.syncfsFds.get(path) !== kept) return this.syncfsFd(path);
      this.syncfsFds.delete(path);
      if (fd !== null) fs.close(fd, () => undefined);
    }
    const opened = openFd(path, fs.constants.O_RDONLY);
    this.syncfsFds.set(path, opened);
    opened.catch(() => {
      if (this.syncfsFds.get(path) === opened) this.syncfsFds.delete(path); // opened again by the next call
    });
    return opened;
  }
  async statfs(path: string): Promise<StatfsResult> {
    const st = await fs.promises.statfs(path);
    return { totalBytes: st.blocks * st.bsize, freeBytes: st.bfree * st.bsize, availBytes: st.bavail * st.bsize };
  }
  async exists(path: string): Promise<boolean> {
    try {
      await fs.promises.access(path);
      return true;
    } catch {
      return false;
    }
  }
  async revalidate(path: string): Promise<void> {
    const d = this.cache.peek(path);
    if (d === undefined) return;
    let same = false;
    try {
      const [now, held] = await Promise.all([fs.promises.stat(path), fdStat(d.fd)]);
      same = now.ino === held.ino && now.dev === held.dev;
    } catch {
      same = false; // path gone (or unreadable): the cached file is not what the path names
    }
    if (!same && this.cache.peek(path) === d) this.cache.delete(path);
  }
  /** Close every cached descriptor (store close). */
  closeAll(): void {
    this.cache.clear();
    for (const fd of this.syncfsFds.values()) void fd.then((n) => fs.close(n, () => undefined)).catch(() => undefined);
    this.syncfsFds.clear();
  }
}

/** errno code of a Node system error, or undefined. */
export function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string'
    ? (err as { code: string }).code
    : undefined;
}
