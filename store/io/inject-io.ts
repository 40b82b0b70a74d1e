// The production Io of a live mount: NodeIo (or any Io) behind store/io/fault-table.ts, so
// `chunkfs inject` can make a disk fail, fill up, stall or vanish while the mount runs (
// DESIGN §2: every disk call of store/ goes through one I/O interface so faults can be injected
// anywhere). With no fault set every call goes straight to the inner Io, files are not wrapped and
// the synchronous fast path stays open: the only cost is one property read per call.
// (store/io/faulty-io.ts is the test twin that also models crashes; this one is small on purpose.)
import { FaultTable, OpClass } from './fault-table';
import { Io, IoFile, IoStat, OpenMode, StatfsResult } from './io';
import { SyncIo } from './sync-io';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Latency first, then the injected error if any; throws it. */
async function gate(faults: FaultTable, opClass: OpClass, op: string, path: string): Promise<void> {
  const hit = faults.check(opClass, op, path);
  if (hit.delayMs > 0) await sleep(hit.delayMs);
  if (hit.error !== null) throw hit.error;
}

/** A file opened while a fault was set: every call passes the table. */
class InjectFile implements IoFile {
  constructor(
    private readonly f: IoFile,
    private readonly path: string,
    private readonly faults: FaultTable,
  ) {}
  async pread(lengthBytes: number, positionBytes: number): Promise<Buffer> {
    await gate(this.faults, 'read', 'pread', this.path);
    return this.f.pread(lengthBytes, positionBytes);
  }
  async preadInto(target: Buffer, targetOffset: number, lengthBytes: number, positionBytes: number): Promise<number> {
    await gate(this.faults, 'read', 'pread', this.path);
    return this.f.preadInto(target, targetOffset, lengthBytes, positionBytes);
  }
  async pwrite(data: Uint8Array, positionBytes: number): Promise<void> {
    await gate(this.faults, 'write', 'pwrite', this.path);
    return this.f.pwrite(data, positionBytes);
  }
  async fsync(): Promise<void> {
    await gate(this.faults, 'write', 'fsync', this.path);
    return this.f.fsync();
  }
  async fdatasync(inlineOk?: boolean): Promise<void> {
    await gate(this.faults, 'write', 'fdatasync', this.path);
    return this.f.fdatasync(inlineOk);
  }
  async sizeBytes(): Promise<number> {
    await gate(this.faults, 'read', 'fstat', this.path);
    return this.f.sizeBytes();
  }
  async truncate(lengthBytes: number): Promise<void> {
    await gate(this.faults, 'write', 'ftruncate', this.path);
    return this.f.truncate(lengthBytes);
  }
  /** Closing never fails: a descriptor must always be given back. */
  close(): Promise<void> {
    return this.f.close();
  }
}

export class InjectIo implements Io {
  constructor(
    readonly inner: Io,
    readonly faults: FaultTable,
  ) {}

  open(path: string, mode: OpenMode): Promise<IoFile> {
    return this.faults.armed ? this.openGated(path, mode) : this.inner.open(path, mode);
  }
  private async openGated(path: string, mode: OpenMode): Promise<IoFile> {
    // Opening an existing file writes nothing (its pwrites do); creating one does.
    await gate(
      this.faults,
      mode === 'create-exclusive' || mode === 'create-direct' ? 'write' : 'read',
      mode === 'create-exclusive' || mode === 'create-direct' ? 'create' : 'open',
      path,
    );
    return new InjectFile(await this.inner.open(path, mode), path, this.faults);
  }
  /** The synchronous fast path only while no fault is set: a faulty read must take the gated path. */
  passThrough(): boolean {
    return !this.faults.armed && this.inner.passThrough?.() === true;
  }

  openNow(path: string): IoFile | null {
    if (this.faults.armed || this.inner.openNow === undefined) return null;
    return this.inner.openNow(path);
  }

