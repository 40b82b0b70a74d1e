// Transaction groups (DESIGN §5): whole-chunk shard writes of the mount's write-back go through the
// page cache with no flush of their own. A group collects them (their shard files and directories,
// the chunk-map rows and sizes they make) and closes every GROUP_INTERVAL_MS, at the dirty-byte
// bound (writers wait there), or at fsync/syncfs/unmount: it flushes every file and directory it
// wrote, then makes ONE metadata commit naming them. Data first per group: no row names a byte the
// flush has not made durable. Free last per group: the versions a group replaces go to the reclaim
// queue in its commit, and the reclaimer deletes only after a durable commit. Until its commit the
// group's rows are an overlay that every chunk-map and size question sees (ChunkMap.pending,
// Namespace.pendingSize), so storing changes no answer (DESIGN §5 one view).
import { assert } from '../../src/errors';
import { FsError } from '../fs-error';
import type { ChunkEnv } from './chunk-env';
import type { ChunkRef, FileLayout } from './chunk-ref';
import { rebuildPayload } from './chunk-io';
import type { ChunkRow } from '../meta/chunk-map';
import { WholeWrite, repoint, repointRewrite } from './live-version';
import { PastSize } from '../meta/past-size';
import { boundedAll } from './bounded';
import { shardCount, writeQuorum } from '../../src/layout';

/** A group closes at most this long after its first write (ZFS's txg timeout). */
export const GROUP_INTERVAL_MS = 5000;
/** The default dirty-byte bound: min(1 GiB, RAM / GROUP_RAM_DIVISOR). */
export const GROUP_DIRTY_BYTES_DEFAULT_MAX = 1 << 30;
export const GROUP_RAM_DIVISOR = 10;
/**
 * A group also closes, with no writer waiting, once it holds this share of the bound while no close
 * runs (as ZFS's zfs_dirty_data_sync): under sustained writes the disks flush one group while the
 * next fills, instead of idling until the bound.
 */
const GROUP_EARLY_CLOSE_DIVISOR = 4;
/** Files and directories flushed at once by a closing group (bounded descriptors). */
const SYNCS_IN_FLIGHT_MAX = 64;
/**
 * A group that wrote at least this many shard files to one file system flushes it with one syncfs
 * instead of a flush per file and per directory (DESIGN §5 "One syncfs per file system"): below it,
 * an fsync'd small write does not flush what everything else on that file system left dirty.
 */
export const SYNCFS_FILES_MIN = 24;
/** Files whose close error waits for their fsync or close at most (the oldest is dropped past it). */
const FILE_ERRORS_MAX = 4096;

/** What a whole-shard write left to flush: the shard file and the directories its rename touched. */
export interface ShardSyncs {
  file(path: string): void;
  dir(path: string): void;
  /** Run once the group's directories are durable (the shard store's durable-directory cache). */
  afterDurable(fn: () => void): void;
}

/**
 * What one chunk write's shards left to flush, by shard index, handed to the open group when the
 * write is done: a failed flush of a shard's file or of one of its directories fails that shard only.
 */
export class WriteSyncs {
  readonly files = new Map<number, string>();
  readonly dirs = new Map<number, Set<string>>();
  readonly after = new Map<number, Array<() => void>>();
  forShard(shardIndex: number): ShardSyncs {
    return {
      file: (p) => this.files.set(shardIndex, p),
      dir: (p) => this.dirs.set(shardIndex, (this.dirs.get(shardIndex) ?? new Set<string>()).add(p)),
      afterDurable: (fn) => this.after.set(shardIndex, [...(this.after.get(shardIndex) ?? []), fn]),
    };
  }
}

/**
 * An EC or transformed chunk's rewrite with its pending intents (store/chunks/intent-rewrite.ts) in a
 * group: its commit moves the intents onto the new version rather than dropping them (records logged
 * while it was written are logged again over it), and it is told how the group ended for it.
 */
export interface GroupRewrite {
  /** After the group's commit transaction made the new version live. */
  committed(): void;
  /** The group did not commit it (a failed flush below quorum, the file gone, a failed commit). */
  dropped(err: Error): void;
}

