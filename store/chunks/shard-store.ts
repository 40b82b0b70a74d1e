// Shard files on disks: whole-shard write (spec §8.1), verified range read (§9)
// with the header cross-checked against the inode Layout (spec §1: a mismatch is
// corruption, never a reason to override placement), in-place block patch (§8.2
// steps 4-5) and deletion. Headers are cached by path; every rewrite through this
// class invalidates the entry.
import { randomU64 } from '../random-ids';
import type { ShardSyncs } from './tx-group';
import * as nodePath from 'node:path';
import { LRUCache } from 'lru-cache';
import { ErrorSite, FormatError, assert } from '../../src/errors';
import { HEADER_BYTES, ShardHeader, decodeHeader } from '../../src/header';
import { writeHashEntries } from '../../src/hashtable';
import { BitrotKey, BlockPosition } from '../../src/keying';
import { chunkDirRelPath, fileRelPrefix, isTempName, shardRelPathUnder, tempName } from '../../src/path';
import { HASH_ENTRY_BYTES, blockCountFor, dataStartBytes } from '../../src/region';
import { SpanPlan, shardHeaderFor, spanPlan, verifySpan, verifyShardBytes } from '../../src/shard';
import { ChunkRef, shardDataLen, shardParams, siteOf } from './chunk-ref';
import { INLINE_BYTES_MAX, Io, IoFile, errnoCode, preadIntoParallel, settledAll } from '../io/io';
import { Maybe } from './maybe-async';
import { ScratchPool } from './scratch-pool';
import { ParityPool } from './parity-pool';
import { EntriesSource, HashTableCache, entriesOf } from './hash-table-cache';
import { Payload, ShardParts, hashShardPartsAsync, payloadLength, shardPartsUnhashed } from './shard-encode';
import { AlignedHeads } from './aligned-heads';
import { directWritable } from '../../src/huge-buffer';
import { coversAll, dataRuns } from '../../src/data-runs';
import { nowNs } from '../meta/meta';
import { DiskUnavailableError, markerPath, offlineReason } from '../disk-identity';

/** Where a chunk version's shards live: all that paths need (deletion works without the inode). */
export type ShardSite = Pick<ChunkRef, 'fileId' | 'chunkIndex' | 'version' | 'diskIds'>;

/** Which disks must not be touched (store/chunks/chunk-env.ts DiskHealth). */
export interface DiskGate {
  unavailable(diskId: number): string | undefined;
  setUnavailable(diskId: number, reason: string): void;
}

const HEADER_CACHE_ENTRIES_MAX = 16_384;
/** Chunk directories made ahead of their writes at most (a group's batch makes a few dozen). */
const PREPARED_DIRS_MAX = 4096;
const FILE_PREFIXES_MAX = 16_384;
/** Header fields that must equal the inode Layout's expectation (created time may differ). */
export const CHECKED_FIELDS = [
  'formatVersion',
  'flags',
  'fileId',
  'chunkIndex',
  'version',
  'shardIndex',
  'ecK',
  'ecM',
  'ecAlgo',
  'csumAlgo',
  'bitrotBlockBytes',
  'shardDataLenBytes',
  'chunkLogicalLenBytes',
  'blockCount',
  'ecBlockSizeBytes',
  'placementSeed',
  'clusterMapEpoch',
  'chunkSizeBytes',
  'contentLenBytes',
] as const;

/** The shard header disagrees with the inode Layout / chunk map (spec §1). */
export class HeaderMismatchError extends FormatError {}

export class ShardStore {
  private readonly headers = new LRUCache<string, ShardHeader>({ max: HEADER_CACHE_ENTRIES_MAX });
  private readonly tables = new HashTableCache();
  /** fileRelPrefix per file: its xxh3 fan-out and hex were ~4 us of every FUSE read (a profile of the mount). */
  private readonly filePrefixes = new LRUCache<bigint, string>({ max: FILE_PREFIXES_MAX });
  /** Version directories whose own entry is known durable (their parent was fsynced after creation). */
  private readonly durableDirs = new LRUCache<string, true>({ max: HEADER_CACHE_ENTRIES_MAX });
  /** Scratch for readVerifiedWith (bounded in count and size). */
  readonly scratch = new ScratchPool();
  /** Parity shards of whole-chunk EC writes (bounded, kept for reuse: store/chunks/parity-pool.ts). */
  readonly parity = new ParityPool();

  /** Told whenever a shard's cached header or table goes (a patch, rewrite, delete, damage, failed read): read grants end. */
  onChange: () => void = () => undefined;

  /** Disk roots as prefixes of shard paths: absolute, normalized, no trailing slash (path() joins with one). */
  private readonly pathRoots = new Map<number, string>();

