// Shared by the tests of rewrites that meet new writes (log-records.test.ts, log-ec-transformed.test.ts):
// Ios that hold the renames of new chunk versions' shard files, so a rewrite waits there while the
// test writes: on the disks as they are (HeldRenames), or in front of a crashable Io (HeldFaultyIo:
// a rename held when the crash comes is refused as every later mutation is).
import { FaultyIo } from '../../store/io/faulty-io';
import { Io, NodeIo } from '../../store/io/io';

/** Holds renames (a shard file's last step) of chunk versions from a given one. */
export class RenameHold {
  private fromVersion: bigint | null = null;
  private held: Promise<void> = Promise.resolve();
  private release: () => void = () => undefined;
  private reachedNow: () => void = () => undefined;
  /** Resolves when a rename is held (after arm). */
  reached: Promise<void> = Promise.resolve();
  /** Hold renames of versions >= fromVersion from now on; those held before go on. */
  arm(fromVersion: bigint): void {
    const release = this.release;
    this.fromVersion = fromVersion;
    this.reached = new Promise((resolve) => {
      this.reachedNow = resolve;
    });
    this.held = new Promise((resolve) => {
      this.release = resolve;
    });
    release();
  }
  letGo(): void {
    this.fromVersion = null;
    this.release();
  }
  /** Resolves when a rename to `to` may go on. */
  async before(to: string): Promise<void> {
    const v = /\.v(\d+)\/c\d+\//.exec(to);
    if (this.fromVersion !== null && v !== null && BigInt(v[1]) >= this.fromVersion) {
      this.reachedNow();
      await this.held;
    }
  }
}

/** The disks as they are, renames held. */
export class HeldRenames extends NodeIo {
  readonly hold = new RenameHold();
  get reached(): Promise<void> {
    return this.hold.reached;
  }
  arm(fromVersion: bigint): void {
    this.hold.arm(fromVersion);
  }
  letGo(): void {
    this.hold.letGo();
  }
  override async rename(from: string, to: string): Promise<void> {
    await this.hold.before(to);
    return super.rename(from, to);
  }
}

/** A crashable Io whose renames are held first (a crash meanwhile refuses them). */
export class HeldFaultyIo extends FaultyIo {
  readonly hold = new RenameHold();
  constructor(inner: Io = new NodeIo()) {
    super(inner);
  }
  override async rename(from: string, to: string): Promise<void> {
    await this.hold.before(to);
    return super.rename(from, to);
  }
}
