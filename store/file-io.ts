// File byte ranges -> chunks (DESIGN §2 "Chunk I/O"). Holes (no live chunk, or past a
// chunk's logical length) read as zeros. Writes follow DESIGN §5: a new or fully
// overwritten chunk, and every EC partial write, is a whole-shard write of a fresh
// version (copy-on-write) committed in the chunk map after the shards are durable,
// then the old version is deleted; a Replica partial write inside the chunk is the
// §8.2 in-place read-modify-write (store/chunks/replica-chunk.ts). The write path itself is
// store/chunks/chunk-writer.ts; this file owns the inode lock, the caches, reads and truncate.
import { ChunkEnv } from './chunks/chunk-env';
import type { CommitTimes } from './meta/commit-times';
import { ChunkRow, StoredForm } from './meta/chunk-map';
import { ChunkRef, FileLayout } from './chunks/chunk-ref';
import { WrittenChunk, readChunk, slicesStoredAsTheyLie, writeWholeChunk } from './chunks/chunk-io';
import { Payload, joinPayload, payloadLength } from './chunks/shard-encode';
import { Maybe, andThen, noThrow } from './chunks/maybe-async';
import { FsError } from './fs-error';
import { KeyedMutex } from './chunks/keyed-mutex';
import { parseLayout, shardCount } from '../src/layout';
import { nowNs } from './meta/meta';
import { PlacementDisk, placeChunk } from './chunks/placement';
import { validRange } from './chunks/bounded';
import { readRangeInto } from './chunks/range-read';
import { ReadGrantInfo, readGrantOf } from './chunks/read-grant';
import { ChunkWriter } from './chunks/chunk-writer';
import { PastSize } from './meta/past-size';
import { repoint, retireChunk } from './chunks/live-version';
import { LRUCache } from 'lru-cache';
import { randomU64 } from './random-ids';
import { Slice } from '../src/slice';
import { Containers, ContainerRow } from './meta/containers';
import { openLayoutOf } from './small/pack-class';
import { NeedleAppender } from './small/needle-io';
import type { SliceRows } from './meta/slice-rows';
import { dataOpsOf } from './meta/engine-open';
import { SmallFiles, SmallFilesHost } from './small/small-files';
import { DeleteBatcher } from './file-deletes';

export const FILE_BYTES_MAX = 2 ** 50;

interface FileInfo {
  fl: FileLayout;
  sizeBytes: number;
  nlink: number;
  slice: Slice | null;
}

/** Small-file packing (DESIGN §5 "Small files"): the mkfs threshold and the container parameters. */
export interface PackingOptions {
  smallFileMaxBytes: number;
  containerCapacityBytes: number;
  /** Chunk parameters of new container inodes (the store defaults). */
  containerChunk: {
    chunkSizeBytes: number;
    bitrotBlockBytes: number;
    ecBlockSizeBytes: number;
    clusterMapEpoch: number;
  };
}
/**
 * Layout and size of recently used files, so a FUSE read costs no SQLite statement for them
 * (see chunk-map.ts CACHED_INODES_MAX for the measured cost). Filled only outside transactions;
 * dropped by every write, truncate and delete here (under the inode lock) and by forget()
 * when the layout xattr changes. nlink is never served from the cache (deleteFile re-reads it).
 */
const CACHED_FILES_MAX = 4096;
/** Chunk placements (6 xxh3 hashes and a sort each): ~15% of a cached random 4 KiB read before caching. */
const CACHED_PLACEMENTS_MAX = 16_384;

export class FileIo implements SmallFilesHost {
  private readonly locks = new KeyedMutex();
  /** Inodes whose lock the applier holds (store/chunks/applier.ts). */
  private readonly applying = new Map<number, number>();
  private readonly infos = new LRUCache<number, FileInfo>({ max: CACHED_FILES_MAX });
  private readonly placements = new LRUCache<string, readonly number[]>({ max: CACHED_PLACEMENTS_MAX });
  private readonly writer: ChunkWriter;
  private readonly pastSize: PastSize;
  readonly containers: Containers;
  readonly slices: SliceRows;
  readonly appender: NeedleAppender;
  private readonly small: SmallFiles;
  /** Where transactions cost round trips, deleted files' rows go in batches (store/file-deletes.ts); else each at once. */
  private readonly deletes: DeleteBatcher | null;

