// Small files (DESIGN §5 "Small files", spec §11): which writes, truncates and reads of a file go
// to a needle. A file of at most small_file_max bytes is one needle; its inode holds the Slice.
// Every change writes a whole new needle (the old one turns dead: the container's dead_bytes);
// growing past small_file_max moves the file to chunks of its own, and the slice is dropped in the
// same transaction that commits those chunks (data first). A file that shrinks below the threshold
// stays in its chunks. Called by store/file-io.ts under the file's lock.
import type { CommitTimes } from '../meta/commit-times';
import { Slice } from '../../src/slice';
import { needleSpanBytes } from '../../src/needle';
import { ChunkEnv } from '../chunks/chunk-env';
import { FileLayout } from '../chunks/chunk-ref';
import { Containers } from '../meta/containers';
import { NeedleAppender, ContainerHost, readNeedle } from './needle-io';
import type { SliceRows } from '../meta/slice-rows';

export interface SmallFileInfo {
  fl: FileLayout;
  sizeBytes: number;
  slice: Slice | null;
}

/** What this needs of store/file-io.ts: the chunk write path, with work for its commit transaction. */
export interface SmallFilesHost extends ContainerHost {
  writeChunks(
    ino: number,
    fl: FileLayout,
    offsetBytes: number,
    data: Uint8Array,
    sizeBytes: number | null,
    alsoInCommit: () => void,
    times: CommitTimes | null,
  ): Promise<void>;
}

export class SmallFiles {
  constructor(
    private readonly env: ChunkEnv,
    private readonly host: SmallFilesHost,
    private readonly appender: NeedleAppender,
    readonly slices: SliceRows,
    private readonly containers: Containers,
    private readonly smallFileMaxBytes: number,
  ) {}

  /** The slice goes (its needle turns dead); in the caller's transaction. */
  retire(ino: number): void {
    const cur = this.slices.get(ino);
    if (cur === null) return;
    this.containers.addDead(Number(cur.containerId), needleSpanBytes(cur.lengthBytes));
    this.slices.set(ino, null);
  }

  /**
   * A deleted file's needle (its slice as just read) turns dead; its inode row goes in the same
   * transaction, so the slice is neither read again nor cleared.
   */
  retireDeleted(slice: Slice): void {
    this.containers.addDead(Number(slice.containerId), needleSpanBytes(slice.lengthBytes));
  }

  /** The file's bytes [0, size) from its needle. */
  private content(ino: number, info: SmallFileInfo): Promise<Buffer> {
    return info.slice === null ? Promise.resolve(Buffer.alloc(0)) : readNeedle(this.env, this.host, ino, info.slice);
  }

  /** Write content as the file's new needle, committed with its size (the given times, else now). */
  private async rewrite(ino: number, info: SmallFileInfo, content: Buffer, times: CommitTimes | null): Promise<void> {
    if (content.length === 0) {
      this.env.db.transaction(() => {
        this.retire(ino);
        this.env.fileRows.setSizeStamped(ino, 0, times);
      })();
      return;
    }
    await this.appender.append({
      ino,
      packClass: info.fl.layout.text,
      data: content,
      commit: (slice) => {
        this.retire(ino);
        this.slices.set(ino, slice);
        this.env.fileRows.setSizeStamped(ino, content.length, times);
      },
    });
  }

  /**
   * Handle a write if the file is (or may become) a needle; false: the chunk path does it. The
   * needle path needs the committed size to cover the write (DESIGN §5 prefix rule: a needle holds
   * exactly the file's bytes), else the file moves to chunks. times: the mtime and ctime to commit; null: now.
   */
  /**
   * Whether write() may keep the file's bytes here, the file growing to newLenBytes (false: the
   * chunk path takes them, write() returns false at once).
   */
  takes(info: SmallFileInfo, hasChunks: boolean, newLenBytes: number): boolean {
    if (this.smallFileMaxBytes === 0 || (info.slice === null && (info.sizeBytes > 0 || hasChunks))) return false;
    return info.slice !== null || newLenBytes <= this.smallFileMaxBytes;
  }