  /**
   * Called right before every shard file is written or removed: throws when this opener may not
   * change shards (it lost the store's lease, DESIGN §9 "Lease and fencing"). Synchronous and cheap.
   */
  writeGate: () => void = () => undefined;

  /** Whole-shard writes that went past the page cache (status, tests). */
  directCount = 0;
  /** Disks whose file system refused O_DIRECT. */
  private readonly noDirect = new Set<number>();
  private readonly heads = new AlignedHeads();
  /** The identity-marker check running per disk (checkMarker). */
  private readonly markerChecks = new Map<number, Promise<void>>();
  /**
   * Chunk directories made ahead of their shard writes (prepareDirs) and not yet written into: the
   * write skips its marker check and mkdir. Bounded: a directory dropped from it is made again by its write.
   */
  private readonly preparedDirs = new LRUCache<string, true>({ max: PREPARED_DIRS_MAX });
  /**
   * Version directories this store made or is making (makeChunkDir): a batch's chunk directories of
   * one new version wait for ONE mkdir of it, instead of each failing on it first (ENOENT, then the
   * version directory made again: EEXIST and a stat). Dropped when deleteChunk may have removed it.
   */
  private readonly versionDirs = new LRUCache<string, Promise<void>>({ max: PREPARED_DIRS_MAX });

  constructor(
    readonly io: Io,
    readonly key: BitrotKey,
    private readonly diskRoots: ReadonlyMap<number, string>,
    private readonly gate: DiskGate,
  ) {
    for (const [id, root] of diskRoots) this.pathRoots.set(id, nodePath.resolve(root).replace(/\/$/, ''));
  }

  diskRoot(diskId: number): string {
    const root = this.diskRoots.get(diskId);
    assert(root !== undefined, `unknown disk ${diskId}`);
    return root;
  }

  path(ref: ShardSite, shardIndex: number): string {
    let prefix = this.filePrefixes.get(ref.fileId);
    if (prefix === undefined) {
      prefix = fileRelPrefix(ref.fileId);
      this.filePrefixes.set(ref.fileId, prefix);
    }
    const root = this.pathRoots.get(ref.diskIds[shardIndex]);
    assert(root !== undefined, `unknown disk ${ref.diskIds[shardIndex]}`);
    // The roots are normalized (constructor) and the relative path has no dots: nodePath.join's result.
    return `${root}/${shardRelPathUnder(prefix, ref.version, BigInt(ref.chunkIndex), shardIndex)}`;
  }

  /** The shard's path, unless its disk is offline by identity (then DiskUnavailableError, nothing touched). */
  private usablePath(ref: ShardSite, shardIndex: number): string {
    const diskId = ref.diskIds[shardIndex];
    const reason = this.gate.unavailable(diskId);
    if (reason !== undefined) throw new DiskUnavailableError(diskId, reason);
    return this.path(ref, shardIndex);
  }

  /**
   * Before creating directories on a disk: its identity marker must still be there, so
   * a device unmounted while the store is open is not refilled on the mount point. Shard writes
   * that start while a check of their disk runs share it (it ends after they asked, before their
   * mkdir): a batch of 8 chunks asks each disk once, not once per shard (DESIGN §4).
   */
  private checkMarker(diskId: number): Promise<void> {
    const running = this.markerChecks.get(diskId);
    if (running !== undefined) return running;
    const check = this.checkMarkerNow(diskId).finally(() => this.markerChecks.delete(diskId));
    this.markerChecks.set(diskId, check);
    return check;
  }

  private async checkMarkerNow(diskId: number): Promise<void> {
    const root = this.diskRoot(diskId);
    if (await this.io.exists(markerPath(root))) return;
    const reason = offlineReason(
      diskId,
      root,
      `identity marker ${markerPath(root)} vanished while the store was open (device unmounted?); nothing is written there`,
    );
    this.gate.setUnavailable(diskId, reason);
    throw new DiskUnavailableError(diskId, reason);
  }

  /**
   * The chunk directories of a version about to be written, one per shard: each disk's marker
   * checked, then the directory made, so that the shard writes start with their open (DESIGN §5:
   * a group's batch makes them while its reservation is flushed; a round trip of the mount's thread
   * costs milliseconds on a loaded machine, and each batch waited for two before its first byte).
   * Only directories: no shard file is made before the reservation is durable. Never rejects: a
   * directory not made here is made, or fails, in its shard's write.
   */
  async prepareDirs(site: ShardSite): Promise<void> {
    await Promise.all(
      site.diskIds.map(async (diskId, i) => {
        try {
          const chunkDir = nodePath.dirname(this.usablePath(site, i));
          await this.checkMarker(diskId);
          this.writeGate();
          await this.makeChunkDir(chunkDir);
          this.preparedDirs.set(chunkDir, true);
        } catch {
          // the shard's write checks and makes it again, and reports what fails
        }
      }),
    );
  }