  constructor(
    private readonly env: ChunkEnv,
    private readonly disks: PlacementDisk[],
    private readonly packing: PackingOptions,
  ) {
    const db = env.db;
    this.writer = new ChunkWriter(env, this);
    this.pastSize = new PastSize(env.db);
    this.containers = dataOpsOf(db).containers();
    this.slices = dataOpsOf(db).sliceRows();
    this.appender = new NeedleAppender(env, this, this.containers, () => packing.containerCapacityBytes);
    this.small = new SmallFiles(env, this, this.appender, this.slices, this.containers, packing.smallFileMaxBytes);
    this.deletes = !db.caps.transactionsCostRoundTrips
      ? null
      : new DeleteBatcher(this.locks, { one: (ino) => this.deleteOne(ino), many: (inos) => this.deleteMany(inos) });
  }

  /** Every cached file row (a seal or compaction repointed many slices at once). */
  forgetAll(): void {
    this.infos.clear();
  }

  /** ContainerHost: the layout of an (internal) file. */
  layoutOf(ino: number): FileLayout {
    return this.fileInfo(ino).fl;
  }

  /** ContainerHost: chunk c's live ref, or null. */
  chunkRef(ino: number, chunkIndex: number): ChunkRef | null {
    return this.liveRef(ino, this.fileInfo(ino).fl, this.env.map.get(ino, chunkIndex));
  }

  /** Chunk c's live ref, or null for a hole or an inode that is gone or not a file (read-only log loading). */
  chunkRefIfFile(ino: number, chunkIndex: number): ChunkRef | null {
    try {
      return this.chunkRef(ino, chunkIndex);
    } catch (err) {
      if (err instanceof FsError) return null;
      throw err;
    }
  }

  /** ContainerHost: a container write through the chunk write path, under the container's lock. */
  async writeInternal(
    ino: number,
    pieces: Array<{ c: number; offIn: number; bytes: Uint8Array }>,
    durable = true,
    withIntents?: () => void,
  ): Promise<boolean> {
    await this.env.backlog.room(); // never under an inode lock: the applier needs those locks to make room
    return this.locks.run(ino, async () => {
      try {
        return await this.writer.writePieces(
          ino,
          this.fileInfo(ino).fl,
          pieces,
          null,
          undefined,
          null,
          durable,
          withIntents,
          true,
        );
      } finally {
        this.forget(ino);
      }
    });
  }

  /**
   * ContainerHost: a container inode (spec §11.1: its own file_id; no directory entry, so no listing
   * shows it) and its row; call in a transaction. Open: Replica with the target's fault tolerance.
   */
  createContainer(
    packClass: string,
    state: 'open' | 'sealing',
    sealedFrom: number | null,
    usedBytes: number,
    deadBytes: number,
  ): ContainerRow {
    const layout = state === 'open' ? openLayoutOf(packClass) : packClass;
    const c = this.packing.containerChunk;
    const seed = randomU64();
    const t = nowNs();
    const id = this.env.fileRows.insertInternal({
      layoutText: layout,
      chunkSizeBytes: c.chunkSizeBytes,
      bitrotBlockBytes: c.bitrotBlockBytes,
      ecBlockSizeBytes: c.ecBlockSizeBytes,
      placementSeed: seed,
      clusterMapEpoch: c.clusterMapEpoch,
      timeNs: t,
    });
    const row: ContainerRow = {
      id,
      packClass,
      state,
      usedBytes,
      deadBytes,
      capacityBytes: this.packing.containerCapacityBytes,
      sealedFrom,
    };
    this.containers.add(row);
    return row;
  }

