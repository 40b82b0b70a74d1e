// The part of store/Store the mount uses (store-api.md). Declared here so the adapter depends on the
// contract, not on one class; store/store.ts's Store satisfies it.
import type { Namespace } from '../store/namespace';

export interface StatfsBytes { totalBytes: number; freeBytes: number; availBytes: number }

export interface StorePort {
  readonly ns: Namespace;
  /** Verified read; short at EOF; holes read as zeros. */
  read(ino: number, offsetBytes: number, lengthBytes: number): Promise<Buffer>;
  /**
   * read() into target[targetOffset..]: the byte count (short only at EOF), at once when the data
   * is cached (no promise), else a promise; errors always reject. sizeBytes: read up to this size
   * instead of the committed one (the mount's, which covers chunks it stored past the committed size).
   */
  readInto(ino: number, offsetBytes: number, target: Buffer, targetOffset?: number, sizeBytes?: number): number | Promise<number>;
  /**
   * The shards are durable when it resolves; the metadata commit is not flushed (see sync).
   * sizeBytes: the size to commit with it, no further than the first byte still held only in memory
   * (DESIGN §5 prefix rule); default: the end of data.
   */
  write(ino: number, offsetBytes: number, data: Uint8Array, sizeBytes?: number): Promise<void>;
  /** One full commit: every metadata change so far durable (fsync, fsyncdir, syncfs; DESIGN §5). */
  sync(): Promise<void>;
  truncate(ino: number, sizeBytes: number): Promise<void>;
  /** Whole chunks in the range become holes (their space freed); resolves to the partly covered parts. */
  punchHole(ino: number, offsetBytes: number, lengthBytes: number): Promise<Array<{ offsetBytes: number; lengthBytes: number }>>;
  /** Delete the data of an nlink-0 inode (from the orphan list). */
  deleteFile(ino: number): Promise<void>;
  /** A path that names the inode now (for log lines), or null when it has no name. */
  pathOf(ino: number): string | null;
  /** Usable capacity: raw disk space divided by the default layout's overhead. */
  statfs(): Promise<StatfsBytes>;
  close(): Promise<void>;
}