  /**
   * A shard's chunk directory (spec §7: one per chunk version and disk), its version directory made
   * first by one mkdir that every chunk of the version on that disk waits for (DESIGN §5 "Whole-chunk
   * directories"). A version directory removed since (reclaim, or from outside) is made again by the
   * chunk directory's own mkdir, which makes missing parents.
   */
  private async makeChunkDir(chunkDir: string): Promise<void> {
    const versionDir = nodePath.dirname(chunkDir);
    let made = this.versionDirs.get(versionDir);
    if (made === undefined) {
      const making = this.io.mkdir(versionDir);
      made = making;
      this.versionDirs.set(versionDir, making);
      making.catch(() => {
        if (this.versionDirs.get(versionDir) === making) this.versionDirs.delete(versionDir);
      });
    }
    await made;
    await this.io.mkdir(chunkDir);
  }

  /**
   * Spec §8.1: tmp, fsync, rename, fsync dir (and the new directories' parents). With syncs (a
   * transaction group, DESIGN §5) nothing is flushed here: the file and directories to flush are
   * handed to the group, which flushes them all before its commit names the shard.
   */
  async writeShard(ref: ChunkRef, shardIndex: number, payload: Payload, syncs?: ShardSyncs): Promise<void> {
    const length = payloadLength(payload);
    assert(length === shardDataLen(ref), 'whole-shard write: payload length is shard_data_len');
    const finalPath = this.usablePath(ref, shardIndex);
    const chunkDir = nodePath.dirname(finalPath);
    const versionDir = nodePath.dirname(chunkDir);
    // A directory prepareDirs made (its disk's marker checked first) is written into at once.
    const prepared = this.preparedDirs.delete(chunkDir);
    if (!prepared) await this.checkMarker(ref.diskIds[shardIndex]);
    const params = shardParams(ref, shardIndex, nowNs());
    const parts = shardPartsUnhashed(params, payload);
    // Hashed once its temp file is open, not here: a batch's shard writes all start before the
    // first open completes, so hashing here ran every shard's hash (20-40 ms for 8 chunks of
    // replica:3) before the first byte went to a disk; after the open, each shard's write is
    // submitted while the next one is hashed (DESIGN §5 "Write-back pieces"). On the libuv pool,
    // not the mount's thread (DESIGN §5 "Shard hashes off the mount's thread").
    let hashed: Promise<void> | undefined;
    const hash = (): Promise<void> => (hashed ??= hashShardPartsAsync(parts, params, payload, this.key));
    if (!prepared) await this.makeChunkDir(chunkDir);
    const tmp = tempName(finalPath, randomU64());
    this.writeGate();
    const slices = Array.isArray(payload) ? payload : [payload];
    const writes = shardWrites(parts, slices);
    let f: IoFile;
    try {
      f = await this.writeTemp(tmp, ref.diskIds[shardIndex], parts, hash, writes, syncs === undefined);
    } catch (err) {
      // The prepared directory went meanwhile (removed from outside): checked and made again, once.
      if (!prepared || errnoCode(err) !== 'ENOENT') throw err;
      await this.checkMarker(ref.diskIds[shardIndex]);
      await this.io.mkdir(chunkDir);
      f = await this.writeTemp(tmp, ref.diskIds[shardIndex], parts, hash, writes, syncs === undefined);
    }
    this.forgetPath(finalPath);
    // Written (and flushed, without a group): the descriptor is closed beside the rename, not before
    // it, one round trip of the mount's thread less at the end of every batch (DESIGN §5).
    const [closed, renamed] = await Promise.allSettled([f.close(), this.io.rename(tmp, finalPath)]);
    if (renamed.status === 'rejected') throw renamed.reason;
    if (closed.status === 'rejected') throw closed.reason;
    // The rename, the chunk dir entry and the version dir entry must all be durable;
    // a version dir already made durable (chunks of one version share it) needs no parent fsync.
    const knownDurable = this.durableDirs.has(versionDir);
    if (syncs !== undefined) {
      syncs.file(finalPath);
      syncs.dir(chunkDir);
      syncs.dir(versionDir);
      if (!knownDurable) {
        syncs.dir(nodePath.dirname(versionDir));
        syncs.afterDurable(() => this.durableDirs.set(versionDir, true));
      }
      return;
    }
    const dirSyncs = [this.io.fsyncDir(chunkDir), this.io.fsyncDir(versionDir)];
    if (!knownDurable) dirSyncs.push(this.io.fsyncDir(nodePath.dirname(versionDir)));
    await Promise.all(dirSyncs);
    if (!knownDurable) this.durableDirs.set(versionDir, true);
  }