  /** The rows of an internal file that goes (a replaced container): its chunks to the reclaim queue. In a transaction. */
  dropInternal(ino: number): void {
    const fl = this.loadInfo(ino).fl;
    for (const r of this.env.map.liveStored(ino)) this.env.reclaim.add(ino, r.chunkIndex, r.version, fl);
    this.env.map.dropInode(ino);
    this.env.map.dropIntentsOf(ino);
    this.env.backlog.dropInode(ino); // in the caller's transaction: the container goes with it
    this.env.fileRows.dropInternal(ino);
    this.forget(ino);
  }

  /** SmallFilesHost: data at offsetBytes through the chunk writer; alsoInCommit runs in its commit transaction. */
  async writeChunks(
    ino: number,
    fl: FileLayout,
    offsetBytes: number,
    data: Uint8Array,
    sizeBytes: number | null,
    alsoInCommit: () => void,
    times: CommitTimes | null,
  ): Promise<void> {
    if (data.length === 0) {
      this.env.db.transaction(alsoInCommit)();
      return;
    }
    await this.writer.writePieces(
      ino,
      fl,
      this.piecesOf(fl.chunkSizeBytes, offsetBytes, data),
      sizeBytes,
      alsoInCommit,
      times,
    );
  }

  private piecesOf(
    cs: number,
    offsetBytes: number,
    data: Uint8Array,
  ): Array<{ c: number; offIn: number; bytes: Uint8Array }> {
    const pieces: Array<{ c: number; offIn: number; bytes: Uint8Array }> = [];
    for (let at = offsetBytes; at < offsetBytes + data.length; ) {
      const c = Math.floor(at / cs);
      const len = Math.min(cs - (at - c * cs), offsetBytes + data.length - at);
      pieces.push({ c, offIn: at - c * cs, bytes: data.subarray(at - offsetBytes, at - offsetBytes + len) });
      at += len;
    }
    return pieces;
  }

  /** piecesOf for parts laid back to back: each chunk's piece is the slices of the parts it holds (views, no copy). */
  private piecesOfParts(
    cs: number,
    offsetBytes: number,
    parts: readonly Uint8Array[],
  ): Array<{ c: number; offIn: number; bytes: Uint8Array[] }> {
    const pieces: Array<{ c: number; offIn: number; bytes: Uint8Array[] }> = [];
    let at = offsetBytes;
    for (const part of parts) {
      for (let from = 0; from < part.length; ) {
        const c = Math.floor(at / cs);
        const len = Math.min(cs - (at - c * cs), part.length - from);
        const last = pieces[pieces.length - 1];
        const slice = part.subarray(from, from + len);
        if (last !== undefined && last.c === c) last.bytes.push(slice);
        else pieces.push({ c, offIn: at - c * cs, bytes: [slice] });
        from += len;
        at += len;
      }
    }
    return pieces;
  }

  /**
   * Before a commit that changes ino's chunk rows or size outside a transaction group (truncate,
   * punch, delete): the group holding its rows commits first (DESIGN §5), so no later group commits
   * rows or a size over what this one changed.
   */
  async settle(ino: number): Promise<void> {
    if (this.env.groups.holds(ino)) await this.env.groups.close();
  }

  /** Another part of the store changed this inode's layout or row: drop what is cached. */
  forget(ino: number): void {
    this.infos.delete(ino);
  }

  /** The inode Layout (authoritative, spec §1) and size of a regular file. */
  private fileInfo(ino: number): FileInfo {
    const cacheable = !this.env.db.inTransaction;
    const hit = cacheable ? this.infos.get(ino) : undefined;
    if (hit !== undefined) return { ...hit };
    const info = this.loadInfo(ino);
    if (cacheable) this.infos.set(ino, info);
    return { ...info };
  }