/** One shard of a group's write: its flush fails or succeeds on its own. */
interface GroupShard {
  w: GroupWrite;
  i: number;
}

/** One whole write of a group: a fresh version whose shards are written, not yet flushed. */
interface GroupWrite extends WholeWrite {
  fl: FileLayout;
  /** What each shard left to flush, by shard index (a failed flush there is a failed shard). */
  syncs: WriteSyncs;
  /** The version's chunk ref: placement, and what a retry of a failed shard rebuilds it from. */
  ref: ChunkRef;
  bytes: number;
  rewrite?: GroupRewrite;
}

interface GroupFile {
  fl: FileLayout;
  /** By chunk index: the group's last write of each chunk. */
  writes: Map<number, GroupWrite>;
  /** The size to commit (DESIGN §5 prefix rule: the writer's first byte still only in memory). */
  sizeBytes: number;
}

/** The shard files, directories and rows of one group. */
class Group {
  readonly files = new Map<number, GroupFile>();
  /**
   * Versions a later write of the same chunk in this group replaced: never flushed nor named
   * (queued for reclaim since their reservation).
   */
  readonly superseded: Array<{ ino: number; chunkIndex: number; version: bigint }> = [];
  /** Bytes the group's flush will write (superseded writes not counted: they are deleted, not flushed). */
  dirtyBytes = 0;
  firstWriteMs = 0;

  row(ino: number, chunkIndex: number): ChunkRow | undefined {
    const w = this.files.get(ino)?.writes.get(chunkIndex);
    if (w === undefined) return undefined;
    const { version, logicalLenBytes, stored } = w;
    return { chunkIndex, version, logicalLenBytes, maxVersion: version, stored };
  }

  /** Every write the group names, with its inode. */
  *writes(): Iterable<[number, GroupWrite]> {
    for (const [ino, f] of this.files) for (const w of f.writes.values()) yield [ino, w];
  }
}

export class TxGroups {
  private open = new Group();
  /**
   * The groups handed to close, oldest first: the one flushing and committing, and those waiting in
   * the chain behind it. Each one's rows stay visible until its own commit (DESIGN §5 one view).
   */
  private closing: Group[] = [];
  /** Closes run one after another (a later group may replace what an earlier one wrote). */
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  /** Closes asked for and not finished. */
  private closesRunning = 0;
  /**
   * What a close could not keep, by file: reported once by that file's next fsync or close (as the
   * kernel's per-file writeback error), never to another file's (DESIGN §5).
   */
  private readonly fileErrors = new Map<number, Error>();
  /** The first close error since the last untargeted sync (syncfs, a directory's fsync, tools). */
  private lateError: Error | null = null;
  /** Told of every close error as it happens (the mount's log): none is silent, even if never asked for. */
  onError: (err: Error) => void = () => undefined;
  private readonly pastSize: PastSize;
  /** Closes so far (status, tests). */
  closeCount = 0;
  /** The shard files on one file system from which a close flushes it with one syncfs (tests lower it). */
  syncfsFilesMin = SYNCFS_FILES_MIN;
  /** Told of every file a group's commit changed (cached file rows drop: a size may end lower than shown). */
  onCommitted: (ino: number) => void = () => undefined;

  constructor(
    private readonly env: ChunkEnv,
    readonly dirtyBytesMax: number,
  ) {
    assert(dirtyBytesMax > 0, 'a group needs a positive dirty-byte bound');
    this.pastSize = new PastSize(env.db);
  }