  /**
   * Spec §8.1 steps 2-3: past the page cache when it can, else through it. Resolves to the temp
   * file still open (the caller closes it); on failure it is closed. hash: fills parts' hash table
   * (called once the file is open, before the head is written).
   */
  private async writeTemp(
    tmp: string,
    diskId: number,
    parts: ShardParts,
    hash: () => Promise<void>,
    writes: ShardWrites,
    flush: boolean,
  ): Promise<IoFile> {
    return (
      (await this.writeDirect(tmp, diskId, parts, hash, writes, flush)) ??
      this.writeBuffered(tmp, parts, hash, writes, flush)
    );
  }

  /** Spec §8.1 steps 2-3 through the page cache; runs of zero pages stay holes (DESIGN §5 "Sparse shard writes"). */
  private async writeBuffered(
    tmp: string,
    parts: ShardParts,
    hash: () => Promise<void>,
    writes: ShardWrites,
    flush: boolean,
  ): Promise<IoFile> {
    const f = await this.io.open(tmp, 'create-exclusive');
    try {
      await hash();
      await f.pwrite(parts.head, 0);
      for (const w of writes.runs) await f.pwrite(w.bytes, w.atBytes);
      if (parts.padBytes > 0) await f.pwrite(Buffer.alloc(parts.padBytes), writes.endBytes);
      if (flush) await f.fdatasync(false); // the size is data too for fdatasync; the pool keeps shards concurrent
      return f;
    } catch (err) {
      await f.close();
      throw err;
    }
  }

  /**
   * Spec §8.1 steps 2-3 past the page cache (DESIGN §5 "Direct shard writes"): the head from an
   * aligned slot and the payload as it lies, in one writev, when every piece is page-aligned and the
   * disk takes O_DIRECT; the file still open. Null: nothing is left at tmp, write it through the
   * page cache instead.
   */
  private async writeDirect(
    tmp: string,
    diskId: number,
    parts: ShardParts,
    hash: () => Promise<void>,
    writes: ShardWrites,
    flush: boolean,
  ): Promise<IoFile | null> {
    if (this.noDirect.has(diskId) || parts.padBytes > 0) return null;
    if (!writes.runs.every((w) => directWritable(w.bytes))) return null;
    const head = this.heads.take(parts.head.length);
    if (head === null) return null;
    try {
      const f = await this.io.open(tmp, 'create-direct');
      try {
        await hash();
        parts.head.copy(head);
        for (const c of directCalls(head, writes)) await writevAt(f, c.bytes, c.atBytes);
        if (flush) await f.fdatasync(false); // the size and the extents' metadata
      } catch (err) {
        await f.close();
        throw err;
      }
      this.directCount++;
      return f;
    } catch (err) {
      if (errnoCode(err) !== 'EINVAL') throw err;
      // The disk's file system refuses O_DIRECT (tmpfs) or this memory: the page cache from now on.
      this.noDirect.add(diskId);
      await this.io.unlink(tmp).catch(() => undefined);
      return null;
    } finally {
      this.heads.give(head);
    }
  }

  /** The header this shard must carry, from the inode Layout and chunk map. */
  expectedHeader(ref: ChunkRef, shardIndex: number): ShardHeader {
    return shardHeaderFor(shardParams(ref, shardIndex, 0n), shardDataLen(ref));
  }

  private crossCheck(ref: ChunkRef, shardIndex: number, h: ShardHeader, path: string): void {
    const want = this.expectedHeader(ref, shardIndex);
    for (const f of CHECKED_FIELDS) {
      if (h[f] !== want[f]) {
        throw new HeaderMismatchError(f, `header has ${String(h[f])}, inode Layout expects ${String(want[f])}`, {
          ...siteOf(ref, shardIndex),
          path,
        });
      }
    }
  }

  private async header(ref: ChunkRef, shardIndex: number, f: IoFile, path: string): Promise<ShardHeader> {
    const cached = this.headers.get(path);
    if (cached !== undefined) return cached;
    const bytes = await f.pread(HEADER_BYTES, 0);
    const h = decodeHeader(bytes, { ...siteOf(ref, shardIndex), path });
    this.crossCheck(ref, shardIndex, h, path);
    this.headers.set(path, h);
    return h;
  }

  /** Spec §9 verified read of shard-relative [offset, offset+length) into a fresh buffer (heal, recovery, needles). */
  async readVerified(ref: ChunkRef, shardIndex: number, offsetBytes: number, lengthBytes: number): Promise<Buffer> {
    const out = Buffer.allocUnsafe(lengthBytes);
    await this.readVerifiedWith(ref, shardIndex, offsetBytes, lengthBytes, (bytes) => {
      assert(bytes.length === lengthBytes, 'verified view is exactly the range');
      bytes.copy(out);
    });
    return out;
  }

