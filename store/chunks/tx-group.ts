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
import type { FileLayout } from './chunk-ref';
import type { ChunkRow } from '../meta/chunk-map';
import { WholeWrite, repoint } from './live-version';
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

/** What a whole-shard write left to flush: the shard file and the directories its rename touched. */
export interface ShardSyncs {
  file(path: string): void;
  dir(path: string): void;
  /** Run once the group's directories are durable (the shard store's durable-directory cache). */
  afterDurable(fn: () => void): void;
}

/** What one chunk write's shards left to flush, handed to the open group when the write is done. */
export class WriteSyncs {
  readonly files = new Map<number, string>();
  readonly dirs = new Set<string>();
  readonly after: Array<() => void> = [];
  forShard(shardIndex: number): ShardSyncs {
    return {
      file: (p) => this.files.set(shardIndex, p),
      dir: (p) => this.dirs.add(p),
      afterDurable: (fn) => this.after.push(fn),
    };
  }
}

/** One whole write of a group: a fresh version whose shards are written, not yet flushed. */
interface GroupWrite extends WholeWrite {
  fl: FileLayout;
  /** Shard file path by shard index (a failed flush there is a failed shard). */
  files: Map<number, string>;
  diskIds: readonly number[];
  bytes: number;
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
  readonly dirs = new Set<string>();
  readonly afterDurable: Array<() => void> = [];
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
  /** Errors of closes that no caller awaited (the timer's), reported by the next sync. */
  private lateErrors: Error[] = [];
  private readonly pastSize: PastSize;
  /** Closes so far (status, tests). */
  closeCount = 0;
  /** Told of every file a group's commit changed (cached file rows drop: a size may end lower than shown). */
  onCommitted: (ino: number) => void = () => undefined;

  constructor(
    private readonly env: ChunkEnv,
    readonly dirtyBytesMax: number,
  ) {
    assert(dirtyBytesMax > 0, 'a group needs a positive dirty-byte bound');
    this.pastSize = new PastSize(env.db);
  }

