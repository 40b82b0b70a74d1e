// The chunk store (store-api.md): a directory with chunkfs.json, the bitrot key,
// meta.db and one or more disk directories (DESIGN §4). Ties together the
// namespace, file I/O, heal and recovery; status() reports disks, layouts in use,
// the heal queue and counters.
import * as nodePath from 'node:path';
import { LOCK_FILE } from './store-lock';
import { LooseModes, describeModeChanges, findLooseModes, tightenStoreModes } from './private-modes';
import { SyncIo, nodeSyncIo } from './sync-io';
import { loadHighway } from '../src/highway';
import { ChunkEnv, DiskHealth } from './chunk-env';
import { ChunkMap } from './chunk-map';
import { CONFIG_FILE, ConfigError, CreateConfigOptions, OpenedConfig, adoptLegacyStore, createConfig, keyPath, openConfig } from './config';
import { diskProblem, offlineReason, writeMarker } from './disk-identity';
import { StoreLock } from './store-lock';
import { CounterName, Counters } from './counters';
import { FileIo } from './file-io';
import { FsError } from './fs-error';
import { HealReport, Healer } from './heal';
import { Io, NodeIo, StatfsResult } from './io';
import { LayoutError, overhead, parseLayout, shardCount } from './layout';
import { Db, openDb } from './meta';
import { Namespace } from './namespace';
import { RecoveryReport, emptyRecoveryReport, recover } from './recovery';
import { ShardStore } from './shard-store';
import { ByteRange, punchHole } from './punch';

export const META_FILE = 'meta.db';

/** Scrub's report: the shards (HealReport) and the paths whose mode lets other users in (issue 12). */
export interface ScrubReport extends HealReport {
  /** With repair, looseModes.fixed of them were made owner-only. */
  looseModes: LooseModes;
}

export interface StoreOpenOptions {
  io?: Io;
  readOnly?: boolean;
  healer?: boolean;
  /** One line per event worth telling the operator (modes tightened, stale lock taken over). */
  log?: (line: string) => void;
}

export interface StoreCreateOptions {
  disks?: number | string[];
  layout?: string;
  chunkSizeBytes?: number;
  bitrotBlockBytes?: number;
  ecBlockSizeBytes?: number;
  io?: Io;
}

export interface StatusReport {
  disks: Array<{ id: number; path: string; epoch: number; totalBytes: number; freeBytes: number; availBytes: number; state: string; errors: number; lastError: string }>;
  layoutsInUse: Array<{ layout: string; files: number }>;
  healQueueLength: number;
  openIntents: number;
  counters: Record<CounterName, number>;
}

export class Store {
  readonly ns: Namespace;
  recoveryReport: RecoveryReport = emptyRecoveryReport();
  private readonly env: ChunkEnv;
  private readonly files: FileIo;
  private readonly healer: Healer;
  private closed = false;
  /** Held while open read-write (store/store-lock.ts); null when read-only. */
  private lock: StoreLock | null = null;

  private constructor(readonly dir: string, private readonly opened: OpenedConfig, private readonly db: Db, readonly io: Io) {
    const { config } = opened;
    const health = new DiskHealth();
    const shards = new ShardStore(io, opened.key, opened.diskPaths, health);
    this.env = { db, shards, map: new ChunkMap(db), counters: new Counters(db), health };
    this.files = new FileIo(this.env, config.disks.map((d) => ({ id: d.id, epoch: d.epoch })));
    this.healer = new Healer(this.env, this.files, () => this.checkDisks(true));
    this.ns = new Namespace(db, {
      defaults: config.defaults,
      clusterMapEpoch: config.clusterMapEpoch,
      checkLayout: (text) => this.checkLayout(text),
      layoutChanged: (ino) => this.files.forget(ino),
    });
  }