  /**
   * The open group takes a whole write whose shards are written (not flushed); its row is visible at
   * once. rewrite: an intents rewrite (sizeBytes 0: it never grows the file).
   */
  add(
    ino: number,
    ref: ChunkRef,
    w: WholeWrite,
    syncs: WriteSyncs,
    sizeBytes: number,
    bytes: number,
    rewrite?: GroupRewrite,
  ): void {
    const g = this.open;
    const fl = ref.fl;
    if (g.files.size === 0) g.firstWriteMs = Date.now();
    let f = g.files.get(ino);
    if (f === undefined) {
      f = { fl, writes: new Map(), sizeBytes: 0 };
      g.files.set(ino, f);
    }
    let old = w.old;
    const p = f.writes.get(w.chunkIndex);
    // A write of a chunk whose rewrite waits in the open group closes it first (ChunkWriter): none is replaced.
    assert(p?.rewrite === undefined, 'an intents rewrite is not replaced within its group');
    if (p !== undefined) {
      // Rewritten within the group (fio's loops, a database's hot chunk): the commit names only the
      // last version, which replaces the committed one; the earlier one is never flushed.
      g.superseded.push({ ino, chunkIndex: p.chunkIndex, version: p.version });
      g.dirtyBytes -= p.bytes;
      old = p.old;
    }
    f.writes.set(w.chunkIndex, { ...w, old, fl, syncs, ref, bytes, rewrite });
    f.sizeBytes = Math.max(f.sizeBytes, sizeBytes);
    g.dirtyBytes += bytes;
    this.env.map.onChange();
    if (this.closesRunning === 0 && g.dirtyBytes >= this.dirtyBytesMax / GROUP_EARLY_CLOSE_DIVISOR) {
      void this.close(); // its errors are kept for the files they concern
    }
  }

  /** The row a group has made live and not yet committed, newest first. */
  pendingRow(ino: number, chunkIndex: number): ChunkRow | undefined {
    const r = this.open.row(ino, chunkIndex);
    if (r !== undefined) return r;
    for (let i = this.closing.length - 1; i >= 0; i--) {
      const c = this.closing[i].row(ino, chunkIndex);
      if (c !== undefined) return c;
    }
    return undefined;
  }

  /** The chunk indexes of ino that a group holds. */
  pendingChunks(ino: number): number[] {
    const out = new Set<number>();
    for (const g of this.uncommitted()) for (const c of g.files.get(ino)?.writes.keys() ?? []) out.add(c);
    return [...out];
  }

  /** The size a group will commit for ino, or undefined. */
  pendingSize(ino: number): number | undefined {
    let size: number | undefined;
    for (const g of this.uncommitted()) {
      const s = g.files.get(ino)?.sizeBytes;
      if (s !== undefined) size = Math.max(size ?? 0, s);
    }
    return size;
  }

  /** Whether an intents rewrite of this chunk waits in the open group. */
  holdsRewrite(ino: number, chunkIndex: number): boolean {
    return this.open.files.get(ino)?.writes.get(chunkIndex)?.rewrite !== undefined;
  }

  /** Whether ino has rows or a size in a group not yet committed. */
  holds(ino: number): boolean {
    return this.open.files.has(ino) || this.closing.some((g) => g.files.has(ino));
  }

  /** Every group whose commit has not run: the closing ones and the open one. */
  private uncommitted(): Group[] {
    return [...this.closing, this.open];
  }

  /** Whether whole writes join groups (a live mount, Store.startBackground); else each write is durable on its own. */
  get running(): boolean {
    return this.started;
  }

  /**
   * At the dirty-byte bound the open group starts closing and the writer waits for the closes that
   * were already running (as under ZFS's dirty-data throttle): one group fills while the one before
   * it flushes, so at most two bounds' worth of unflushed shard bytes wait in the page cache.
   */
  async throttle(): Promise<void> {
    if (this.open.dirtyBytes < this.dirtyBytesMax) return;
    const running = this.chain;
    void this.close(); // its errors are kept for the files they concern
    await running;
  }

  /**
   * Close the open group (after the ones closing): every write so far committed, data first. Never
   * rejects: what a close could not keep is an error of the files it concerns (takeError, sync).
   */
  close(): Promise<void> {
    const g = this.open;
    if (g.files.size === 0) return this.chain;
    this.open = new Group();
    this.closing.push(g); // visible from now until its commit, while it waits for the closes before it
    this.closesRunning++;
    this.chain = this.chain
      .then(() => this.closeGroup(g))
      .catch((err: Error) => this.onError(err)) // only a fault of the close itself: later closes still run
      .finally(() => this.closesRunning--);
    return this.chain;
  }