  /** The §9 span plan of a shard range; the layout gives the geometry (the header is cross-checked against it). */
  private spanOf(ref: ChunkRef, offsetBytes: number, lengthBytes: number, site: ErrorSite = {}): SpanPlan | null {
    return spanPlan(
      { dataLenBytes: shardDataLen(ref), bitrotBlockBytes: ref.fl.bitrotBlockBytes },
      offsetBytes,
      lengthBytes,
      site,
    );
  }

  /** A pooled scratch for a plan's hash entries alone, its data span read into direct (give the scratch back after). */
  private entriesScratchFor(plan: SpanPlan, direct: Buffer): { scratch: Buffer; entries: Buffer; data: Buffer } {
    assert(direct.length === plan.dataLen, 'a direct read covers the data span exactly');
    const scratch = this.scratch.take(plan.entriesLen);
    return { scratch, entries: scratch.subarray(0, plan.entriesLen), data: direct };
  }

  /** A pooled scratch for a plan, cut into its hash entries and its data span (give it back after). */
  private scratchFor(plan: SpanPlan): { scratch: Buffer; entries: Buffer; data: Buffer } {
    const scratch = this.scratch.take(plan.entriesLen + plan.dataLen);
    return {
      scratch,
      entries: scratch.subarray(0, plan.entriesLen),
      data: scratch.subarray(plan.entriesLen, plan.entriesLen + plan.dataLen),
    };
  }

  /**
   * The one verified shard read (spec §9): the hash entries and the block-aligned span are read
   * into a pooled scratch buffer (store/chunks/scratch-pool.ts), every block is verified there against its
   * position-bound hash before any byte is used, and use() gets a view of exactly the range (valid
   * only during use()). Done on the calling thread, with no promise, when the header and the
   * descriptor are cached and the Io may read inline now (store/io/io.ts InlineGate); else on the
   * pool (header, entries and data together: one I/O latency). A failure throws (or rejects)
   * either way, once: the caller fails over (DESIGN §6); nothing here reads the shard again.
   * inline false: always the pool, for a caller that issues several shard reads at once (their
   * device waits overlap there; inline they would queue one behind the other).
   */
  readVerifiedWith(
    ref: ChunkRef,
    shardIndex: number,
    offsetBytes: number,
    lengthBytes: number,
    use: (bytes: Buffer) => void,
    inline = true,
  ): Maybe<void> {
    const path = this.usablePath(ref, shardIndex);
    const site: ErrorSite = { ...siteOf(ref, shardIndex), path };
    // The layout gives the geometry; the header is cross-checked against the same layout.
    const plan = this.spanOf(ref, offsetBytes, lengthBytes, site);
    if (plan === null) return use(Buffer.alloc(0));
    const h = inline ? this.headers.get(path) : undefined;
    const f =
      h !== undefined && plan.entriesLen + plan.dataLen <= INLINE_BYTES_MAX ? (this.io.openNow?.(path) ?? null) : null;
    if (f === null || f.preadIntoNow === undefined)
      return this.readVerifiedPooled(ref, shardIndex, path, plan, site, use);
    const src = this.tables.source(path, shardBlockCount(ref), plan);
    const { scratch, entries, data } = this.scratchFor(plan);
    try {
      const e = readEntriesNow(f, src, entries, plan);
      const dataGot = f.preadIntoNow(data, 0, plan.dataLen, plan.dataAt);
      const view = verifySpan(h!, this.key, plan, e.entries, data.subarray(0, dataGot), site);
      if (e.table !== null && src !== null && 'forgets' in src) this.tables.keep(path, e.table, e.tableGot, src);
      use(view);
    } catch (err) {
      this.dropCached(path);
      throw err;
    } finally {
      this.scratch.give(scratch);
      f.close().catch(() => undefined);
    }
  }

  /**
   * A verified read (spec §9) of shard range [offset, +length) into target[targetOffset..], on the
   * pool. When the range is whole bitrot blocks (or ends at the shard's end) the data is read
   * straight into target and verified there: no scratch, no copy. Then a failure leaves unverified
   * bytes in target's range: only for buffers no reader sees before this resolves (a stored payload
   * read for decoding, store/chunks/chunk-transform.ts), which a failover overwrites or the caller
   * drops. Other ranges are read through the scratch and copied (readVerifiedWith).
   */
  async readVerifiedInto(
    ref: ChunkRef,
    shardIndex: number,
    offsetBytes: number,
    lengthBytes: number,
    target: Buffer,
    targetOffset: number,
  ): Promise<void> {
    assert(
      targetOffset >= 0 && targetOffset + lengthBytes <= target.length,
      'readVerifiedInto: target holds the range',
    );
    const path = this.usablePath(ref, shardIndex);
    const site: ErrorSite = { ...siteOf(ref, shardIndex), path };
    const plan = this.spanOf(ref, offsetBytes, lengthBytes, site);
    if (plan === null) return;
    if (plan.skip !== 0 || plan.dataLen !== lengthBytes) {
      await this.readVerifiedPooled(ref, shardIndex, path, plan, site, (bytes) => {
        bytes.copy(target, targetOffset);
      });
      return;
    }
    await this.readVerifiedPooled(
      ref,
      shardIndex,
      path,
      plan,
      site,
      () => undefined,
      target.subarray(targetOffset, targetOffset + lengthBytes),
    );
  }