  async write(
    ino: number,
    info: SmallFileInfo,
    offsetBytes: number,
    data: Uint8Array,
    sizeBytes: number | null,
    hasChunks: boolean,
    times: CommitTimes | null = null,
  ): Promise<boolean> {
    const end = offsetBytes + data.length;
    const newLen = Math.max(info.sizeBytes, end, sizeBytes ?? 0);
    if (!this.takes(info, hasChunks, newLen)) return false;
    const prefixOk = (sizeBytes ?? end) >= Math.max(info.sizeBytes, end);
    if (newLen <= this.smallFileMaxBytes && prefixOk) {
      const content = Buffer.alloc(newLen);
      (await this.content(ino, info)).copy(content);
      content.set(data, offsetBytes);
      await this.rewrite(ino, info, content, times);
      return true;
    }
    if (info.slice === null) return false;
    await this.moveToChunks(ino, info, offsetBytes, data, sizeBytes, times);
    return true;
  }

  /** Growing past small_file_max: the old bytes with the new ones as chunks; the slice goes in their commit. */
  private async moveToChunks(
    ino: number,
    info: SmallFileInfo,
    offsetBytes: number,
    data: Uint8Array,
    sizeBytes: number | null,
    times: CommitTimes | null,
  ): Promise<void> {
    const old = await this.content(ino, info);
    const end = offsetBytes + data.length;
    if (offsetBytes <= old.length) {
      const merged = Buffer.alloc(Math.max(old.length, end));
      old.copy(merged);
      merged.set(data, offsetBytes);
      await this.host.writeChunks(ino, info.fl, 0, merged, sizeBytes ?? merged.length, () => this.retire(ino), times);
      return;
    }
    // A write past the end leaves a hole: the old bytes first, the slice dropped with them.
    await this.host.writeChunks(ino, info.fl, 0, old, old.length, () => this.retire(ino), times);
    await this.host.writeChunks(ino, info.fl, offsetBytes, data, sizeBytes, () => undefined, times);
  }

  /** Handle a truncate of a needle file; false: the chunk path does it (after moving the bytes when it grows past the threshold). */
  async truncate(ino: number, info: SmallFileInfo, sizeBytes: number): Promise<boolean> {
    if (info.slice === null) return false;
    const old = await this.content(ino, info);
    if (sizeBytes <= this.smallFileMaxBytes) {
      const content = Buffer.alloc(sizeBytes);
      old.copy(content, 0, 0, Math.min(old.length, sizeBytes));
      await this.rewrite(ino, info, content, null);
      return true;
    }
    await this.host.writeChunks(ino, info.fl, 0, old, old.length, () => this.retire(ino), null);
    return false;
  }

  /** The needle's data; if a seal or compaction repointed the slice meanwhile (its old container may be gone), the new one's. */
  private async readCurrent(ino: number, slice: Slice): Promise<Buffer> {
    try {
      return await readNeedle(this.env, this.host, ino, slice);
    } catch (err) {
      const now = this.slices.get(ino);
      if (
        now === null ||
        (now.containerId === slice.containerId && now.offsetBytes === slice.offsetBytes && now.cookie === slice.cookie)
      )
        throw err;
      return readNeedle(this.env, this.host, ino, now);
    }
  }

  /** File bytes [offsetBytes, endBytes) of a needle file into target[targetOffset..]; past the needle: zeros. */
  async readInto(
    ino: number,
    slice: Slice,
    offsetBytes: number,
    endBytes: number,
    target: Buffer,
    targetOffset: number,
  ): Promise<void> {
    const data = await this.readCurrent(ino, slice);
    const n = Math.max(0, Math.min(endBytes, data.length) - offsetBytes);
    if (n > 0) data.copy(target, targetOffset, offsetBytes, offsetBytes + n);
    target.fill(0, targetOffset + n, targetOffset + (endBytes - offsetBytes));
  }
}