  /** Only reached while a fault is set: the callers check `armed` first, so no closure is made otherwise. */
  private gated<T>(opClass: OpClass, op: string, path: string, call: () => Promise<T>): Promise<T> {
    return gate(this.faults, opClass, op, path).then(call);
  }
  rename(from: string, to: string): Promise<void> {
    // The source decides: a rename within one disk (tmp -> shard) is that disk's operation.
    return this.faults.armed
      ? this.gated('write', 'rename', from, () => this.inner.rename(from, to))
      : this.inner.rename(from, to);
  }
  unlink(path: string): Promise<void> {
    return this.faults.armed
      ? this.gated('write', 'unlink', path, () => this.inner.unlink(path))
      : this.inner.unlink(path);
  }
  rmdir(path: string): Promise<void> {
    return this.faults.armed
      ? this.gated('write', 'rmdir', path, () => this.inner.rmdir(path))
      : this.inner.rmdir(path);
  }
  mkdir(path: string): Promise<void> {
    return this.faults.armed
      ? this.gated('write', 'mkdir', path, () => this.inner.mkdir(path))
      : this.inner.mkdir(path);
  }
  stat(path: string): Promise<IoStat | null> {
    return this.faults.armed ? this.gated('read', 'stat', path, () => this.inner.stat(path)) : this.inner.stat(path);
  }
  chmod(path: string, mode: number): Promise<void> {
    return this.faults.armed
      ? this.gated('write', 'chmod', path, () => this.inner.chmod(path, mode))
      : this.inner.chmod(path, mode);
  }
  readdir(path: string): Promise<string[]> {
    return this.faults.armed
      ? this.gated('read', 'readdir', path, () => this.inner.readdir(path))
      : this.inner.readdir(path);
  }
  fsyncDir(path: string): Promise<void> {
    return this.faults.armed
      ? this.gated('write', 'fsync', path, () => this.inner.fsyncDir(path))
      : this.inner.fsyncDir(path);
  }
  /** A fault on any disk of roots fails it: the syncfs stands for a flush of each of those disks. */
  async syncfs(roots: readonly string[]): Promise<void> {
    if (this.faults.armed) for (const root of roots) await gate(this.faults, 'write', 'syncfs', root);
    return this.inner.syncfs(roots);
  }
  statfs(path: string): Promise<StatfsResult> {
    return this.faults.armed
      ? this.gated('read', 'statfs', path, () => this.inner.statfs(path))
      : this.inner.statfs(path);
  }
  exists(path: string): Promise<boolean> {
    return this.faults.armed
      ? this.gated('read', 'access', path, () => this.inner.exists(path))
      : this.inner.exists(path);
  }
  /** Cache upkeep, not a disk operation of the store's: never faulted. */
  revalidate(path: string): Promise<void> {
    return this.inner.revalidate(path);
  }
  /** Close every cached descriptor of the inner Io (store close). */
  closeAll(): void {
    (this.inner as { closeAll?: () => void }).closeAll?.();
  }
}

/**
 * The small-file half (config, key, disk markers, lock): only a disk taken offline reaches it (its
 * identity marker then cannot be read, DESIGN §3); EIO, ENOSPC and latency faults are for the
 * shard I/O a user drives through the mount, and the calls here are synchronous.
 */
export class InjectSyncIo implements SyncIo {
  constructor(
    readonly inner: SyncIo,
    readonly faults: FaultTable,
  ) {}

  private check(opClass: OpClass, op: string, path: string): void {
    if (!this.faults.armed) return;
    const hit = this.faults.check(opClass, op, path, Date.now(), true);
    if (hit.error !== null) throw hit.error;
  }
  readFile(path: string): Buffer {
    this.check('read', 'read', path);
    return this.inner.readFile(path);
  }
  writeFileDurable(path: string, data: Buffer): void {
    this.check('write', 'write', path);
    this.inner.writeFileDurable(path, data);
  }
  createExclusive(path: string, data: Buffer): void {
    this.check('write', 'create', path);
    this.inner.createExclusive(path, data);
  }
  mkdirPrivate(path: string): void {
    this.check('write', 'mkdir', path);
    this.inner.mkdirPrivate(path);
  }
  stat(path: string): IoStat | null {
    this.check('read', 'stat', path);
    return this.inner.stat(path);
  }
  chmod(path: string, mode: number): void {
    this.check('write', 'chmod', path);
    this.inner.chmod(path, mode);
  }
  readdir(path: string): string[] {
    this.check('read', 'readdir', path);
    return this.inner.readdir(path);
  }
  rename(from: string, to: string): void {
    this.check('write', 'rename', from);
    this.inner.rename(from, to);
  }
  link(from: string, to: string): void {
    this.check('write', 'link', to);
    this.inner.link(from, to);
  }
  remove(path: string): void {
    this.check('write', 'unlink', path);
    this.inner.remove(path);
  }
  removeTree(path: string): void {
    this.check('write', 'unlink', path);
    this.inner.removeTree(path);
  }
  fsync(path: string): void {
    this.check('write', 'fsync', path);
    this.inner.fsync(path);
  }
}