  /**
   * readVerifiedWith on the I/O pool: header, entries and data read together, all settled before the
   * scratch is reused. direct: the data span's buffer (exactly plan.dataLen), instead of the scratch.
   */
  private readVerifiedPooled(
    ref: ChunkRef,
    shardIndex: number,
    path: string,
    plan: SpanPlan,
    site: ErrorSite,
    use: (bytes: Buffer) => void,
    direct?: Buffer,
  ): Promise<void> {
    return this.withShardFile(ref, shardIndex, path, async (f) => {
      const src = this.tables.source(path, shardBlockCount(ref), plan);
      const { scratch, entries, data } =
        direct === undefined ? this.scratchFor(plan) : this.entriesScratchFor(plan, direct);
      try {
        const [h, e, dataGot] = await settledAll<ShardHeader | ReadEntries | number>([
          this.header(ref, shardIndex, f, path),
          readEntries(f, src, entries, plan),
          preadIntoParallel(f, data, 0, plan.dataLen, plan.dataAt),
        ]);
        const { entries: got, table, tableGot } = e as ReadEntries;
        // The header was cross-checked against the layout the plan came from (block count, lengths).
        const view = verifySpan(h as ShardHeader, this.key, plan, got, data.subarray(0, dataGot as number), site);
        if (table !== null && src !== null && 'forgets' in src) this.tables.keep(path, table, tableGot, src);
        use(view);
      } finally {
        this.scratch.give(scratch);
      }
    });
  }

  /**
   * After a failed read: the header is read again next time and a cached descriptor that no longer
   * names the file at path is dropped (replaced or removed from outside), so the next try sees the truth.
   */
  private dropCached(path: string): void {
    this.forgetPath(path);
    this.io.revalidate(path).catch(() => undefined);
  }

  /** Open the shard for reading and run fn; on failure the header cache and descriptor are dropped. */
  private async withShardFile<T>(
    ref: ChunkRef,
    shardIndex: number,
    path: string,
    fn: (f: IoFile) => Promise<T>,
  ): Promise<T> {
    try {
      const f = await this.io.open(path, 'read');
      try {
        return await fn(f);
      } finally {
        await f.close();
      }
    } catch (err) {
      // The file may have been replaced or removed from outside: the next try must see the path's file.
      this.forgetPath(path);
      await this.io.revalidate(path).catch(() => undefined);
      throw err;
    }
  }

  /** Whole-file decode + verify, bypassing the header cache (heal, scrub, recovery). */
  async readWhole(ref: ChunkRef, shardIndex: number): Promise<Buffer> {
    const path = this.usablePath(ref, shardIndex);
    this.forgetPath(path);
    // A cached descriptor of a file deleted or replaced from outside would hide the loss from scrub/heal.
    await this.io.revalidate(path);
    const f = await this.io.open(path, 'read');
    let bytes: Buffer;
    try {
      bytes = await f.pread(await f.sizeBytes(), 0);
    } finally {
      await f.close();
    }
    const site: ErrorSite = { ...siteOf(ref, shardIndex), path };
    const { header, payload } = verifyShardBytes(bytes, this.key, site);
    this.crossCheck(ref, shardIndex, header, path);
    return payload;
  }