  /** A layout this store can hold, else FsError EINVAL. */
  private checkLayout(text: string): void {
    try {
      const l = parseLayout(text);
      const disks = this.opened.config.disks.filter((d) => d.epoch <= this.opened.config.clusterMapEpoch).length;
      if (shardCount(l) > disks) throw new FsError('EINVAL', `layout ${text} needs ${shardCount(l)} disks, the store has ${disks}`);
    } catch (err) {
      if (err instanceof LayoutError) throw new FsError('EINVAL', err.message);
      throw err;
    }
  }

  /** mkfs: refuses a non-empty dir, duplicate disks, a layout needing more disks than exist. */
  static async create(dir: string, opts: StoreCreateOptions = {}): Promise<Store> {
    await loadHighway();
    const createOpts: CreateConfigOptions = {
      disks: opts.disks,
      defaults: { layout: opts.layout, chunkSizeBytes: opts.chunkSizeBytes, bitrotBlockBytes: opts.bitrotBlockBytes, ecBlockSizeBytes: opts.ecBlockSizeBytes },
    };
    for (const k of Object.keys(createOpts.defaults!) as Array<keyof typeof createOpts.defaults>) {
      if (createOpts.defaults![k] === undefined) delete createOpts.defaults![k];
    }
    createConfig(dir, createOpts, nodeSyncIo);
    // Created 0600 before SQLite sees it: SQLite gives meta.db-wal and -shm the mode of the database file.
    nodeSyncIo.createExclusive(nodePath.join(dir, META_FILE), Buffer.alloc(0));
    openDb(nodePath.join(dir, META_FILE)).close();
    return Store.open(dir, { io: opts.io });
  }

  /**
   * Open and run recovery (report in store.recoveryReport). Read-write opens take the
   * store lock (one writer at a time); every problem with the config, key or lock is
   * reported before anything on disk changes.
   */
  static async open(dir: string, opts: StoreOpenOptions = {}): Promise<Store> {
    await loadHighway();
    const readOnly = opts.readOnly ?? false;
    const opened = openConfig(dir, nodeSyncIo);
    const metaPath = nodePath.join(dir, META_FILE);
    if (nodeSyncIo.stat(metaPath) === null) throw new ConfigError(metaPath, 'metadata database missing; refusing to start an empty one');
    Store.makePrivate(dir, opened, nodeSyncIo, opts.log ?? ((line) => process.stderr.write(`${line}\n`)));
    const lock = readOnly ? null : StoreLock.acquire(dir);
    let db: Db | null = null;
    try {
      if (!readOnly) adoptLegacyStore(dir, opened);
      try {
        db = openDb(metaPath, readOnly);
      } catch (err) {
        throw new ConfigError(metaPath, `cannot open metadata database: ${(err as Error).message}`);
      }
      const store = new Store(dir, opened, db, opts.io ?? new NodeIo());
      store.lock = lock;
      store.checkDisks(false);
      if (!readOnly) {
        const roots = opened.config.disks.filter((d) => store.env.health.unavailable(d.id) === undefined).map((d) => opened.diskPaths.get(d.id)!);
        store.recoveryReport = await recover(store.env, store.files, store.ns.orphans(), roots);
        if (opts.healer === true) store.healer.start();
      }
      return store;
    } catch (err) {
      db?.close();
      lock?.release();
      throw err;
    }
  }

  /**
   * Stores made before issue 12 were world-readable: clear group/other bits on the store's top
   * paths (disk directories guard every shard beneath them) and log one line, or refuse.
   */
  private static makePrivate(dir: string, opened: OpenedConfig, io: SyncIo, log: (line: string) => void): void {
    const top = [dir, nodePath.join(dir, CONFIG_FILE), keyPath(dir, opened.config), nodePath.join(dir, LOCK_FILE)];
    const meta = ['', '-wal', '-shm'].map((s) => nodePath.join(dir, META_FILE + s));
    const disks = [...opened.diskPaths.values()].flatMap((root) => [root, nodePath.join(root, '.chunks')]);
    const changes = tightenStoreModes(io, [...top, ...meta, ...disks]);
    if (changes.length > 0) log(describeModeChanges(dir, changes));
  }

  /** The dead holder's pid when open took over a stale lock (0: the lock named none), else null. */
  get lockTookOverFrom(): number | null {
    return this.lock?.tookOverFrom ?? null;
  }

