// A file handle of FaultyIo: every call passes the fault gate, and writes update
// the durability model (store/io/crash-model.ts).
import { assert } from '../../src/errors';
import { Tracked, resize, writeInto } from './crash-model';
import type { FaultyIo } from './faulty-io';
import { IoFile } from './io';

export class FaultyFile implements IoFile {
  constructor(
    private readonly io: FaultyIo,
    private readonly file: IoFile,
    private readonly t: Tracked | null,
    private readonly path: string,
  ) {}
  async pread(lengthBytes: number, positionBytes: number): Promise<Buffer> {
    await this.io.fileGate('pread', this.path);
    const data = await this.io.run(() => this.file.pread(lengthBytes, positionBytes));
    this.io.after('pread');
    return data;
  }
  async preadInto(target: Buffer, targetOffset: number, lengthBytes: number, positionBytes: number): Promise<number> {
    await this.io.fileGate('pread', this.path);
    const n = await this.io.run(() => this.file.preadInto(target, targetOffset, lengthBytes, positionBytes));
    this.io.after('pread');
    return n;
  }
  private tracked(): Tracked {
    assert(this.t !== null, `FaultyIo: write through a read-only handle of ${this.path}`);
    return this.t;
  }
  async pwrite(data: Uint8Array, positionBytes: number): Promise<void> {
    await this.io.fileGate('pwrite', this.path);
    const t = this.tracked();
    await this.io.run(() => this.file.pwrite(data, positionBytes));
    this.io.after('pwrite');
    t.current = writeInto(t.current, data, positionBytes);
  }
  async fsync(): Promise<void> {
    await this.io.fileGate('fsync', this.path);
    await this.io.run(() => this.file.fsync());
    this.io.after('fsync');
    if (this.t !== null) this.t.durable = Buffer.from(this.t.current);
  }
  async fdatasync(inlineOk?: boolean): Promise<void> {
    await this.io.fileGate('fdatasync', this.path);
    await this.io.run(() => this.file.fdatasync(inlineOk));
    this.io.after('fdatasync');
    if (this.t !== null) this.t.durable = Buffer.from(this.t.current);
    else this.io.noteExternalSync(this.path); // a file written outside the Io (meta.db-wal)
  }
  async sizeBytes(): Promise<number> {
    await this.io.fileGate('size', this.path);
    return this.io.run(() => this.file.sizeBytes());
  }
  async truncate(lengthBytes: number): Promise<void> {
    await this.io.fileGate('truncate', this.path);
    const t = this.tracked();
    await this.io.run(() => this.file.truncate(lengthBytes));
    this.io.after('truncate');
    t.current = resize(t.current, lengthBytes);
  }
  async close(): Promise<void> {
    // Closing never fails in the model: a crashed Io has nothing left to close.
    if (this.io.isCrashed) return;
    await this.file.close();
  }
}