  private loadInfo(ino: number): FileInfo {
    const r = this.env.fileRows.get(ino);
    if (r === undefined) throw new FsError('ENOENT', `no inode ${ino}`);
    if (r.type === 'dir') throw new FsError('EISDIR', `inode ${ino} is a directory`);
    if (r.type !== 'file') throw new FsError('EINVAL', `inode ${ino} is not a regular file`);
    const fl: FileLayout = {
      layout: parseLayout(r.layoutText),
      chunkSizeBytes: r.chunkSizeBytes,
      bitrotBlockBytes: r.bitrotBlockBytes,
      ecBlockSizeBytes: r.ecBlockSizeBytes,
      placementSeed: r.placementSeed,
      clusterMapEpoch: r.clusterMapEpoch,
    };
    // A transaction group's size shows at once (DESIGN §5 one view).
    const sizeBytes = Math.max(r.sizeBytes, this.env.groups.pendingSize(ino) ?? 0);
    return { fl, sizeBytes, nlink: r.nlink, slice: r.slice };
  }

  ref(
    ino: number,
    fl: FileLayout,
    chunkIndex: number,
    version: bigint,
    logicalLenBytes: number,
    stored: StoredForm | null = null,
  ): ChunkRef {
    const diskIds = this.placement(fl.placementSeed, fl.clusterMapEpoch, chunkIndex, shardCount(fl.layout));
    return { ino, fileId: BigInt(ino), chunkIndex, version, logicalLenBytes, stored, fl, diskIds };
  }

  /**
   * Placement is a pure function of (seed, epoch, chunk, shard count) over this store's disks: cached
   * (frozen). Public for the reclaimer, which deletes versions of inodes that may be gone.
   */
  placement(seed: bigint, epoch: number, chunkIndex: number, count: number): readonly number[] {
    const key = `${seed}/${epoch}/${chunkIndex}/${count}`;
    let diskIds = this.placements.get(key);
    if (diskIds === undefined) {
      diskIds = Object.freeze(placeChunk(this.disks, seed, epoch, BigInt(chunkIndex), count));
      this.placements.set(key, diskIds);
    }
    return diskIds;
  }

  /** A live chunk's ref, or null for a hole. */
  liveRef(ino: number, fl: FileLayout, row: ChunkRow | null): ChunkRef | null {
    if (row === null || row.version === 0n) return null;
    return this.ref(ino, fl, row.chunkIndex, row.version, row.logicalLenBytes, row.stored);
  }

  /** ApplierHost: withChunk for the applier, which lets readers through (readInto). */
  async withChunkApplying<T>(ino: number, c: number, fn: (ref: ChunkRef | null) => Promise<T>): Promise<T> {
    // Counted from the moment it queues: a reader that finds only the applier there goes ahead.
    this.applying.set(ino, (this.applying.get(ino) ?? 0) + 1);
    try {
      return await this.withChunk(ino, c, fn);
    } finally {
      const n = this.applying.get(ino)! - 1;
      if (n === 0) this.applying.delete(ino);
      else this.applying.set(ino, n);
    }
  }

  /**
   * Run fn under the inode's lock with the live ref of chunk c (null: hole, or the file is gone).
   * ready: awaited under the lock before the ref is read (background passes wait there for the
   * replies to answered operations, DESIGN §9 "PostgreSQL round trips").
   */
  withChunk<T>(
    ino: number,
    c: number,
    fn: (ref: ChunkRef | null) => Promise<T>,
    ready?: () => Promise<void>,
  ): Promise<T> {
    return this.locks.run(ino, async () => {
      if (ready !== undefined) await ready();
      let fl: FileLayout;
      try {
        fl = this.fileInfo(ino).fl;
      } catch (err) {
        if (err instanceof FsError) return fn(null);
        throw err;
      }
      return fn(this.liveRef(ino, fl, this.env.map.get(ino, c)));
    });
  }