  /**
   * Spec §8.2 steps 4-5 for one replica: write the data of each run's blocks (span, block aligned
   * at its start) and their hash entries, then one fdatasync for all runs (the applier patches every
   * pending span of a chunk at once).
   */
  async patchBlocks(
    ref: ChunkRef,
    shardIndex: number,
    runs: ReadonlyArray<{ firstBlock: number; span: Uint8Array }>,
  ): Promise<void> {
    const bb = ref.fl.bitrotBlockBytes;
    const dataLen = shardDataLen(ref);
    const blockCount = Math.ceil(dataLen / bb);
    const pos = { fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), shardIndex, version: ref.version };
    const path = this.usablePath(ref, shardIndex);
    // The patched blocks get new hash entries: no read may check them against the cached old ones,
    // neither during the patch nor after it (a read racing the patch may have cached the table again).
    this.tables.forget(path);
    this.writeGate();
    const f = await this.io.open(path, 'readwrite');
    try {
      for (const { firstBlock, span } of runs)
        assert(firstBlock * bb + span.length <= dataLen, 'patch inside shard_data_len');
      const entries = await this.patchedEntries(f, pos, { ...siteOf(ref, shardIndex), path }, bb, runs);
      // All runs' writes at once on the pool (recovery at the backlog bound patches ~128 runs per chunk).
      await Promise.all([
        ...runs.map(({ firstBlock, span }) => f.pwrite(span, dataStartBytes(blockCount) + firstBlock * bb)),
        ...entries.map(({ firstBlock, bytes }) => f.pwrite(bytes, HEADER_BYTES + firstBlock * HASH_ENTRY_BYTES)),
      ]);
      // On the pool: all replicas of a patch sync at once (DESIGN §5); inline they would queue.
      await f.fdatasync(false);
    } finally {
      await f.close();
      this.tables.forget(path);
    }
  }

  /**
   * The hash entries of a patch, as contiguous ranges of the table to write. Several runs share one
   * range from the first patched block to the last: the entries between them are read from the file
   * and written back unchanged (the same bytes: a torn write leaves them as they were), so a chunk
   * patched at many places costs one table write per replica, not one per run (the applier patches
   * ~20 scattered blocks per chunk under fsync'd random writes).
   */
  private async patchedEntries(
    f: IoFile,
    pos: BlockPosition,
    site: ErrorSite,
    bb: number,
    runs: ReadonlyArray<{ firstBlock: number; span: Uint8Array }>,
  ): Promise<Array<{ firstBlock: number; bytes: Buffer }>> {
    const one = (r: { firstBlock: number; span: Uint8Array }): { firstBlock: number; bytes: Buffer } => {
      const bytes = Buffer.alloc(Math.ceil(r.span.length / bb) * HASH_ENTRY_BYTES);
      writeHashEntries(bytes, 0, this.key, pos, r.span, bb, r.firstBlock);
      return { firstBlock: r.firstBlock, bytes };
    };
    if (runs.length < 2) return runs.map(one);
    const first = Math.min(...runs.map((r) => r.firstBlock));
    const end = Math.max(...runs.map((r) => r.firstBlock + Math.ceil(r.span.length / bb)));
    const bytes = Buffer.alloc((end - first) * HASH_ENTRY_BYTES);
    const got = await f.preadInto(bytes, 0, bytes.length, HEADER_BYTES + first * HASH_ENTRY_BYTES);
    if (got !== bytes.length)
      throw new FormatError('hash_table', `too short for the entries of blocks ${first}..${end - 1}`, site);
    for (const r of runs)
      writeHashEntries(bytes, (r.firstBlock - first) * HASH_ENTRY_BYTES, this.key, pos, r.span, bb, r.firstBlock);
    return [{ firstBlock: first, bytes }];
  }

  /** Remove one shard file (missing is fine). */
  async deleteShard(ref: ShardSite, shardIndex: number): Promise<void> {
    const path = this.usablePath(ref, shardIndex);
    this.forgetPath(path);
    this.writeGate();
    try {
      await this.io.unlink(path);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
  }

  /**
   * Remove a chunk version's shard files, temp files a cut-off write left beside them, and the
   * directories that are then empty; best effort per disk, returns the shards that failed.
   */
  async deleteChunk(ref: ShardSite, shardCount: number): Promise<number> {
    let failures = 0;
    await Promise.all(
      Array.from({ length: shardCount }, async (_, i) => {
        try {
          await this.deleteShard(ref, i);
          const chunkDir = nodePath.join(
            this.diskRoot(ref.diskIds[i]),
            chunkDirRelPath(ref.fileId, ref.version, BigInt(ref.chunkIndex)),
          );
          this.preparedDirs.delete(chunkDir);
          if (!(await this.removeEmptyDir(chunkDir))) await this.removeTemps(chunkDir);
          this.durableDirs.delete(nodePath.dirname(chunkDir));
          this.versionDirs.delete(nodePath.dirname(chunkDir));
          await this.removeEmptyDir(nodePath.dirname(chunkDir));
        } catch {
          failures++; // garbage is collected by recovery at the next open (DESIGN §5)
        }
      }),
    );
    return failures;
  }

  /** rmdir; false when the directory still holds something. */
  private async removeEmptyDir(dir: string): Promise<boolean> {
    try {
      await this.io.rmdir(dir);
      return true;
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'ENOENT') return true;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
      return false;
    }
  }

  /** A chunk directory of a reclaimed version: its temp files go, then the directory if empty. */
  private async removeTemps(chunkDir: string): Promise<void> {
    const names = await this.io.readdir(chunkDir);
    for (const name of names.filter(isTempName)) await this.io.unlink(nodePath.join(chunkDir, name));
    await this.removeEmptyDir(chunkDir);
  }

  /** After a shard was changed from outside this class (injected damage): its header and hash table are read again. */
  forgetHeader(ref: ChunkRef, shardIndex: number): void {
    this.forgetPath(this.path(ref, shardIndex));
  }

  /** Every cached header and hash table: another process changes the shards (a follower's writer, DESIGN §9). */
  forgetAll(): void {
    this.headers.clear();
    this.tables.forgetAll();
    this.onChange();
  }

  /** Cached header and hash table of a shard go together: any change of the file drops both. */
  private forgetPath(path: string): void {
    this.headers.delete(path);
    this.tables.forget(path);
    this.onChange();
  }

  /**
   * What a read grant of one replica shard needs (fs/fuse/read-grants.ts): its path and the hash table
   * a read verified against, cached with its cross-checked header; null when either is not cached, the
   * disk is unavailable or a fault is injected (a grant reads outside the Io: it must see the same).
   */
  grantSource(ref: ChunkRef, shardIndex: number): { path: string; table: Buffer } | null {
    if (this.io.passThrough?.() !== true || this.gate.unavailable(ref.diskIds[shardIndex]) !== undefined) return null;
    const path = this.path(ref, shardIndex);
    if (!this.headers.has(path)) return null;
    const table = this.tables.peek(path);
    return table === undefined ? null : { path, table };
  }
}