  /**
   * Check disk identity markers (store/disk-identity.ts): a missing or foreign disk is
   * offline (served around, never written), one whose marker checks again is back.
   * onlyOffline: recheck just the offline disks (cheap; before heal and scrub).
   */
  private checkDisks(onlyOffline: boolean): void {
    const { config } = this.opened;
    for (const d of config.disks) {
      const health = this.env.health;
      if (onlyOffline && health.unavailable(d.id) === undefined) continue;
      const root = this.opened.diskPaths.get(d.id)!;
      // A store made before markers, opened read-only, has no uuid to check against.
      const problem = config.storeUuid === undefined
        ? (nodeSyncIo.stat(root) !== null ? null : `directory ${root} is missing (device not mounted?)`)
        : diskProblem(nodeSyncIo, root, config.storeUuid, d.id);
      // An intent left open by recovery may mean a replica on this disk holds old blocks that
      // still verify: the disk comes back only at an open, whose recovery resolves the intent first.
      if (problem === null && onlyOffline && this.env.map.intents().length > 0) continue;
      if (problem === null) health.setAvailable(d.id);
      else health.setUnavailable(d.id, offlineReason(d.id, root, problem));
    }
  }

  /**
   * Adopt an empty directory at disk diskId's configured path as its replacement (the
   * old device is lost): writes the identity marker and brings the disk back online.
   * Its shards are then rebuilt by scrub({repair: true}) (and by heal as reads find them missing).
   */
  replaceDisk(diskId: number): void {
    const root = this.opened.diskPaths.get(diskId);
    if (root === undefined) throw new FsError('EINVAL', `no disk ${diskId} in this store`);
    if (this.lock === null) throw new FsError('EROFS', 'replaceDisk needs the store open read-write');
    const uuid = this.opened.config.storeUuid!;
    if (diskProblem(nodeSyncIo, root, uuid, diskId) === null) throw new FsError('EINVAL', `disk ${diskId} (${root}) is not offline; nothing to replace`);
    let entries: string[];
    try {
      entries = nodeSyncIo.readdir(root);
    } catch (err) {
      throw new ConfigError(root, `replacement disk directory must exist (mount the new device there): ${(err as Error).message}`);
    }
    if (entries.length > 0) throw new ConfigError(root, `replacement disk directory must be empty, it holds ${entries.length} entries`);
    writeMarker(nodeSyncIo, root, uuid, diskId);
    this.env.health.setAvailable(diskId);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.healer.stop();
      this.db.close();
      if (this.io instanceof NodeIo) this.io.closeAll();
    } finally {
      this.lock?.release();
    }
  }

  read(ino: number, offsetBytes: number, lengthBytes: number): Promise<Buffer> {
    return this.files.read(ino, offsetBytes, lengthBytes);
  }
  /**
   * read(ino, offsetBytes, target.length - targetOffset) copied into target[targetOffset..]:
   * returns the byte count (short only at EOF; holes are written as zeros). Verified
   * through pooled scratch buffers, so a small read allocates no span-sized buffer.
   */
  /** readInto answered synchronously from cached state, or null: then call readInto (store/file-io.ts). */
  readIntoNow(ino: number, offsetBytes: number, target: Buffer): number | null {
    return this.files.readIntoNow(ino, offsetBytes, target);
  }
  readInto(ino: number, offsetBytes: number, target: Buffer, targetOffset = 0): Promise<number> {
    return this.files.readInto(ino, offsetBytes, target, targetOffset);
  }
  write(ino: number, offsetBytes: number, data: Uint8Array): Promise<void> {
    return this.files.write(ino, offsetBytes, data);
  }
  truncate(ino: number, sizeBytes: number): Promise<void> {
    return this.files.truncate(ino, sizeBytes);
  }
  /** Whole chunks in the range become holes (space freed); returns the partly covered parts, to zero. */
  punchHole(ino: number, offsetBytes: number, lengthBytes: number): Promise<ByteRange[]> {
    return punchHole(this.env, this.files, ino, offsetBytes, lengthBytes);
  }
  /** Delete the data and inode of an unlinked (nlink 0) file once no handle holds it. */
  deleteFile(ino: number): Promise<void> {
    return this.files.deleteFile(ino);
  }

  heal(entriesMax?: number): Promise<HealReport> {
    return this.healer.heal(entriesMax);
  }
  healChunk(ino: number, chunkIndex: number): Promise<HealReport> {
    return this.healer.healChunk(ino, chunkIndex, true);
  }
  /** Verify every shard (healer) and report every path under the disks whose mode lets others in. */
  async scrub(opts: { repair?: boolean } = {}): Promise<ScrubReport> {
    const repair = opts.repair ?? false;
    const shards = await this.healer.scrub(repair);
    const roots = this.opened.config.disks.filter((d) => this.env.health.unavailable(d.id) === undefined).map((d) => this.opened.diskPaths.get(d.id)!);
    return { ...shards, looseModes: await findLooseModes(this.io, roots, repair) };
  }
  startHealer(entriesPerSecond?: number): void {
    this.healer.start(entriesPerSecond);
  }
  stopHealer(): Promise<void> {
    return this.healer.stop();
  }

  async status(): Promise<StatusReport> {
    this.checkDisks(true);
    const disks = [];
    for (const d of this.opened.config.disks) {
      const path = this.opened.diskPaths.get(d.id)!;
      let fsinfo: StatfsResult = { totalBytes: 0, freeBytes: 0, availBytes: 0 };
      try {
        // An offline disk's path may be an empty mount point on another filesystem: its numbers would mislead.
        if (this.env.health.unavailable(d.id) === undefined) fsinfo = await this.io.statfs(path); // success says nothing about the shard files: health unchanged
      } catch (err) {
        this.env.health.fail(d.id, (err as Error).message);
      }
      const h = this.env.health.report(d.id);
      disks.push({ id: d.id, path, epoch: d.epoch, ...fsinfo, state: h.state, errors: h.errors, lastError: h.lastError });
    }
    const layoutsInUse = (this.db.prepare(`SELECT layout, count(*) AS n FROM inodes WHERE type = 'file' GROUP BY layout ORDER BY layout`).all() as Array<{ layout: string; n: bigint }>)
      .map((r) => ({ layout: r.layout, files: Number(r.n) }));
    return {
      disks, layoutsInUse, healQueueLength: this.env.map.healQueueLength(), openIntents: this.env.map.intents().length,
      counters: this.env.counters.all(),
    };
  }

  /** Usable space: raw space of all disks divided by the default layout's overhead. */
  async statfs(): Promise<StatfsResult> {
    const factor = overhead(parseLayout(this.opened.config.defaults.layout));
    const seen = new Set<number>();
    const sum = { totalBytes: 0, freeBytes: 0, availBytes: 0 };
    for (const [id, path] of this.opened.diskPaths) {
      if (this.env.health.unavailable(id) !== undefined) continue; // offline: its space is not usable
      const dev = (await this.io.stat(path))?.dev ?? -1; // disks on one filesystem count once
      if (seen.has(dev)) continue;
      seen.add(dev);
      const s = await this.io.statfs(path);
      sum.totalBytes += s.totalBytes;
      sum.freeBytes += s.freeBytes;
      sum.availBytes += s.availBytes;
    }
    return { totalBytes: Math.floor(sum.totalBytes / factor), freeBytes: Math.floor(sum.freeBytes / factor), availBytes: Math.floor(sum.availBytes / factor) };
  }

  /** Shard file path of (ino, chunk, shard) for the live version: tools and fault-injection tests. */
  shardPath(ino: number, chunkIndex: number, shardIndex: number): Promise<string | null> {
    return this.files.withChunk(ino, chunkIndex, async (ref) => (ref === null ? null : this.env.shards.path(ref, shardIndex)));
  }
  /** Disk directories by id. */
  diskPaths(): ReadonlyMap<number, string> {
    return this.opened.diskPaths;
  }
}