  /**
   * A read grant of the chunk holding offsetBytes (store/chunks/read-grant.ts), or null: only while
   * nothing holds or waits for the inode's lock (a writer, truncate or applier may be changing it),
   * for a file with chunks of its own (a needle is read through its container).
   */
  readGrant(ino: number, offsetBytes: number): ReadGrantInfo | null {
    this.env.decoded.grantsAsked = true;
    if (this.env.db.inTransaction || this.locks.holders(ino) > 0 || this.applying.has(ino)) return null;
    let info: FileInfo;
    try {
      info = this.fileInfo(ino);
    } catch (err) {
      if (err instanceof FsError) return null;
      throw err;
    }
    if (info.slice !== null) return null;
    const c = Math.floor(offsetBytes / info.fl.chunkSizeBytes);
    const ref = this.liveRef(ino, info.fl, this.env.map.get(ino, c));
    return ref === null ? null : readGrantOf(this.env, ref);
  }

  /** readInto into a fresh buffer of the bytes there are (short at EOF). */
  async read(ino: number, offsetBytes: number, lengthBytes: number): Promise<Buffer> {
    if (!validRange(offsetBytes, lengthBytes))
      throw new FsError('EINVAL', `read: bad range [${offsetBytes}, +${lengthBytes})`);
    const out = Buffer.allocUnsafe(lengthBytes);
    const n = await this.readInto(ino, offsetBytes, out);
    return n === lengthBytes ? out : out.subarray(0, n);
  }

  /**
   * The read pipeline's store end (DESIGN §6): file bytes from offsetBytes into target[targetOffset..]
   * (to its end); returns the bytes written, short only at EOF; holes read as zeros. Every byte is
   * verified (spec §9) and a failed shard is served around where the failure is seen (replica
   * failover, EC rebuild), counted and queued for heal once. A number at once when the inode is
   * not busy and every shard read it needs is cached (no promise, no lock entry); otherwise a
   * promise, under the inode lock. Never throws: errors reject.
   * sizeBytes: read up to this size instead of the committed one: the write-back buffer's size,
   * which also covers chunks it stored past the committed size (DESIGN §5 prefix rule).
   */
  readInto(ino: number, offsetBytes: number, target: Buffer, targetOffset = 0, sizeBytes?: number): Maybe<number> {
    if (!Number.isSafeInteger(targetOffset) || targetOffset < 0 || targetOffset > target.length) {
      return Promise.reject(
        new FsError('EINVAL', `readInto: target offset ${targetOffset} outside a ${target.length}-byte buffer`),
      );
    }
    const lengthBytes = target.length - targetOffset;
    if (!validRange(offsetBytes, lengthBytes))
      return Promise.reject(new FsError('EINVAL', `read: bad range [${offsetBytes}, +${lengthBytes})`));
    if (sizeBytes !== undefined && !validRange(sizeBytes, 0))
      return Promise.reject(new FsError('EINVAL', `read: bad size ${sizeBytes}`));
    const locked = (): Maybe<number> => this.readLocked(ino, offsetBytes, lengthBytes, target, targetOffset, sizeBytes);
    return noThrow(() => {
      if (this.env.db.inTransaction) return this.locks.run(ino, async () => locked());
      // The applier does not hold readers back (the blocks it patches are read from the backlog),
      // unless a writer holds the lock or waits: a read issued after a write never overtakes it.
      if (this.applying.get(ino) === this.locks.holders(ino) && this.applying.has(ino)) return locked();
      return this.locks.runIfFree(ino, locked) ?? this.locks.run(ino, async () => locked());
    });
  }

  /** readInto's work, under the inode lock (or with the lock free and no promise taken). */
  private readLocked(
    ino: number,
    offsetBytes: number,
    lengthBytes: number,
    target: Buffer,
    targetOffset: number,
    sizeBytes?: number,
  ): Maybe<number> {
    const info = this.fileInfo(ino);
    const end = Math.min(offsetBytes + lengthBytes, sizeBytes ?? info.sizeBytes);
    if (offsetBytes >= end) return 0;
    const n = end - offsetBytes;
    if (info.slice !== null)
      return this.small.readInto(ino, info.slice, offsetBytes, end, target, targetOffset).then(() => n); // a needle (spec §11.4)
    const { fl } = info;
    return andThen(
      readRangeInto(
        this.env,
        fl.chunkSizeBytes,
        offsetBytes,
        end,
        (c) => this.liveRef(ino, fl, this.env.map.get(ino, c)),
        target,
        targetOffset,
      ),
      () => n,
    );
  }