/** block_count of a shard of ref (spec §3), from the layout. */
function shardBlockCount(ref: ChunkRef): number {
  return blockCountFor(shardDataLen(ref), ref.fl.bitrotBlockBytes);
}

/** A read's hash entries; table: the whole table read to be kept once the read verifies. */
interface ReadEntries {
  entries: Buffer;
  table: Buffer | null;
  tableGot: number;
}

/** The plan's entries now (on the calling thread): cached, the whole table, or just the span's. */
function readEntriesNow(f: IoFile, src: EntriesSource, scratch: Buffer, plan: SpanPlan): ReadEntries {
  if (src !== null && 'cached' in src) return { entries: src.cached, table: null, tableGot: 0 };
  if (src !== null) {
    const table = Buffer.allocUnsafe(src.tableBytes);
    const tableGot = f.preadIntoNow!(table, 0, table.length, HEADER_BYTES);
    return { entries: entriesOf(table.subarray(0, tableGot), plan), table, tableGot };
  }
  return {
    entries: scratch.subarray(0, f.preadIntoNow!(scratch, 0, plan.entriesLen, plan.entriesAt)),
    table: null,
    tableGot: 0,
  };
}

/** readEntriesNow on the I/O pool. */
async function readEntries(f: IoFile, src: EntriesSource, scratch: Buffer, plan: SpanPlan): Promise<ReadEntries> {
  if (src !== null && 'cached' in src) return { entries: src.cached, table: null, tableGot: 0 };
  if (src !== null) {
    const table = Buffer.allocUnsafe(src.tableBytes);
    const tableGot = await f.preadInto(table, 0, table.length, HEADER_BYTES);
    return { entries: entriesOf(table.subarray(0, tableGot), plan), table, tableGot };
  }
  return {
    entries: scratch.subarray(0, await f.preadInto(scratch, 0, plan.entriesLen, plan.entriesAt)),
    table: null,
    tableGot: 0,
  };
}

/** What a whole-shard write puts after its head: the payload's data runs at their file offsets. */
interface ShardWrites {
  runs: Array<{ bytes: Uint8Array; atBytes: number }>;
  /** No hole: the runs are the slices, back to back from the data region's start. */
  whole: boolean;
  /** Where the payload ends in the file (the pad, if any, goes there). */
  endBytes: number;
}

/** No hole: head and payload in one writev, as before; else the head, then each run at its place. */
function directCalls(head: Buffer, writes: ShardWrites): Array<{ bytes: Uint8Array[]; atBytes: number }> {
  if (writes.whole) return [{ bytes: [head, ...writes.runs.map((w) => w.bytes)], atBytes: 0 }];
  return [{ bytes: [head], atBytes: 0 }, ...writes.runs.map((w) => ({ bytes: [w.bytes], atBytes: w.atBytes }))];
}

async function writevAt(f: IoFile, bytes: Uint8Array[], atBytes: number): Promise<void> {
  if (f.pwritev !== undefined) return f.pwritev(bytes, atBytes);
  for (let i = 0, at = atBytes; i < bytes.length; at += bytes[i].length, i++) await f.pwrite(bytes[i], at);
}

function shardWrites(parts: ShardParts, slices: Uint8Array[]): ShardWrites {
  const runs = dataRuns(slices);
  const starts: number[] = [];
  let at = parts.dataStart;
  for (const s of slices) {
    starts.push(at);
    at += s.length;
  }
  return {
    runs: runs.map((r) => ({
      bytes: slices[r.slice].subarray(r.startBytes, r.endBytes),
      atBytes: starts[r.slice] + r.startBytes,
    })),
    whole: coversAll(runs, slices),
    endBytes: at,
  };
}