  /**
   * fsync (ino: of that file) or syncfs (no ino): close, then report what a close could not keep,
   * once: the file's own error, or the first error since the last untargeted sync.
   */
  async sync(ino?: number): Promise<void> {
    await this.close();
    const err = ino === undefined ? this.lateError : this.takeError(ino);
    if (ino === undefined) this.lateError = null;
    if (err !== null) throw err;
  }

  /** The error a close left for ino, once (close(2) of the file reports it; DESIGN §5). */
  takeError(ino: number): Error | null {
    const err = this.fileErrors.get(ino) ?? null;
    this.fileErrors.delete(ino);
    return err;
  }

  private report(ino: number, err: Error): void {
    if (!this.fileErrors.has(ino) && this.fileErrors.size >= FILE_ERRORS_MAX)
      this.fileErrors.delete(this.fileErrors.keys().next().value as number); // the oldest goes
    this.fileErrors.set(ino, err);
    this.lateError ??= err;
  }

  /** Whole writes join groups from now on; intervalMs null: no timer (closed at the bound, sync and close only). */
  start(intervalMs: number | null = GROUP_INTERVAL_MS): void {
    this.started = true;
    if (this.timer !== null || intervalMs === null) return;
    this.timer = setInterval(
      () => {
        if (this.open.files.size > 0 && Date.now() - this.open.firstWriteMs >= intervalMs) {
          void this.close();
        }
      },
      Math.max(1, Math.floor(intervalMs / 5)),
    );
    this.timer.unref();
  }