  /**
   * Durable when it resolves: in shards, or as intents in the log (DESIGN §5); on a live mount whole
   * chunks at the close of their transaction group (store/chunks/tx-group.ts). sizeBytes: the size to commit with it, for a caller that stores
   * out of order (DESIGN §5 prefix rule: its first byte still held only in memory); default: the data's end.
   * times: the mtime and ctime to commit with it (what the mount showed while the bytes were buffered); default: now.
   */
  write(ino: number, offsetBytes: number, data: Uint8Array, sizeBytes?: number, times?: CommitTimes): Promise<void> {
    return this.writePayload(ino, offsetBytes, data, sizeBytes, times);
  }

  /**
   * write() of parts laid back to back, not joined (DESIGN §5 "Write-back pieces"): each chunk's
   * slices are hashed and written as they lie. Null, with nothing done, when this file's chunks
   * cannot take them so (a layout that encodes one buffer, slices not of whole bitrot blocks, a
   * file that may still be a small file's slice): the caller joins them and calls write().
   */
  writeParts(
    ino: number,
    offsetBytes: number,
    parts: readonly Uint8Array[],
    sizeBytes?: number,
    times?: CommitTimes,
  ): Promise<void> | null {
    let info: FileInfo;
    try {
      info = this.fileInfo(ino);
    } catch {
      return null; // write() reports it
    }
    const hasChunks = info.slice === null && info.sizeBytes === 0 && this.env.map.live(ino).length > 0;
    const endBytes = offsetBytes + parts.reduce((n, p) => n + p.length, 0);
    if (this.small.takes(info, hasChunks, Math.max(info.sizeBytes, endBytes, sizeBytes ?? 0))) return null;
    const pieces = this.piecesOfParts(info.fl.chunkSizeBytes, offsetBytes, parts);
    if (!pieces.every((p) => slicesStoredAsTheyLie(info, p.bytes))) return null;
    return this.writePayload(ino, offsetBytes, [...parts], sizeBytes, times);
  }

  private writePayload(
    ino: number,
    offsetBytes: number,
    data: Payload,
    sizeBytes?: number,
    times?: CommitTimes,
  ): Promise<void> {
    const lengthBytes = payloadLength(data);
    if (!validRange(offsetBytes, lengthBytes))
      return Promise.reject(new FsError('EINVAL', `write: bad offset ${offsetBytes}`));
    if (offsetBytes + lengthBytes > FILE_BYTES_MAX)
      return Promise.reject(new FsError('EFBIG', 'write past the maximum file size'));
    if (sizeBytes !== undefined && (!validRange(sizeBytes, 0) || sizeBytes > FILE_BYTES_MAX))
      return Promise.reject(new FsError('EINVAL', `write: bad size ${sizeBytes}`));
    if (lengthBytes === 0) return Promise.resolve();
    // Room first, never under an inode lock (the applier needs those locks to make room); at once
    // when there is room, so a read issued after this write queues behind it.
    const locked = (): Promise<void> =>
      this.locks.run(ino, async () => {
        const info = this.fileInfo(ino);
        const { fl } = info;
        try {
          const hasChunks = info.slice === null && info.sizeBytes === 0 && this.env.map.live(ino).length > 0;
          // Parts reach here for a file the small-file path does not take (writeParts): joined if that changed.
          const newLen = Math.max(info.sizeBytes, offsetBytes + lengthBytes, sizeBytes ?? 0);
          const maySmall = !Array.isArray(data) || this.small.takes(info, hasChunks, newLen);
          const small = maySmall ? joinPayload(data) : null;
          if (
            small !== null &&
            (await this.small.write(ino, info, offsetBytes, small, sizeBytes ?? null, hasChunks, times ?? null))
          )
            return;
          await this.writer.writePieces(
            ino,
            fl,
            Array.isArray(data)
              ? this.piecesOfParts(fl.chunkSizeBytes, offsetBytes, data)
              : this.piecesOf(fl.chunkSizeBytes, offsetBytes, data),
            sizeBytes ?? null,
            undefined,
            times ?? null,
          );
        } finally {
          this.forget(ino);
        }
      });
    return this.env.backlog.hasRoom() ? locked() : this.env.backlog.room().then(locked);
  }

