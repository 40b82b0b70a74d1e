// Space for buffered bytes (DESIGN §5): before the write-back accepts bytes that grow what a file
// holds in memory, it reserves the disk bytes they will take once stored (src/space-need.ts) out of
// the disks' free space less what other buffered bytes reserved, as ext4 reserves blocks for delayed
// allocation at write time. When they do not fit, the write fails with ENOSPC and nothing of it is
// buffered. The reservation ends when the bytes are stored (or dropped); from then on the disks'
// own free space counts them. The free space is sampled (statfs of each disk's file system, through
// store/io), not asked per write.
import type { StorePort } from './store-port';
import type { OpenFile } from './handles';
import { storedBytesUpperBound } from '../src/space-need';
import { posix } from './errno';
import { assert } from '../src/errors';

/** A sample of the disks' free space is used for at most this long (the cost: one statfs per disk per period). */
export const SPACE_SAMPLE_MS = 100;
/** ...and for at most this many disk bytes reserved since it was taken (64 MiB: ~5 statfs per GiB written). */
export const SPACE_SAMPLE_RESERVED_BYTES = 64 << 20;
/**
 * Share of the disks' size kept free of reservations, at most SPACE_MARGIN_BYTES_MAX: the disk
 * bytes no buffered byte reserves. Those are the shard fan-out's directories (spec §7: up to two of
 * 4 KiB per new chunk on ext4, 2 per 4 MiB chunk = 0.2% at replica:3), the applier's copy-on-write
 * rewrites of EC and transformed chunks after partial writes (a new version before the old one is
 * reclaimed: 8 chunks at once, 48 MiB at ec:4+2), compaction's copies and a file spread over more
 * chunks than its bytes fill (one more head per chunk: src/space-need.ts counts whole chunks).
 * The estimate itself was exact on tmpfs (a 4 MiB replica:3 file: 12,619,776 bytes, DESIGN §5), so the
 * margin is for those, ten times the directories' share.
 */
export const SPACE_MARGIN_FRACTION = 0.02;
export const SPACE_MARGIN_BYTES_MAX = 64 << 20;

export class SpaceLedger {
  /** Disk bytes reserved for bytes buffered or being stored. */
  private reservedBytes = 0;
  /** Disk bytes released since the sample being used was started: the disks may not show them yet. */
  private unsampledBytes = 0;
  private availBytes = 0;
  private marginBytes = 0;
  private sampledAtMs = -Infinity;
  private reservedSinceSampleBytes = 0;
  private sampling: Promise<void> | null = null;
  /** statfs samples taken (each one statfs per disk file system): the cost, counted for tests. */
  samples = 0;

  constructor(
    private readonly store: StorePort,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /** The store can say its raw free space and what bytes need: else nothing is reserved. */
  get enabled(): boolean {
    return this.store.rawStatfs !== undefined && this.store.spaceLayoutOf !== undefined;
  }

  /** Disk bytes reserved now (statfs of the mount counts them as used). */
  get reserved(): number {
    return this.reservedBytes;
  }

  /**
   * Disk bytes that logicalBytes of the file will take once stored. Its layout is asked once per
   * open state (a store lookup per write would cost more than the write's copy).
   */
  need(file: OpenFile, logicalBytes: number): number {
    if (logicalBytes === 0) return 0;
    file.spaceLayout ??= this.store.spaceLayoutOf?.(file.ino) ?? null;
    return file.spaceLayout === null ? 0 : storedBytesUpperBound(file.spaceLayout, logicalBytes);
  }

  /**
   * Reserve bytes at once when the sample is fresh: true when they fit, false when they do not
   * (reserve decides then, with a new sample), null when a new sample is due.
   */
  tryReserve(bytes: number): boolean | null {
    if (bytes <= 0) return true;
    if (!this.fresh()) return null;
    if (bytes > this.roomBytes()) return false;
    this.reservedBytes += bytes;
    this.reservedSinceSampleBytes += bytes;
    return true;
  }

  /** Reserve bytes, sampling the free space first when due or when they do not fit; ENOSPC when still not. */
  async reserve(bytes: number, what: () => string): Promise<void> {
    if (this.tryReserve(bytes) === true) return;
    try {
      await this.sample();
    } catch {
      // No statfs answer (a disk's file system away): the write is not refused for it; its
      // flush reports what the disks say (DESIGN §5).
      this.reservedBytes += bytes;
      return;
    }
    if (this.tryReserve(bytes) === true) return;
    throw posix(
      'ENOSPC',
      `${what()}: it needs ${bytes} bytes on the disks, ${Math.max(0, this.roomBytes())} are free ` +
        `(${this.reservedBytes} more are reserved for buffered writes): free some space on the disks`,
    );
  }

  /** The reserved bytes were stored or dropped: the disks' free space counts them from the next sample. */
  release(bytes: number): void {
    if (bytes <= 0) return;
    assert(bytes <= this.reservedBytes, 'space: a release gives back no more than was reserved');
    this.reservedBytes -= bytes;
    this.unsampledBytes += bytes;
  }

  private fresh(): boolean {
    return (
      this.nowMs() - this.sampledAtMs < SPACE_SAMPLE_MS && this.reservedSinceSampleBytes < SPACE_SAMPLE_RESERVED_BYTES
    );
  }

  private roomBytes(): number {
    return this.availBytes - this.marginBytes - this.reservedBytes - this.unsampledBytes;
  }

  /** One statfs of the disks (shared by every writer waiting for it). */
  private sample(): Promise<void> {
    this.sampling ??= this.takeSample().finally(() => {
      this.sampling = null;
    });
    return this.sampling;
  }

  private async takeSample(): Promise<void> {
    const releasedBefore = this.unsampledBytes; // stored before this statfs: it counts them
    const s = await this.store.rawStatfs!();
    this.samples++;
    this.unsampledBytes -= releasedBefore;
    this.availBytes = s.availBytes;
    this.marginBytes = Math.min(SPACE_MARGIN_BYTES_MAX, Math.floor(s.totalBytes * SPACE_MARGIN_FRACTION));
    this.sampledAtMs = this.nowMs();
    this.reservedSinceSampleBytes = 0;
  }
}
