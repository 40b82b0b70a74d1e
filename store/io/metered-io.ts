// An Io that times every device flush (fsync, fdatasync, directory fsync) for the mount's metrics
// ("histograms of ... device flush latency"). Used only with -o metrics: then every file
// opened for writing is wrapped; reads done inline (Io.openNow) are never wrapped.
import { Io, IoFile, IoStat, OpenMode, StatfsResult } from './io';

export type FlushObserver = (seconds: number) => void;

function timed<T>(observe: FlushObserver, call: () => Promise<T>): Promise<T> {
  const start = process.hrtime.bigint();
  return call().finally(() => observe(Number(process.hrtime.bigint() - start) / 1e9));
}

class MeteredFile implements IoFile {
  constructor(
    private readonly f: IoFile,
    private readonly observe: FlushObserver,
  ) {}
  pread(lengthBytes: number, positionBytes: number): Promise<Buffer> {
    return this.f.pread(lengthBytes, positionBytes);
  }
  preadInto(target: Buffer, targetOffset: number, lengthBytes: number, positionBytes: number): Promise<number> {
    return this.f.preadInto(target, targetOffset, lengthBytes, positionBytes);
  }
  pwrite(data: Uint8Array, positionBytes: number): Promise<void> {
    return this.f.pwrite(data, positionBytes);
  }
  fsync(): Promise<void> {
    return timed(this.observe, () => this.f.fsync());
  }
  fdatasync(inlineOk?: boolean): Promise<void> {
    return timed(this.observe, () => this.f.fdatasync(inlineOk));
  }
  sizeBytes(): Promise<number> {
    return this.f.sizeBytes();
  }
  truncate(lengthBytes: number): Promise<void> {
    return this.f.truncate(lengthBytes);
  }
  close(): Promise<void> {
    return this.f.close();
  }
}

export class MeteredIo implements Io {
  constructor(
    readonly inner: Io,
    private readonly observe: FlushObserver,
  ) {}
  async open(path: string, mode: OpenMode): Promise<IoFile> {
    // Read-mode files are synced too (the WAL is opened read-only and fdatasync'd, store/meta/commit-log.ts).
    return new MeteredFile(await this.inner.open(path, mode), this.observe);
  }
  openNow(path: string): IoFile | null {
    return this.inner.openNow?.(path) ?? null;
  }
  passThrough(): boolean {
    return this.inner.passThrough?.() === true;
  }
  rename(from: string, to: string): Promise<void> {
    return this.inner.rename(from, to);
  }
  unlink(path: string): Promise<void> {
    return this.inner.unlink(path);
  }
  rmdir(path: string): Promise<void> {
    return this.inner.rmdir(path);
  }
  mkdir(path: string): Promise<void> {
    return this.inner.mkdir(path);
  }
  stat(path: string): Promise<IoStat | null> {
    return this.inner.stat(path);
  }
  chmod(path: string, mode: number): Promise<void> {
    return this.inner.chmod(path, mode);
  }
  readdir(path: string): Promise<string[]> {
    return this.inner.readdir(path);
  }
  fsyncDir(path: string): Promise<void> {
    return timed(this.observe, () => this.inner.fsyncDir(path));
  }
  syncfs(roots: readonly string[]): Promise<void> {
    return timed(this.observe, () => this.inner.syncfs(roots));
  }
  statfs(path: string): Promise<StatfsResult> {
    return this.inner.statfs(path);
  }
  exists(path: string): Promise<boolean> {
    return this.inner.exists(path);
  }
  revalidate(path: string): Promise<void> {
    return this.inner.revalidate(path);
  }
  closeAll(): void {
    (this.inner as { closeAll?: () => void }).closeAll?.();
  }
}