  truncate(ino: number, sizeBytes: number): Promise<void> {
    if (!validRange(sizeBytes, 0)) return Promise.reject(new FsError('EINVAL', `truncate: bad size ${sizeBytes}`));
    if (sizeBytes > FILE_BYTES_MAX) return Promise.reject(new FsError('EFBIG', 'truncate past the maximum file size'));
    return this.locks.run(ino, async () => {
      try {
        await this.truncateLocked(ino, sizeBytes);
      } finally {
        this.forget(ino);
      }
    });
  }

  /**
   * Every chunk byte past the new size goes, growing or shrinking: the tail chunk is rewritten
   * shorter as a fresh version, dropped chunks and the old tail only change metadata and go on the
   * reclaim queue (DESIGN §5). So bytes stored past the committed size (prefix rule) never reappear
   * inside a size set here, and a grown range reads as a hole.
   */
  private async truncateLocked(ino: number, sizeBytes: number): Promise<void> {
    await this.settle(ino);
    if (await this.small.truncate(ino, this.loadInfo(ino), sizeBytes)) return;
    await this.cutLocked(ino, sizeBytes, true);
  }

  /** Drop the chunk bytes past sizeBytes and commit that size (touch: mtime/ctime = now). */
  private async cutLocked(ino: number, sizeBytes: number, touch: boolean): Promise<void> {
    const { fl } = this.loadInfo(ino);
    const cs = fl.chunkSizeBytes;
    const lastKept = sizeBytes === 0 ? -1 : Math.floor((sizeBytes - 1) / cs);
    const dropped = this.env.map.live(ino, lastKept + 1).map((r) => this.liveRef(ino, fl, r)!);
    const tail = lastKept >= 0 ? this.liveRef(ino, fl, this.env.map.get(ino, lastKept)) : null;
    const tailLen = sizeBytes - lastKept * cs;
    const shortened =
      tail !== null && tail.logicalLenBytes > tailLen ? await this.shortenTail(ino, fl, tail, tailLen) : null;
    const t = nowNs();
    this.env.db.transaction(() => {
      // Data first: the shortened tail's shards are durable.
      if (shortened !== null)
        repoint(this.env, ino, fl, {
          chunkIndex: lastKept,
          version: shortened.version,
          logicalLenBytes: tailLen,
          failed: shortened.failed,
          stored: shortened.stored,
          old: tail,
        });
      for (const r of dropped) retireChunk(this.env, ino, r.chunkIndex, r.version, fl);
      this.env.fileRows.setSize(ino, sizeBytes, touch ? t : null);
      this.pastSize.clear(ino);
    })();
    if (shortened !== null) this.env.backlog.dropChunk(ino, lastKept);
    for (const r of dropped) this.env.backlog.dropChunk(ino, r.chunkIndex);
  }