  stop(): void {
    this.started = false;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Flush every shard file and directory of g, then one commit of its rows. A shard whose file or
   * directory flush failed is a failed shard (heal queue), as a failed write is without groups; a
   * chunk with fewer flushed shards than its write quorum is not committed, and its file's size stops
   * at its start (prefix rule); its version stays queued for reclaim. A commit that fails keeps none
   * of the group's rows. Either way the files concerned get an EIO for their next fsync or close.
   */
  private async closeGroup(g: Group): Promise<void> {
    let errors = new Map<number, FsError>();
    const rewritten = new Set<GroupWrite>();
    let why: Error = new FsError('EIO', 'the transaction group did not commit this rewrite');
    try {
      const failed = await this.flush(g);
      await this.retryBelowQuorum(failed);
      errors = this.commit(g, failed, rewritten);
      await this.env.commits.flush();
      this.closeCount++;
    } catch (err) {
      const what = `storing a transaction group failed: ${err instanceof Error ? err.message : String(err)}`;
      why = new FsError('EIO', what);
      for (const [ino, f] of g.files)
        if (!errors.has(ino) && [...f.writes.values()].some((w) => w.rewrite === undefined))
          errors.set(ino, new FsError('EIO', what, { fileId: BigInt(ino) }));
    } finally {
      for (const [, w] of g.writes()) if (w.rewrite !== undefined && !rewritten.has(w)) w.rewrite.dropped(why);
      this.closing.splice(this.closing.indexOf(g), 1);
      for (const [ino, w] of g.writes()) this.env.inflight.delete(ino, w.chunkIndex, w.version);
      for (const v of g.superseded) this.env.inflight.delete(v.ino, v.chunkIndex, v.version);
      for (const ino of g.files.keys()) this.onCommitted(ino);
      this.env.map.onChange();
      for (const [ino, err] of errors) {
        this.report(ino, err);
        this.onError(err);
      }
    }
  }

  /**
   * Every shard file and directory of g made durable: on a file system to which g wrote at least
   * syncfsFilesMin shard files, by one syncfs of it; elsewhere, and where that syncfs failed, by an
   * fdatasync per file, then an fsync per directory, which names the shards that failed (DESIGN §5
   * "One syncfs per file system"). The shards that failed, by write (those whose write failed before
   * included).
   */
  private async flush(g: Group): Promise<Map<GroupWrite, Set<number>>> {
    const shards: GroupShard[] = [];
    for (const [, w] of g.writes()) for (const i of w.syncs.files.keys()) shards.push({ w, i });
    const whole = await this.wholeFileSystems(shards);
    const onDisk = (sh: GroupShard): string[] | undefined => whole.get(sh.w.ref.diskIds[sh.i]);
    const failed = new Map<GroupWrite, Set<number>>();
    const fail = (w: GroupWrite, i: number, why: string): void => {
      this.env.health.fail(w.ref.diskIds[i], why);
      failed.set(w, (failed.get(w) ?? new Set<number>()).add(i));
    };
    const each = this.flushEach(
      shards.filter((sh) => onDisk(sh) === undefined),
      fail,
    );
    const synced = [...new Set(whole.values())].map(async (roots) => {
      const mine = shards.filter((sh) => onDisk(sh) === roots);
      try {
        await this.env.shards.io.syncfs(roots);
        for (const { w, i } of mine) for (const fn of w.syncs.after.get(i) ?? []) fn(); // its directories are durable
      } catch {
        await this.flushEach(mine, fail); // which shards of that file system failed, if any did
      }
    });
    await Promise.all([each, ...synced]);
    for (const [, w] of g.writes())
      for (const i of w.failed) failed.set(w, (failed.get(w) ?? new Set<number>()).add(i));
    return failed;
  }

  /**
   * The disks of shards whose file system gets one syncfs, each with the roots of that file
   * system's disks in the group (one array per file system): those to which the shards wrote
   * syncfsFilesMin files or more. The roots are stat'ed at each close, so a device mounted or
   * unmounted meanwhile is seen as it is.
   */
  private async wholeFileSystems(shards: GroupShard[]): Promise<Map<number, string[]>> {
    if (shards.length < this.syncfsFilesMin) return new Map();
    const perDisk = new Map<number, number>();
    for (const { w, i } of shards) perDisk.set(w.ref.diskIds[i], (perDisk.get(w.ref.diskIds[i]) ?? 0) + 1);
    const byDevice = new Map<number, { roots: string[]; disks: number[]; files: number }>();
    await Promise.all(
      [...perDisk].map(async ([diskId, files]) => {
        const root = this.env.shards.diskRoot(diskId);
        const st = await this.env.shards.io.stat(root).catch(() => null);
        if (st === null) return; // flushed file by file, which reports what is wrong there
        const fsys = byDevice.get(st.dev) ?? { roots: [], disks: [], files: 0 };
        fsys.roots.push(root);
        fsys.disks.push(diskId);
        fsys.files += files;
        byDevice.set(st.dev, fsys);
      }),
    );
    const whole = new Map<number, string[]>();
    for (const fsys of byDevice.values())
      if (fsys.files >= this.syncfsFilesMin) for (const d of fsys.disks) whole.set(d, fsys.roots);
    return whole;
  }

  /**
   * fdatasync of each shard's file, then fsync of each of their directories; a directory's fsync
   * done runs its shards' afterDurable.
   */
  private async flushEach(shards: GroupShard[], fail: (w: GroupWrite, i: number, why: string) => void): Promise<void> {
    const bad = new Set<GroupShard>();
    await boundedAll(shards, SYNCS_IN_FLIGHT_MAX, async (sh) => {
      try {
        const file = await this.env.shards.io.open(sh.w.syncs.files.get(sh.i)!, 'read');
        try {
          await file.fdatasync(false);
        } finally {
          await file.close();
        }
      } catch (err) {
        bad.add(sh);
        fail(sh.w, sh.i, err instanceof Error ? err.message : String(err));
      }
    });
    const dirs = new Set<string>();
    for (const { w, i } of shards) for (const d of w.syncs.dirs.get(i) ?? []) dirs.add(d);
    const failedDirs = new Map<string, string>();
    await boundedAll([...dirs], SYNCS_IN_FLIGHT_MAX, async (d) => {
      try {
        await this.env.shards.io.fsyncDir(d);
      } catch (err) {
        failedDirs.set(d, err instanceof Error ? err.message : String(err));
      }
    });
    for (const sh of shards) {
      const { w, i } = sh;
      const badDir = [...(w.syncs.dirs.get(i) ?? [])].find((d) => failedDirs.has(d));
      if (badDir !== undefined) fail(w, i, failedDirs.get(badDir)!);
      else if (!bad.has(sh)) for (const fn of w.syncs.after.get(i) ?? []) fn(); // its directories are durable
    }
  }

  /**
   * One more try for a chunk below its write quorum: each failed shard is written again, rebuilt
   * from the shards that read back verified (as heal does), with a flush of its own (spec §8.1). A
   * passing fault (an EIO on one flush, a shard file lost before its flush) so costs no byte; a
   * shard that fails again stays failed, and the write quorum decides.
   */
  private async retryBelowQuorum(failed: Map<GroupWrite, Set<number>>): Promise<void> {
    for (const [w, shards] of failed) {
      if (shardCount(w.fl.layout) - shards.size >= writeQuorum(w.fl.layout)) continue;
      for (const i of [...shards]) {
        try {
          await this.env.shards.writeShard(w.ref, i, await rebuildPayload(this.env, w.ref, i));
          this.env.health.ok(w.ref.diskIds[i]);
          shards.delete(i);
        } catch (err) {
          this.env.health.fail(w.ref.diskIds[i], err instanceof Error ? err.message : String(err));
        }
      }
    }
  }

  /**
   * The group's one metadata commit (not flushed here: the caller flushes it); the chunks left out, by
   * file (a rewrite left out is no error of its file: its bytes stay in the intent log). rewritten:
   * gets the rewrites it committed.
   */
  private commit(
    g: Group,
    failedFlush: Map<GroupWrite, Set<number>>,
    rewritten: Set<GroupWrite>,
  ): Map<number, FsError> {
    const errors = new Map<number, FsError>();
    const kept: Array<[number, GroupWrite, bigint | null]> = [];
    this.env.db.transaction(() => {
      for (const [ino, f] of g.files) {
        // A file deleted, or whose layout changed, meanwhile: its versions stay queued for reclaim.
        if (this.env.fileRows.layoutText(ino) !== f.fl.layout.text) continue;
        let sizeTo = f.sizeBytes;
        for (const w of f.writes.values()) {
          const failed = [...(failedFlush.get(w) ?? [])].sort((a, b) => a - b);
          const flushed = shardCount(f.fl.layout) - failed.length;
          const quorum = writeQuorum(f.fl.layout);
          if (flushed < quorum && w.rewrite !== undefined) continue; // dropped: the old version stays live
          if (flushed < quorum) {
            sizeTo = Math.min(sizeTo, w.chunkIndex * f.fl.chunkSizeBytes);
            const what = `only ${flushed} of ${quorum} required shards flushed; the file now ends before it`;
            const site = { fileId: BigInt(ino), chunkIndex: BigInt(w.chunkIndex), version: w.version };
            if (!errors.has(ino)) errors.set(ino, new FsError('EIO', what, site));
            continue;
          }
          const replaced = this.replacedVersion(ino, w);
          if (w.rewrite !== undefined) repointRewrite(this.env, ino, f.fl, { ...w, failed });
          else repoint(this.env, ino, f.fl, { ...w, failed }, replaced);
          kept.push([ino, w, replaced]);
        }
        const sizeBytes = this.env.fileRows.growSize(ino, sizeTo);
        this.pastSize.note(ino, f.fl.chunkSizeBytes, sizeBytes);
      }
    })();
    for (const [ino, w, replaced] of kept) {
      if (w.rewrite !== undefined) {
        rewritten.add(w);
        w.rewrite.committed();
      } else if (replaced !== null) this.env.backlog.dropChunk(ino, w.chunkIndex);
    }
    return errors;
  }

  /**
   * The committed version a whole write replaces (in the commit's transaction; null: none). Its old,
   * taken when it was planned, may be the row of a group then closing that left it out (below its
   * quorum, a failed commit): that version never went live and is queued for reclaim since its
   * reservation, while the committed one it stood over would be named by no row and no queue and
   * leak (DESIGN §5 "Free last per group"). A write planned over no row replaces none: the inode's
   * lock kept every other write of that chunk out, and no group held one.
   */
  private replacedVersion(ino: number, w: GroupWrite): bigint | null {
    if (w.old === null) return null;
    const committed = this.env.map.getStored(ino, w.chunkIndex)?.version ?? 0n;
    return committed > 0n ? committed : null;
  }
}