  /** The open group takes a whole write whose shards are written (not flushed); its row is visible at once. */
  add(
    ino: number,
    fl: FileLayout,
    diskIds: readonly number[],
    w: WholeWrite,
    syncs: WriteSyncs,
    sizeBytes: number,
    bytes: number,
  ): void {
    const g = this.open;
    for (const d of syncs.dirs) g.dirs.add(d);
    g.afterDurable.push(...syncs.after);
    if (g.files.size === 0) g.firstWriteMs = Date.now();
    let f = g.files.get(ino);
    if (f === undefined) {
      f = { fl, writes: new Map(), sizeBytes: 0 };
      g.files.set(ino, f);
    }
    let old = w.old;
    const p = f.writes.get(w.chunkIndex);
    if (p !== undefined) {
      // Rewritten within the group (fio's loops, a database's hot chunk): the commit names only the
      // last version, which replaces the committed one; the earlier one is never flushed.
      g.superseded.push({ ino, chunkIndex: p.chunkIndex, version: p.version });
      g.dirtyBytes -= p.bytes;
      old = p.old;
    }
    f.writes.set(w.chunkIndex, { ...w, old, fl, files: syncs.files, diskIds, bytes });
    f.sizeBytes = Math.max(f.sizeBytes, sizeBytes);
    g.dirtyBytes += bytes;
    this.env.map.onChange();
    if (this.closesRunning === 0 && g.dirtyBytes >= this.dirtyBytesMax / GROUP_EARLY_CLOSE_DIVISOR) {
      this.close().catch((err: Error) => this.lateErrors.push(err)); // reported by the next sync
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
    this.close().catch((err: Error) => this.lateErrors.push(err)); // reported by the next sync
    await running;
  }

  /** Close the open group (after the ones closing): every write so far committed, data first. */
  close(): Promise<void> {
    const g = this.open;
    if (g.files.size === 0) return this.chain;
    this.open = new Group();
    this.closing.push(g); // visible from now until its commit, while it waits for the closes before it
    this.closesRunning++;
    const run = this.chain.then(() => this.closeGroup(g)).finally(() => this.closesRunning--);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** fsync/syncfs: close, and report the errors of closes no one awaited. */
  async sync(): Promise<void> {
    await this.close();
    const late = this.lateErrors;
    this.lateErrors = [];
    if (late.length > 0) throw late[0];
  }

  /** Whole writes join groups from now on; intervalMs null: no timer (closed at the bound, sync and close only). */
  start(intervalMs: number | null = GROUP_INTERVAL_MS): void {
    this.started = true;
    if (this.timer !== null || intervalMs === null) return;
    this.timer = setInterval(
      () => {
        if (this.open.files.size > 0 && Date.now() - this.open.firstWriteMs >= intervalMs) {
          this.close().catch((err: Error) => this.lateErrors.push(err));
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
   * Flush every shard file and directory of g, then one commit of its rows. A chunk with fewer
   * flushed shards than its write quorum is not committed, and its file's size stops at its start
   * (prefix rule); its version stays queued for reclaim. The first such error is thrown after the commit.
   */
  private async closeGroup(g: Group): Promise<void> {
    try {
      const failedFlush = await this.flushFiles(g);
      await boundedAll([...g.dirs], SYNCS_IN_FLIGHT_MAX, (d) => this.env.shards.io.fsyncDir(d));
      for (const fn of g.afterDurable) fn();
      const err = this.commit(g, failedFlush);
      await this.env.commits.flush();
      this.closeCount++;
      if (err !== null) throw err;
    } finally {
      this.closing.splice(this.closing.indexOf(g), 1);
      for (const [ino, w] of g.writes()) this.env.inflight.delete(ino, w.chunkIndex, w.version);
      for (const v of g.superseded) this.env.inflight.delete(v.ino, v.chunkIndex, v.version);
      for (const ino of g.files.keys()) this.onCommitted(ino);
      this.env.map.onChange();
    }
  }

  /** fdatasync of every shard file; the shards that failed, by write. */
  private async flushFiles(g: Group): Promise<Map<GroupWrite, Set<number>>> {
    const jobs: Array<{ w: GroupWrite; i: number; path: string }> = [];
    for (const [, w] of g.writes()) for (const [i, path] of w.files) jobs.push({ w, i, path });
    const failed = new Map<GroupWrite, Set<number>>();
    await boundedAll(jobs, SYNCS_IN_FLIGHT_MAX, async ({ w, i, path }) => {
      try {
        const file = await this.env.shards.io.open(path, 'read');
        try {
          await file.fdatasync(false);
        } finally {
          await file.close();
        }
      } catch (err) {
        this.env.health.fail(w.diskIds[i], err instanceof Error ? err.message : String(err));
        const s = failed.get(w) ?? new Set<number>();
        s.add(i);
        failed.set(w, s);
      }
    });
    return failed;
  }

  /** The group's one metadata commit (not flushed here: the caller flushes it). */
  private commit(g: Group, failedFlush: Map<GroupWrite, Set<number>>): FsError | null {
    let firstError: FsError | null = null;
    this.env.db.transaction(() => {
      for (const [ino, f] of g.files) {
        // A file deleted, or whose layout changed, meanwhile: its versions stay queued for reclaim.
        if (this.env.fileRows.layoutText(ino) !== f.fl.layout.text) continue;
        let sizeTo = f.sizeBytes;
        for (const w of f.writes.values()) {
          const failed = [...new Set([...w.failed, ...(failedFlush.get(w) ?? [])])].sort((a, b) => a - b);
          const flushed = shardCount(f.fl.layout) - failed.length;
          if (flushed < writeQuorum(f.fl.layout)) {
            sizeTo = Math.min(sizeTo, w.chunkIndex * f.fl.chunkSizeBytes);
            const quorum = writeQuorum(f.fl.layout);
            const what = `only ${flushed} of ${quorum} required shards flushed; the file now ends before it`;
            const site = { fileId: BigInt(ino), chunkIndex: BigInt(w.chunkIndex), version: w.version };
            firstError ??= new FsError('EIO', what, site);
            continue;
          }
          repoint(this.env, ino, f.fl, { ...w, failed });
        }
        const sizeBytes = this.env.fileRows.growSize(ino, sizeTo);
        this.pastSize.note(ino, f.fl.chunkSizeBytes, sizeBytes);
      }
    })();
    for (const [ino, w] of g.writes()) if (w.old !== null) this.env.backlog.dropChunk(ino, w.chunkIndex);
    return firstError;
  }
}