  /**
   * Recovery (DESIGN §5 prefix rule): the files that may hold chunk bytes past their committed size
   * lose those bytes (size and times unchanged), so a later extension reads zeros there. Returns
   * how many files were trimmed; a file that cannot be trimmed now stays listed for the next open.
   */
  async trimPastSize(errors: string[]): Promise<number> {
    let trimmed = 0;
    for (const ino of this.pastSize.list()) {
      try {
        await this.locks.run(ino, async () => {
          try {
            await this.cutLocked(ino, this.loadInfo(ino).sizeBytes, false);
          } finally {
            this.forget(ino);
          }
        });
        trimmed++;
      } catch (err) {
        if (err instanceof FsError && err.code === 'ENOENT')
          this.pastSize.clear(ino); // the file is gone: nothing to trim
        else errors.push(`ino ${ino}: trimming chunk bytes past its size: ${(err as Error).message}`);
      }
    }
    return trimmed;
  }

  /** The tail chunk's first tailLen bytes as a fresh version, reserved durably first (store/chunks/chunk-writer.ts). */
  private async shortenTail(
    ino: number,
    fl: FileLayout,
    tail: ChunkRef,
    tailLen: number,
  ): Promise<WrittenChunk & { version: bigint }> {
    const content = await readChunk(this.env, tail, 0, tailLen);
    const version = this.env.db.transaction(() => {
      const v = this.env.map.allocVersion(ino, tail.chunkIndex);
      this.env.reclaim.add(ino, tail.chunkIndex, v, fl);
      return v;
    })();
    this.env.inflight.add(ino, tail.chunkIndex, version);
    try {
      await this.env.commits.flush();
      const written = await writeWholeChunk(this.env, this.ref(ino, fl, tail.chunkIndex, version, tailLen), content);
      return { version, ...written };
    } finally {
      this.env.inflight.delete(ino, tail.chunkIndex, version);
    }
  }

  /**
   * Delete an unlinked (nlink 0) file: its rows go, and its chunk versions go on the reclaim
   * queue in the same transaction (DESIGN §5: `rm -rf` never waits on shard deletion).
   */
  async deleteFile(ino: number): Promise<void> {
    await this.settle(ino); // a group's rows of a deleted file must not outlive it (its number may come back)
    this.env.groups.takeError(ino); // nor what its close could not keep: no one is left to report it to
    return this.deletes === null ? this.deleteOne(ino) : this.deletes.add(ino);
  }

  /** Run the deletions that wait for a batch (reclaim, close). */
  deletesNow(): Promise<void> {
    return this.deletes?.drain() ?? Promise.resolve();
  }

  private deleteOne(ino: number): Promise<void> {
    return this.locks.run(ino, async () => {
      this.forget(ino);
      const info = this.loadInfo(ino);
      if (info.nlink > 0) throw new FsError('EBUSY', `inode ${ino} still has ${info.nlink} links`);
      this.env.db.transaction(() => this.dropRows(ino, info))();
      this.env.backlog.dropInode(ino);
    });
  }

  /** Unlinked files' rows in one transaction (their locks free); the inodes left out (linked, gone, not files) are returned. */
  private deleteMany(inos: number[]): number[] {
    const left: number[] = [];
    const done: number[] = [];
    this.env.db.transaction(() => {
      for (const ino of inos) {
        this.forget(ino);
        let info: FileInfo;
        try {
          info = this.loadInfo(ino);
        } catch (err) {
          if (!(err instanceof FsError)) throw err;
          left.push(ino);
          continue;
        }
        if (info.nlink > 0) {
          left.push(ino);
          continue;
        }
        this.dropRows(ino, info);
        done.push(ino);
      }
    })();
    for (const ino of done) this.env.backlog.dropInode(ino);
    return left;
  }

  /** A deleted file's rows, in the caller's transaction: its chunk versions to the reclaim queue. */
  private dropRows(ino: number, info: FileInfo): void {
    for (const r of this.env.map.liveStored(ino)) this.env.reclaim.add(ino, r.chunkIndex, r.version, info.fl);
    if (info.slice !== null) this.small.retireDeleted(info.slice); // its needle turns dead (spec §11.5 Delete)
    this.env.map.dropInode(ino);
    this.env.map.dropIntentsOf(ino);
    this.pastSize.clear(ino);
    this.env.fileRows.dropFile(ino);
  }
}
