// The chunk store (store-api.md): a directory with chunkfs.json, the bitrot key,
// meta.db and one or more disk directories (DESIGN §4). Ties together the
// namespace, file I/O, heal and recovery; status() reports disks, layouts in use,
// the heal queue and counters.
import { Maybe } from './chunks/maybe-async';
import * as nodePath from 'node:path';
import { LOCK_FILE } from './store-lock';
import {
  LooseModes,
  describeModeChanges,
  findLooseModes,
  refuseSharedDiskDir,
  tightenStoreModes,
} from './io/private-modes';
import { PRIVATE_DIR_MODE, SyncIo, nodeSyncIo } from './io/sync-io';
import { loadHighway } from '../src/highway';
import { ChunkEnv, DiskHealth } from './chunks/chunk-env';
import { layoutsInUse as surveyLayouts } from './meta/surveys';
import { ChunkMap } from './meta/chunk-map';
import { LogRecordKeys } from './log-record-keys';
import {
  CONFIG_FILE,
  DEFAULT_CONTAINER_CAPACITY_BYTES,
  ConfigError,
  CreateConfigOptions,
  OpenedConfig,
  adoptLegacyStore,
  createConfig,
  keyPath,
  openConfig,
  setDiskPath,
} from './config';
import { FsckOptions, FsckReport, fsck } from './upkeep/fsck';
import { diskProblem, offlineReason, writeMarker } from './disk-identity';
import { StoreLock, thisHost } from './store-lock';
import { CounterName, Counters } from './meta/counters';
import { FileIo } from './file-io';
import { ReadGrantInfo } from './chunks/read-grant';
import { assert } from '../src/errors';
import { FsError } from './fs-error';
import { HealOptions, HealReport, Healer } from './upkeep/heal';
import type { HealEntry } from './meta/chunk-map';
import { Io, NodeIo, StatfsResult } from './io/io';
import { LayoutError, overhead, parseLayout, shardCount } from '../src/layout';
import { SpaceLayout } from '../src/space-need';
import { DecodedChunks } from './chunks/chunk-transform';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from '../src/header';
import { Db } from './meta/meta';
import {
  MetaStatus,
  Reconnection,
  StoreLease,
  acquireLease,
  awaitWriterAnnouncing,
  checkNewMeta,
  commitPointOf,
  createMeta,
  dataOpsOf,
  metaStatus,
  namespaceOpsOf,
  metaOutageAfterFailure,
  onMetaReconnect,
  openStoreMeta,
  parseMetaArg,
  redactedUrl,
  upgradeStoreMeta,
} from './meta/engine-open';

import { MkfsStaging } from './mkfs-staging';
import { checkKeyFileTarget } from './store-key';
import type { NamespaceBase } from './meta/ops-base';
import { Skipped } from './disk-ids';
import { recordWatermark, skipIdsSeenOnDisks, skippedIds } from './restored-meta';
import { RecoveryReport, emptyRecoveryReport, recover } from './upkeep/recovery';
import { replayLog } from './upkeep/log-replay';
import { INTENT_LOG_BYTES_DEFAULT, IntentLog } from './chunks/intent-log';
import { IntentLogTail } from './meta/intent-log-tail';
import type { LogRecord } from '../src/intent-record';
import { ShardStore } from './chunks/shard-store';
import { CommitLog, FLUSH_DELAY_MS, GROUP_COMMIT_MS } from './meta/commit-log';
import { LeakReport, emptyLeakReport, scanLeaks } from './upkeep/leak-scan';
import { QuarantineSweeper, graceMsOf } from './upkeep/quarantine';
import { ScrubOptions, scrubChunks } from './upkeep/scrub';
import { NeedleScrubReport, emptyNeedleScrubReport, scrubNeedles } from './upkeep/scrub-needles';
import { ReclaimReport, Reclaimer } from './upkeep/reclaim';
import { ReclaimQueue } from './meta/reclaim-queue';
import { InflightVersions } from './chunks/inflight-versions';
import { GROUP_DIRTY_BYTES_DEFAULT_MAX, GROUP_INTERVAL_MS, GROUP_RAM_DIVISOR, TxGroups } from './chunks/tx-group';
import * as os from 'node:os';
import { DamageKind, DamageReport, damageShard, shardByteOf } from './upkeep/shard-damage';
import { NEEDLE_HEADER_BYTES } from '../src/needle';
import type { Slice } from '../src/slice';
import { CompactReport, Compactor } from './small/compactor';
import { ByteRange, punchHole } from './chunks/punch';
import type { CommitTimes } from './meta/commit-times';
import { Allocated, PendingRange, SeekWhat } from './meta/allocated';
import { BACKLOG_BYTES_MAX, BACKLOG_INTENTS_MAX, IntentBacklog } from './chunks/intent-backlog';
import { Applier } from './chunks/applier';
import { Preallocated } from './meta/prealloc';
import { Changed, Follower, backlogFromLog } from './follower';

export const META_FILE = 'meta.db';
/** Transports of one store in one process (a mount has one). */
const READ_CHANGE_LISTENERS_MAX = 4;

/** Scrub's report: the shards (HealReport) and the paths whose mode lets other users in. */
export interface ScrubReport extends HealReport {
  /** With repair, looseModes.fixed of them were made owner-only. */
  looseModes: LooseModes;
  /** Every small file's needle read back and checked (magic, file_id, cookie, crc; spec §11.4). */
  needles: NeedleScrubReport;
  /** Shard and temp files nothing accounts for (with repair, removed). */
  leaks: LeakReport;
}

export interface StoreOpenOptions {
  io?: Io;
  /** The small files' I/O (config, key, markers, lock; store/io/sync-io.ts); a live mount passes an injectable one. */
  syncIo?: SyncIo;
  readOnly?: boolean;
  healer?: boolean;
  /**
   * Background work of a live mount: the timer's full commit (at most 5 s after a change, DESIGN §5)
   * and the reclaimer. Off by default so tests see only the I/O they cause.
   */
  background?: boolean;
  /** One line per event worth telling the operator (modes tightened, stale lock taken over). */
  log?: (line: string) => void;
  /** false: nothing is applied in the background, only by applyNow() and at close (tests; recovery benchmarks at the bound). Default true. */
  applier?: boolean;
  /** What the store is opened for, kept in the lock (store/store-lock.ts), e.g. "mount /mnt/x". */
  lockNote?: string;
  /** The store key file given at mount time (-o keyfile=); default: the one the config names. */
  keyFile?: string;
  /** Metadata on PostgreSQL: how long the lease lasts unrenewed (store/meta/postgres/lease.ts; tests shorten it). */
  leaseMs?: number;
  /**
   * With readOnly, on PostgreSQL: follow the lease holder's commits (DESIGN §9, store/follower.ts), for
   * a read-only mount while another process, here or on another machine, writes.
   */
  follow?: boolean;
}

export interface StoreCreateOptions {
  disks?: number | string[];
  layout?: string;
  chunkSizeBytes?: number;
  bitrotBlockBytes?: number;
  ecBlockSizeBytes?: number;
  /** Files up to this size are packed as needles (DESIGN §5); 0: never. Default 64 KiB. */
  smallFileMaxBytes?: number;
  /** Container capacity (spec §11.6; tests use small ones). */
  containerCapacityBytes?: number;
  /** The intent log file's size (SQLite stores, DESIGN §5; tests use small ones). Default 64 MiB. */
  intentLogBytes?: number;
  /** Keep the store key there instead of in the store directory (mkfs --keyfile). */
  keyFile?: string;
  /** Metadata on PostgreSQL at this libpq URI, without a password (mkfs --meta; DESIGN §9). Default: SQLite. */
  meta?: string;
  io?: Io;
}

/** chunkfs heal --list: a queued shard, where its file is, and when the background healer tries it next. */
export type HealQueueEntry = Omit<HealEntry, 'version'> & {
  version: string;
  path: string | null;
  nextTryMs: number | null;
};

/** status's fields read from the metadata database. */
export interface MetaDerivedStatus {
  layoutsInUse: Array<{ layout: string; files: number }>;
  /** Live chunks stored transformed (spec §3.1 bits 1, 2), by what was applied: count, raw and stored bytes. */
  transformedChunks: Array<{ transforms: string; chunks: number; rawBytes: number; storedBytes: number }>;
  healQueueLength: number;
  /** Intents in the metadata and the intent log not yet in the shards. */
  openIntents: number;
  /** Chunk versions waiting for background deletion (DESIGN §5 reclaim queue). */
  reclaimBacklog: number;
  /** Small-file containers (spec §11): by state, live and dead bytes; backlog: sealed ones due for compaction. */
  containers: ContainerStatus;
  counters: Record<CounterName, number>;
}

/**
 * The same fields while the metadata server is unreachable: each null (unknown), never a zero that
 * is not known (DESIGN §9 "A broken connection").
 */
export type UnknownMetaStatus = { [K in keyof MetaDerivedStatus]: null };

export interface ContainerStatus {
  open: number;
  full: number;
  sealed: number;
  liveBytes: number;
  deadBytes: number;
  compactionBacklog: number;
}

export type StatusReport = LocalStatus & MetaDerivedStatus;
/** The metadata-derived fields are known (all or none are). */
function metaKnown(r: OperatorStatus): r is StatusReport {
  return r.counters !== null;
}

/** `chunkfs status`: the metadata-derived fields unknown while its server is unreachable. */
export type OperatorStatus = LocalStatus & (MetaDerivedStatus | UnknownMetaStatus);

/** status's fields kept by this process or the disks: known while the metadata server is down. */
export interface LocalStatus {
  disks: Array<{
    id: number;
    path: string;
    epoch: number;
    totalBytes: number;
    freeBytes: number;
    availBytes: number;
    state: string;
    errors: number;
    lastError: string;
  }>;
  /**
   * Intents durable in the log and not yet in the shards (DESIGN §5): count and span bytes against
   * their bounds, what the applier wrote since open and its mean rate, its last error; SQLite stores:
   * the intent log file's commits (device flushes) and bytes written since open.
   */
  intentBacklog: {
    intents: number;
    bytes: number;
    intentsMax: number;
    bytesMax: number;
    appliedIntents: number;
    appliedBytes: number;
    appliedChunks: number;
    rateBytesPerSec: number;
    lastError: string;
    logFlushes: number;
    logBytesWritten: number;
  };
  /** Full commits (WAL flushes) since open. */
  metadataFlushes: number;
  /** Transaction groups closed since open (DESIGN §5). */
  groupsClosed: number;
  /** Errors of the background compaction rounds since open, and the last one (DESIGN §5 "Small files"). */
  compaction: { errors: number; lastError: string };
  /** The metadata engine and where it is; on PostgreSQL the lease's holder (DESIGN §9). */
  metadata: MetaStatus;
}

export class Store {
  readonly ns: NamespaceBase;
  /** Chunk size of new files (the store default; fs/store-port.ts). */
  get defaultChunkSizeBytes(): number {
    return this.ns.opts.defaults.chunkSizeBytes;
  }
  recoveryReport: RecoveryReport = emptyRecoveryReport();
  private readonly env: ChunkEnv;
  /** Seals and opens the log records of encrypting layouts: intent rows and the intent log file (DESIGN §10). */
  private readonly recordKeys: LogRecordKeys;
  private readonly files: FileIo;
  private readonly healer: Healer;
  private readonly reclaimer: Reclaimer;
  private readonly compactor: Compactor;
  private readonly allocated: Allocated;
  private readonly applier: Applier;
  private readonly prealloc: Preallocated;
  private closed = false;
  /** One line per event worth telling the operator (StoreOpenOptions.log). */
  private log: (line: string) => void = (line) => process.stderr.write(`chunkfs: ${line}\n`);
  /** Held while open read-write (store/store-lock.ts); null when read-only. */
  private lock: StoreLock | null = null;
  /** Held while open read-write on PostgreSQL (DESIGN §9 lease); null on SQLite and read-only. */
  private lease: StoreLease | null = null;
  /** A live mount's deletion of quarantine folders past their grace period (DESIGN §4); null otherwise. */
  private sweeper: QuarantineSweeper | null = null;
  /** Open read-only following a writer (DESIGN §9); null otherwise. */
  private follower: Follower | null = null;
  /** Why this read-write opener lost the store's lease (DESIGN §9 "Lease and fencing"); null while it holds it. */
  leaseLost: string | null = null;
  /** st_dev of each disk directory by path (statfs counts a filesystem once). */
  private readonly diskDevs = new Map<string, number>();

  private constructor(
    readonly dir: string,
    private readonly opened: OpenedConfig,
    private readonly db: Db,
    readonly io: Io,
    readonly syncIo: SyncIo,
  ) {
    const { config } = opened;
    const health = new DiskHealth();
    const shards = new ShardStore(io, opened.key, opened.diskPaths, health);
    const commits = new CommitLog(db, commitPointOf(db, io, nodePath.join(dir, `${META_FILE}-wal`)));
    this.recordKeys = new LogRecordKeys(opened.storeKey);
    const map = new ChunkMap(db, this.recordKeys);
    const env: Omit<ChunkEnv, 'groups'> & { groups?: TxGroups } = {
      db,
      shards,
      map,
      fileRows: dataOpsOf(db).fileRows(),
      counters: new Counters(db),
      health,
      commits,
      reclaim: new ReclaimQueue(db),
      inflight: new InflightVersions(),
      backlog: new IntentBacklog(),
      intentLog: null,
      storeKey: opened.storeKey,
      decoded: new DecodedChunks(opened.storeKey),
    };
    env.groups = new TxGroups(env as ChunkEnv, config.defaults.groupDirtyBytesMax ?? groupDirtyBytesDefault());
    this.env = env as ChunkEnv;
    this.env.map.pending = this.env.groups;
    this.files = new FileIo(
      this.env,
      config.disks.map((d) => ({ id: d.id, epoch: d.epoch })),
      {
        smallFileMaxBytes: config.defaults.smallFileMaxBytes ?? 0, // stores made before small-file packing: no packing
        containerCapacityBytes: config.defaults.containerCapacityBytes ?? DEFAULT_CONTAINER_CAPACITY_BYTES,
        containerChunk: { ...config.defaults, clusterMapEpoch: config.clusterMapEpoch },
      },
    );
    const changed = (): void => this.readsChanged();
    this.env.map.onChange = changed;
    shards.onChange = changed;
    health.onChange = changed;
    this.env.backlog.onChange = changed;
    this.applier = new Applier(this.env, this.files, (line) => this.log(line));
    this.compactor = new Compactor(this.env, this.files);
    this.compactor.log = (line) => this.log(line);
    this.prealloc = new Preallocated(db);
    this.allocated = new Allocated(this.env.db, this.env.map, config.defaults.smallFileMaxBytes ?? 0, this.prealloc);
    this.reclaimer = new Reclaimer(this.env, (seed, epoch, c, count) => this.files.placement(seed, epoch, c, count));
    this.healer = new Healer(
      this.env,
      this.files,
      () => this.checkDisks(true),
      (line) => this.log(line),
      (ino) => this.ns.pathOf(ino),
    );
    this.ns = namespaceOpsOf(db, {
      defaults: config.defaults,
      clusterMapEpoch: config.clusterMapEpoch,
      checkLayout: (text) => this.checkLayout(text),
      layoutChanged: (ino) => this.files.forget(ino),
    });
    this.ns.pendingSize = (ino) => this.env.groups.pendingSize(ino);
    this.env.groups.onCommitted = (ino) => this.files.forget(ino);
    this.env.groups.onError = (err) => this.log(`chunkfs: a transaction group could not keep a write: ${err.message}`);
  }

  /** A layout this store can hold, else FsError EINVAL. */
  private checkLayout(text: string): void {
    try {
      const l = parseLayout(text);
      const disks = this.opened.config.disks.filter((d) => d.epoch <= this.opened.config.clusterMapEpoch).length;
      if (shardCount(l) > disks)
        throw new FsError('EINVAL', `layout ${text} needs ${shardCount(l)} disks, the store has ${disks}`);
      if (l.transforms.encryption !== null && this.opened.storeKey === null) {
        throw new FsError(
          'EINVAL',
          `layout ${text} encrypts, and this store was made without a store key: make a new store for encrypted files`,
        );
      }
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
      defaults: {
        layout: opts.layout,
        chunkSizeBytes: opts.chunkSizeBytes,
        bitrotBlockBytes: opts.bitrotBlockBytes,
        ecBlockSizeBytes: opts.ecBlockSizeBytes,
        smallFileMaxBytes: opts.smallFileMaxBytes,
        containerCapacityBytes: opts.containerCapacityBytes,
        intentLogBytes: opts.intentLogBytes,
      },
    };
    for (const k of Object.keys(createOpts.defaults!) as Array<keyof typeof createOpts.defaults>) {
      if (createOpts.defaults![k] === undefined) delete createOpts.defaults![k];
    }
    createOpts.keyFile = opts.keyFile;
    // A bad connection string, an unreachable or non-empty database, a key file in a missing
    // directory: each fails here, before anything is written.
    createOpts.meta = opts.meta === undefined ? undefined : parseMetaArg(opts.meta);
    checkNewMeta(createOpts.meta);
    if (opts.keyFile !== undefined) checkKeyFileTarget(nodeSyncIo, opts.keyFile);
    // Built beside dir and moved there at the end: a failed mkfs leaves nothing (docs/design.md §4).
    const staging = MkfsStaging.begin(nodeSyncIo, nodePath.resolve(dir));
    try {
      const config = createConfig(staging, createOpts);
      const metaPath = nodePath.join(staging.dir, META_FILE);
      // Created 0600 before SQLite sees it: SQLite gives meta.db-wal and -shm the mode of the database file.
      if (createOpts.meta === undefined) nodeSyncIo.createExclusive(metaPath, Buffer.alloc(0));
      createMeta(metaPath, createOpts.meta, config.storeUuid!);
      staging.commit();
    } catch (err) {
      staging.abandon();
      throw err;
    }
    return Store.open(dir, { io: opts.io, keyFile: opts.keyFile });
  }

  /**
   * Open and run recovery (report in store.recoveryReport). Read-write opens take the
   * store lock (one writer at a time); every problem with the config, key or lock is
   * reported before anything on disk changes.
   */
  static async open(dir: string, opts: StoreOpenOptions = {}): Promise<Store> {
    await loadHighway();
    const readOnly = opts.readOnly ?? false;
    const syncIo = opts.syncIo ?? nodeSyncIo;
    const opened = openConfig(dir, syncIo, opts.keyFile);
    const metaPath = nodePath.join(dir, META_FILE);
    const metaTarget = opened.config.meta; // DESIGN §9: the engine recorded at mkfs
    if (metaTarget === undefined && syncIo.stat(metaPath) === null)
      throw new ConfigError(metaPath, 'metadata database missing; refusing to start an empty one');
    const log = opts.log ?? ((line: string) => process.stderr.write(`chunkfs: ${line}\n`));
    Store.makePrivate(dir, opened, syncIo, log);
    if (opts.follow === true && (!readOnly || metaTarget === undefined)) {
      throw new ConfigError(
        dir,
        readOnly
          ? 'a read-only mount follows a writer only when the metadata is on PostgreSQL (chunkfs meta copy moves it there); this store keeps it in meta.db on the machine that writes it'
          : 'following a writer needs a read-only open',
      );
    }
    // On PostgreSQL the lease, taken below, decides between hosts; the lock file between processes here.
    const lock = readOnly
      ? null
      : StoreLock.acquire(dir, syncIo, opts.lockNote, thisHost(syncIo), metaTarget !== undefined);
    let db: Db | null = null;
    let lease: StoreLease | null = null;
    try {
      // Before anything changes: the metadata is this store's (DESIGN §4 "Identity"). Recovers an
      // unusable -shm, else says what to do.
      db = openStoreMeta(metaPath, metaTarget, readOnly, syncIo, log, opened.config.storeUuid, opts.follow === true);
      if (!readOnly) {
        adoptLegacyStore(dir, opened, syncIo);
        upgradeStoreMeta(db, opened.config.storeUuid!);
      }
      // Before recovery replays anything: the lease makes this the only writer (DESIGN §9).
      lease = readOnly ? null : acquireLease(db, opts.lockNote ?? `open ${dir}`, log, opts.leaseMs);
      const store = new Store(dir, opened, db, opts.io ?? new NodeIo(), syncIo);
      store.lock = lock;
      if (lease !== null) store.holdLease(lease, metaTarget!.url);
      if (opts.log !== undefined) store.log = opts.log;
      onMetaReconnect(db, (r) => store.metaReconnected(r));
      store.checkDisks(false);
      if (opts.applier === false || readOnly) store.applier.held = true;
      // A read-only open applies nothing but shows what the log holds (one view, DESIGN §5).
      if (readOnly) store.loadLogForReading();
      if (opts.follow === true) await store.follow(metaTarget!.url);
      const logRecords = db.caps.intentLogInFile ? await store.openIntentLog(readOnly) : [];
      if (!readOnly) {
        // Before recovery or anything served: metadata older than its disks numbers new files above theirs.
        await store.skipIdsSeen(logRecords.map((r) => r.ino));
        store.recoveryReport = await recover(store.env, store.files, store.applier, store.ns.orphans(), logRecords);
        // Half-made sealed copies go; containers left full are sealed now (spec §11.5).
        store.compactor.dropUnfinishedSeals();
        for (const r of store.files.containers.inState('full')) {
          await store.compactor
            .seal(r.id, store.recoveryReport.containers)
            .catch((err) => store.recoveryReport.errors.push(`seal container ${r.id}: ${(err as Error).message}`));
        }
        if (opts.healer === true) store.healer.start();
        if (opts.background === true) store.startBackground();
      }
      return store;
    } catch (err) {
      lease?.release();
      db?.close();
      lock?.release();
      throw err;
    }
  }

  /**
   * SQLite stores: the intent log file (DESIGN §5), its records to replay; a read-only opener
   * overlays them at once (one view) and writes nothing.
   */
  private async openIntentLog(readOnly: boolean): Promise<LogRecord[]> {
    const { config } = this.opened;
    if (config.storeUuid === undefined) return []; // a store made before markers keeps intents in rows
    const opened = await IntentLog.open(
      this.io,
      this.dir,
      config.storeUuid,
      config.defaults.intentLogBytes ?? INTENT_LOG_BYTES_DEFAULT,
      new IntentLogTail(this.db),
      this.env.commits,
      readOnly,
      (line) => this.log(line),
      this.recordKeys,
    );
    if (opened === null) return [];
    const log = opened.log;
    this.env.intentLog = log;
    this.env.backlog.onLogRecordsGone = (seqs) => log.release(seqs);
    log.onFull = () => void this.applier.drain();
    if (readOnly) await replayLog(this.env, this.files, opened.replay, emptyRecoveryReport(), true);
    return opened.replay;
  }

  /**
   * Stores made before private modes were world-readable: clear group/other bits on the store's top
   * paths (disk directories guard every shard beneath them) and log one line, or refuse.
   */
  private static makePrivate(dir: string, opened: OpenedConfig, io: SyncIo, log: (line: string) => void): void {
    const top = [dir, nodePath.join(dir, CONFIG_FILE), keyPath(dir, opened.config), nodePath.join(dir, LOCK_FILE)];
    if (opened.config.storeKey?.file !== undefined) top.push(nodePath.resolve(dir, opened.config.storeKey.file));
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
      const problem =
        config.storeUuid === undefined
          ? this.syncIo.stat(root) !== null
            ? null
            : `directory ${root} is missing (device not mounted?)`
          : diskProblem(this.syncIo, root, config.storeUuid, d.id);
      // An intent left open by recovery may mean a replica on this disk holds old blocks that
      // still verify: an offline disk comes back only at an open, whose recovery resolves the intent first.
      if (problem === null && health.unavailable(d.id) !== undefined && this.openIntents() > 0) continue;
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
    if (diskProblem(this.syncIo, root, uuid, diskId) === null)
      throw new FsError('EINVAL', `disk ${diskId} (${root}) is not offline; nothing to replace`);
    let entries: string[];
    try {
      entries = this.syncIo.readdir(root);
    } catch (err) {
      throw new ConfigError(
        root,
        `replacement disk directory must exist (mount the new device there): ${(err as Error).message}`,
      );
    }
    if (entries.length > 0)
      throw new ConfigError(root, `replacement disk directory must be empty, it holds ${entries.length} entries`);
    writeMarker(this.syncIo, root, uuid, diskId);
    this.env.health.setAvailable(diskId);
  }

  /**
   * replace-disk: adopt newPath (an empty or new directory) for offline disk diskId, which
   * keeps its id and so its placement slot (DESIGN §3); the config names the new path from now on.
   * Then rebuild every shard placed on it (scrub --repair of that disk only), with progress.
   */
  async replaceDiskWith(
    diskId: number,
    newPath: string,
    opts: Omit<ScrubOptions, 'repair' | 'onlyDisk'> = {},
  ): Promise<HealReport> {
    const root = this.opened.diskPaths.get(diskId);
    if (root === undefined)
      throw new FsError(
        'EINVAL',
        `no disk ${diskId} in this store (disks: ${[...this.opened.diskPaths.keys()].join(', ')})`,
      );
    if (this.lock === null) throw new FsError('EROFS', 'replace-disk needs the store open read-write');
    const resolved = nodePath.resolve(this.dir, newPath);
    if (resolved !== root) {
      const problem = diskProblem(this.syncIo, root, this.opened.config.storeUuid!, diskId);
      if (problem === null) throw new FsError('EINVAL', `disk ${diskId} (${root}) is not offline; nothing to replace`);
      refuseSharedDiskDir(this.syncIo, resolved);
      this.syncIo.mkdirPrivate(resolved);
      this.syncIo.chmod(resolved, PRIVATE_DIR_MODE);
      const entries = this.syncIo.readdir(resolved);
      if (entries.length > 0)
        throw new ConfigError(resolved, `replacement disk directory must be empty, it holds ${entries.length} entries`);
      setDiskPath(this.dir, this.opened, diskId, resolved, this.syncIo);
    }
    this.replaceDisk(diskId);
    return scrubChunks(this.env, this.healer, { ...opts, repair: true, onlyDisk: diskId });
  }

  /** Metadata against shards (store/upkeep/fsck.ts). */
  async fsck(opts: FsckOptions = {}): Promise<FsckReport> {
    // Judge committed state only: the open transaction group is closed first (DESIGN §5).
    if (this.lock !== null) await this.env.groups.close();
    return fsck(
      {
        env: this.env,
        files: this.files,
        healer: this.healer,
        onlineRoots: () =>
          this.opened.config.disks
            .filter((d) => this.env.health.unavailable(d.id) === undefined)
            .map((d) => this.opened.diskPaths.get(d.id)!),
        orphans: () => this.ns.orphans(),
        deleteFile: (ino) => this.deleteFile(ino),
        reclaimNow: () => this.reclaimNow(),
        quarantineGraceMs: this.quarantineGraceMs,
        skippedIds: () => this.skippedIds(),
      },
      opts,
    );
  }

  /** DESIGN §4 "Restored metadata": the disks' ids against this metadata's, at a read-write open. */
  private async skipIdsSeen(logInos: number[]): Promise<void> {
    const storeUuid = this.opened.config.storeUuid;
    if (storeUuid === undefined) return; // a store made before ids: its disks record none
    const { syncIo, db, dir: storeDir, log } = this;
    const flush = (): Promise<void> => this.env.commits.flush();
    await skipIdsSeenOnDisks({ syncIo, db, roots: this.onlineRoots(), storeUuid, storeDir, log, flush }, logInos);
  }

  /** At a clean close: the watermark on every online disk; a disk that cannot take it is logged, not fatal. */
  private async recordWatermark(): Promise<void> {
    const storeUuid = this.opened.config.storeUuid;
    if (storeUuid === undefined) return;
    const flush = (): Promise<void> => this.env.commits.flush();
    const roots = this.onlineRoots();
    const failed = await recordWatermark({ syncIo: this.syncIo, db: this.db, roots, storeUuid, flush });
    if (failed.length > 0) this.log(`the file id watermark was not recorded on ${failed.join('; ')}`);
  }

  /** Disk directories of the disks that are online. */
  private onlineRoots(): string[] {
    const online = this.opened.config.disks.filter((d) => this.env.health.unavailable(d.id) === undefined);
    return online.map((d) => this.opened.diskPaths.get(d.id)!);
  }

  /** File ids skipped after a restore, as the online disks record them (store/restored-meta.ts). */
  private skippedIds(): Skipped {
    const uuid = this.opened.config.storeUuid;
    return uuid === undefined ? { inos: [], versions: [] } : skippedIds(this.syncIo, this.onlineRoots(), uuid);
  }

  /** How long the leak scan's quarantine keeps what it removed (store tunable quarantineGraceDays, DESIGN §4). */
  private get quarantineGraceMs(): number {
    return graceMsOf(this.opened.config.defaults.quarantineGraceDays);
  }

  /** Check every disk's identity now (a disk taken offline or brought back, chunkfs inject). */
  refreshDisks(): void {
    this.checkDisks(false);
  }

  /** The commit timer and the reclaimer (a live mount). */
  startBackground(): void {
    this.env.commits.start(FLUSH_DELAY_MS, this.opened.config.defaults.metaGroupMs ?? GROUP_COMMIT_MS);
    // Transaction groups by default (DESIGN §5); chunkfs.json defaults.transactionGroups false opts out.
    const { transactionGroups, groupIntervalMs } = this.opened.config.defaults;
    if (transactionGroups !== false) this.env.groups.start(groupIntervalMs ?? GROUP_INTERVAL_MS);
    this.reclaimer.start();
    this.compactor.start();
    this.sweeper = new QuarantineSweeper(
      this.io,
      () => this.onlineRoots(),
      this.quarantineGraceMs,
      (line) => this.log(line),
    );
    this.sweeper.start();
  }

  /**
   * Whole-chunk writes join transaction groups (DESIGN §5) closed only at the dirty-byte bound, sync
   * and close (startBackground adds the timer): the crash tests step through a group's close.
   * syncfsFilesMin: lowered, a test's small group flushes its file system with one syncfs.
   */
  startGroups(syncfsFilesMin?: number): void {
    if (syncfsFilesMin !== undefined) this.env.groups.syncfsFilesMin = syncfsFilesMin;
    this.env.groups.start(null);
  }

  /**
   * Metadata operations commit in groups of up to groupMs (DESIGN §5 "Group commit") without the
   * other background work of a live mount: the crash tests kill a store with a group open.
   */
  startMetaGroups(groupMs: number): void {
    this.env.commits.groupCommits(groupMs);
  }

  /** Intents not yet in the shards: metadata rows and intent log records. */
  private openIntents(): number {
    return this.env.map.intentCount() + (this.env.intentLog?.liveRecords ?? 0);
  }

  /** The file's rows out of the open transaction group: the group closed when it holds them (DESIGN §5). */
  async commitStored(ino: number): Promise<void> {
    if (this.env.groups.holds(ino)) await this.env.groups.close();
  }

  /**
   * Every commit so far durable (fsync, fsyncdir, syncfs; group-committed). DESIGN §5. ino: fsync of
   * that file, which reports what a transaction group could not keep of it (EIO); without: the first
   * such error since the last sync without ino.
   */
  async sync(ino?: number): Promise<void> {
    const lost = await this.env.groups.sync(ino).then(
      () => null,
      (err: Error) => err,
    );
    await this.env.commits.flushIfDirty(); // what was kept is durable all the same
    if (lost !== null) throw lost;
  }

  /** The error a transaction group's close left for ino, once (close(2) reports it; DESIGN §5). */
  takeWriteError(ino: number): Error | null {
    return this.env.groups.takeError(ino);
  }

  /** Seal full containers and compact those past the dead ratio now (`chunkfs compact`, tests). */
  compact(): Promise<CompactReport> {
    return this.compactor.runOnce();
  }

  /** Read-only: the log's intents into the backlog, so reads overlay them; nothing is written. */
  private loadLogForReading(): void {
    backlogFromLog(this.env, this.files, this.env.map.intents());
    // A read-only opener records no failure (its database refuses writes): reads still fail over.
    this.env.counters.recordsNothing = true;
    this.env.map.recordsNothing = true;
  }

  private async follow(url: string): Promise<void> {
    this.follower = new Follower(url, this.env, this.files, this.ns, (line) => this.log(line));
    for (const fn of this.writerChangeListeners) this.follower.onChange(fn);
    this.follower.start();
    try {
      await awaitWriterAnnouncing(this.db, (line) => this.log(line));
    } catch (err) {
      this.follower.stop();
      throw err;
    }
  }

  /**
   * DESIGN §9 "Lease and fencing": shards are written or removed only while the lease is held, and
   * when it is found lost the store turns read-only (every change EROFS: the database refuses its
   * writes, the shard gate its shard writes), stops its background work and drops every cache, the
   * kernel is told to drop what it caches, and it follows the new holder's commits from then on, as
   * a read-only mount does (store/follower.ts).
   */
  private holdLease(lease: StoreLease, url: string): void {
    this.lease = lease;
    this.env.shards.writeGate = () => lease.checkHeld();
    lease.onLost((why) => this.loseLease(why, url));
  }

  private loseLease(why: string, url: string): void {
    this.leaseLost = why;
    this.applier.held = true;
    this.applier.stop();
    const stopped =
      (what: string) =>
      (err: unknown): void => {
        this.log(`stopping the ${what}: ${(err as Error).message}`);
      };
    void this.healer.stop().catch(stopped('healer'));
    void this.compactor.stop().catch(stopped('compactor'));
    void this.reclaimer.stop().catch(stopped('reclaimer'));
    this.env.map.forgetAll();
    this.files.forgetAll();
    this.env.shards.forgetAll();
    this.readsChanged(); // read grants end
    // Reads record no failure (the database refuses its writes), as a read-only opener's.
    this.env.counters.recordsNothing = true;
    this.env.map.recordsNothing = true;
    for (const fn of this.writerChangeListeners) fn('all');
    // After the statement that found the loss (it may be inside a pipeline: nothing else is sent then).
    setImmediate(() => {
      if (this.closed) return;
      this.follow(url).catch((err) => {
        this.follower = null;
        this.log(
          `cannot follow the new lease holder's changes on ${redactedUrl(url)}: ${(err as Error).message}; ` +
            "reads may show this mount's last view",
        );
      });
    });
  }

  /** Listeners of onMetaLoss (bounded: one per transport of this process). */
  private readonly metaLossListeners: Array<(why: string) => void> = [];

  /**
   * fn hears why, when the metadata server restarted or failed over and commits since the last fsync
   * may be lost (DESIGN §9 "A broken connection"): the mount has each file open then fail its next
   * fsync with EIO, as a device error does.
   */
  onMetaLoss(fn: (why: string) => void): void {
    assert(this.metaLossListeners.length < READ_CHANGE_LISTENERS_MAX, 'metadata loss listeners: one per transport');
    this.metaLossListeners.push(fn);
  }

  /**
   * DESIGN §9 "A broken connection": the connection to the metadata server was dialled again after it
   * broke, a crash of the metadata as this mount sees it. Nothing it cached of the database is
   * trusted (the server may hold less than it was told, after a crash): every cache is dropped and
   * the kernel is told to drop what it caches, as when the lease is lost; open files hear of a
   * possible loss; one log line says what happened.
   */
  private metaReconnected(r: Reconnection): void {
    this.env.map.forgetAll();
    this.files.forgetAll();
    this.env.shards.forgetAll();
    this.readsChanged(); // read grants end
    for (const fn of this.writerChangeListeners) fn('all');
    if (r.mayHaveLost !== null) for (const fn of this.metaLossListeners) fn(`${r.target}: ${r.mayHaveLost}`);
    const tries = `${r.tries} ${r.tries === 1 ? 'try' : 'tries'}`;
    const what =
      r.mayHaveLost === null
        ? 'nothing committed was lost; caches dropped'
        : `${r.mayHaveLost}: changes since then may be lost, as after a power loss; caches dropped, ` +
          'open files report EIO at their next fsync';
    this.log(`reconnected to the metadata database at ${r.target} after ${r.downMs} ms (${tries}); ${what}`);
  }

  /** Open read-only following a writer's commits (StoreOpenOptions.follow). */
  get followsWriter(): boolean {
    return this.follower !== null;
  }

  /** Listeners of readsChanged (bounded: one per transport of this process). */
  private readonly readChangeListeners: Array<() => void> = [];

  /** fn hears of every change a read could show (read grants end then: fs/fuse/read-grants.ts). */
  onReadChange(fn: () => void): void {
    assert(this.readChangeListeners.length < READ_CHANGE_LISTENERS_MAX, 'read change listeners are one per transport');
    this.readChangeListeners.push(fn);
  }

  /**
   * Something a read could show changed: chunk rows, intents, shard files, disk health, and from
   * outside the store, injected faults (cli/live-store.ts). Synchronous: a grant must end before
   * the change can be read.
   */
  readsChanged(): void {
    for (const fn of this.readChangeListeners) fn();
  }

  /** A read grant of the chunk of ino holding offsetBytes (store/chunks/read-grant.ts), or null; never on a follower. */
  readGrant(ino: number, offsetBytes: number): ReadGrantInfo | null {
    if (this.follower !== null || this.closed) return null;
    return this.files.readGrant(ino, offsetBytes);
  }

  /** Who hears of changes made by another writer (the mount: one per transport of this process). */
  private readonly writerChangeListeners: Array<(changed: Changed) => void> = [];

  /**
   * fn hears the inodes each of the followed writer's commits changed (a follower), and 'all' when
   * this opener lost the lease to another writer (DESIGN §9).
   */
  onWriterChange(fn: (changed: Changed) => void): void {
    assert(this.writerChangeListeners.length < READ_CHANGE_LISTENERS_MAX, 'writer change listeners: one per transport');
    this.writerChangeListeners.push(fn);
    this.follower?.onChange(fn);
  }

  /** Write every pending intent into its shards now (DESIGN §5 applier; tests, tools). */
  applyNow(): Promise<void> {
    return this.applier.drain();
  }

  /** Delete the shards of every queued chunk version that may go (tests, tools). */
  async reclaimNow(): Promise<ReclaimReport> {
    await this.files.deletesNow(); // deleted files' chunks join the queue first
    return this.reclaimer.drain();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      this.follower?.stop();
      this.env.groups.stop();
      if (this.lock !== null) await this.env.groups.close(); // what it could not keep is logged (onError)
      await this.files.deletesNow().catch(() => undefined); // what is left is an orphan: deleted at the next mount
      await this.healer.stop();
      await this.compactor.stop();
      await this.reclaimer.stop();
      await this.sweeper?.stop();
      // Unmount applies everything it can (the rest stays in the log); without the lease, nothing.
      if (this.lock !== null && this.leaseLost === null) await this.applier.drain();
      this.applier.stop();
      if (this.lock !== null) this.env.intentLog?.commitTailNow();
      await this.env.commits.stop();
      try {
        this.env.counters.flush();
      } catch {
        /* the batched counts of the last second: not worth failing the close for */
      }
      if (this.lock !== null) await this.env.commits.flushIfDirty().catch(() => undefined); // SQLite's close checkpoints too
      if (this.lock !== null && this.leaseLost === null)
        await this.recordWatermark().catch((err: Error) =>
          this.log(`the file id watermark was not recorded: ${err.message}`),
        );
      this.lease?.release();
      this.env.commits.close();
      this.db.close();
      await this.env.intentLog?.close().catch(() => undefined);
      await this.env.decoded.pool.close();
      (this.io as { closeAll?: () => void }).closeAll?.(); // NodeIo, or an Io wrapping one
    } finally {
      this.lock?.release();
    }
  }

  async read(ino: number, offsetBytes: number, lengthBytes: number): Promise<Buffer> {
    if (this.follower === null) return this.files.read(ino, offsetBytes, lengthBytes);
    const out = Buffer.alloc(lengthBytes);
    return out.subarray(0, await this.follower.readInto(ino, offsetBytes, out, 0));
  }
  /**
   * read(ino, offsetBytes, target.length - targetOffset) copied into target[targetOffset..]:
   * the byte count (short only at EOF; holes are written as zeros), at once (a number, no
   * promise) when the data is cached, else a promise; errors always reject. Verified through
   * pooled scratch buffers, failing over where a shard fails (store/file-io.ts readInto).
   * sizeBytes: read up to this size, not the committed one (the write-back's; DESIGN §5 prefix rule).
   */
  readInto(ino: number, offsetBytes: number, target: Buffer, targetOffset = 0, sizeBytes?: number): Maybe<number> {
    // A follower reads up to the writer's committed size, in an order that never serves stale bytes.
    if (this.follower !== null) return this.follower.readInto(ino, offsetBytes, target, targetOffset);
    return this.files.readInto(ino, offsetBytes, target, targetOffset, sizeBytes);
  }
  /**
   * Durable when it resolves, or, on a live mount, whole chunks at the close of their transaction
   * group (DESIGN §5; sync closes it); sizeBytes: the size to commit with it (DESIGN §5 prefix rule), else the
   * data's end; times: the mtime and ctime to commit with it (store/meta/commit-times.ts), else now.
   */
  write(ino: number, offsetBytes: number, data: Uint8Array, sizeBytes?: number, times?: CommitTimes): Promise<void> {
    return this.files.write(ino, offsetBytes, data, sizeBytes, times);
  }
  /** write() of parts laid back to back, not joined; null when this file's chunks cannot take them so (join, then write()). */
  writeParts(
    ino: number,
    offsetBytes: number,
    parts: readonly Uint8Array[],
    sizeBytes?: number,
    times?: CommitTimes,
  ): Promise<void> | null {
    return this.files.writeParts(ino, offsetBytes, parts, sizeBytes, times);
  }
  async truncate(ino: number, sizeBytes: number): Promise<void> {
    const shrinks = this.prealloc.shrinks(ino, sizeBytes);
    await this.files.truncate(ino, sizeBytes);
    if (shrinks) this.prealloc.clip(ino, sizeBytes);
  }
  /** Whole chunks in the range become holes (space freed); returns the partly covered parts, to zero. */
  punchHole(ino: number, offsetBytes: number, lengthBytes: number): Promise<ByteRange[]> {
    return punchHole(this.env, this.files, ino, offsetBytes, lengthBytes);
  }
  /** fallocate (mode 0, KEEP_SIZE): the range counts as the file's, as zeros written there would (store/meta/prealloc.ts). */
  preallocate(ino: number, offsetBytes: number, lengthBytes: number): void {
    this.prealloc.add(ino, offsetBytes, offsetBytes + lengthBytes);
  }
  /** A punch or zero range: whole chunks inside [offsetBytes, +lengthBytes) are no longer allocated. */
  unpreallocate(ino: number, offsetBytes: number, lengthBytes: number): void {
    this.prealloc.dropWhole(ino, offsetBytes, offsetBytes + lengthBytes);
  }
  /**
   * Logical bytes a file holds in live chunks or its needle (st_blocks; store/meta/allocated.ts), with the
   * ranges the mount holds in memory counted as they will be stored (DESIGN §5 "One view").
   */
  allocatedBytes(ino: number, pending?: readonly PendingRange[], sizeBytes?: number): number {
    return this.allocated.bytes(ino, pending, sizeBytes);
  }
  /** SEEK_DATA / SEEK_HOLE from the chunk map and the pending ranges; null: ENXIO (store/meta/allocated.ts). */
  seekData(
    ino: number,
    offsetBytes: number,
    sizeBytes: number,
    what: SeekWhat,
    pending?: readonly PendingRange[],
  ): number | null {
    return this.allocated.seek(ino, offsetBytes, sizeBytes, what, pending);
  }
  /** Chunk c's logical length (0: a hole): how far a whole-chunk rewrite must reach to keep its data. */
  chunkLengthBytes(ino: number, chunkIndex: number): number {
    return this.allocated.chunkLength(ino, chunkIndex);
  }
  /** Delete the data and inode of an unlinked (nlink 0) file once no handle holds it. */
  deleteFile(ino: number): Promise<void> {
    return this.files.deleteFile(ino);
  }

  /** Drain the heal queue now (every entry is tried, backoff or not), with progress. */
  heal(entriesMax?: number, opts: Omit<HealOptions, 'honourBackoff'> = {}): Promise<HealReport> {
    return this.healer.heal(entriesMax, opts);
  }
  /** The heal queue (first entriesMax, fewest attempts first) with paths and the healer's next try. */
  healQueue(entriesMax: number): HealQueueEntry[] {
    return this.env.map.healBatch(entriesMax).map((e) => {
      const next = this.healer.backoff.nextTryMs(e);
      return { ...e, version: e.version.toString(), path: this.pathOf(e.ino), nextTryMs: next ?? null };
    });
  }
  healChunk(ino: number, chunkIndex: number): Promise<HealReport> {
    return this.healer.healChunk(ino, chunkIndex, true);
  }
  /**
   * Verify every shard (store/upkeep/scrub.ts), then find shard files nothing accounts for and paths under
   * the disks whose mode lets others in; with repair, rebuild, remove and fix them.
   */
  async scrub(opts: ScrubOptions = {}): Promise<ScrubReport> {
    const repair = opts.repair ?? false;
    // Verify and judge committed state only: the open transaction group is closed first (DESIGN §5).
    if (this.lock !== null) await this.env.groups.close();
    const shards = await scrubChunks(this.env, this.healer, opts);
    if (shards.cancelled)
      return {
        ...shards,
        needles: emptyNeedleScrubReport(),
        leaks: emptyLeakReport(),
        looseModes: { count: 0, paths: [], fixed: 0 },
      };
    // After the chunk pass: with repair, a replica holding a bad needle was rebuilt from a good one.
    const needles =
      opts.onlyDisk === undefined
        ? await scrubNeedles(this.env, this.files, this.files.slices, opts.signal)
        : emptyNeedleScrubReport();
    if (opts.signal?.aborted === true)
      return {
        ...shards,
        cancelled: true,
        needles,
        leaks: emptyLeakReport(),
        looseModes: { count: 0, paths: [], fixed: 0 },
      };
    const roots = this.onlineRoots();
    // The leak scan judges durable metadata only: the open group of operations too (DESIGN §5 "Group commit").
    if (this.lock !== null) await this.env.commits.flushIfDirty();
    const leaks = await scanLeaks(this.env, roots, {
      repair,
      force: opts.force,
      graceMs: this.quarantineGraceMs,
      skippedIds: this.skippedIds(),
    });
    return { ...shards, needles, leaks, looseModes: await findLooseModes(this.io, roots, repair) };
  }
  startHealer(entriesPerSecond?: number): void {
    this.healer.start(entriesPerSecond);
  }
  stopHealer(): Promise<void> {
    return this.healer.stop();
  }

  /** status: live transformed chunks by flag bits (a chunk of a compressing layout that did not shrink is stored raw, not counted). */
  private transformedChunks(): StatusReport['transformedChunks'] {
    return this.env.map.storedCounts().map((c) => ({
      transforms: [
        (c.flags & FLAG_COMPRESSED) !== 0 ? 'compressed' : '',
        (c.flags & FLAG_ENCRYPTED) !== 0 ? 'encrypted' : '',
      ]
        .filter((x) => x !== '')
        .join('+'),
      chunks: c.chunks,
      rawBytes: c.rawBytes,
      storedBytes: c.storedBytes,
    }));
  }

  /**
   * What the store knows of itself: disks, backlogs, counters, the metadata engine. While the
   * metadata server is unreachable it still answers: what is kept here (disks, the intent log's
   * backlog, flushes), the metadata line saying since when and why, the fields the database holds
   * null (DESIGN §9 "A broken connection").
   */
  async operatorStatus(): Promise<OperatorStatus> {
    try {
      this.checkDisks(true);
    } catch (err) {
      if (metaOutageAfterFailure(this.db) === null) throw err; // an offline disk's recheck counts open intents
    }
    const disks = await this.diskStatus();
    const derived = this.metaDerivedStatus();
    return {
      disks,
      ...derived,
      intentBacklog: this.intentBacklog(),
      metadataFlushes: this.env.commits.flushCount,
      groupsClosed: this.env.groups.closeCount,
      compaction: { errors: this.compactor.roundErrors, lastError: this.compactor.lastError },
      metadata: metaStatus(this.db, nodePath.join(this.dir, META_FILE)),
    };
  }

  /** operatorStatus, every field known: a tool that needs them fails (EIO) while the metadata server is down. */
  async status(): Promise<StatusReport> {
    const r = await this.operatorStatus();
    if (!metaKnown(r))
      throw new FsError('EIO', `the metadata server ${r.metadata.location} is unreachable; try again once it is back`);
    return r;
  }

  private async diskStatus(): Promise<StatusReport['disks']> {
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
      disks.push({
        id: d.id,
        path,
        epoch: d.epoch,
        ...fsinfo,
        state: h.state,
        errors: h.errors,
        lastError: h.lastError,
      });
    }
    return disks;
  }

  /** status's fields the metadata database holds; all null when its server is unreachable. */
  private metaDerivedStatus(): MetaDerivedStatus | UnknownMetaStatus {
    try {
      return {
        layoutsInUse: surveyLayouts(this.db),
        transformedChunks: this.transformedChunks(),
        healQueueLength: this.env.map.healQueueLength(),
        openIntents: this.openIntents(),
        reclaimBacklog: this.env.reclaim.length,
        containers: this.containerStatus(),
        counters: this.env.counters.all(),
      };
    } catch (err) {
      if (metaOutageAfterFailure(this.db) === null) throw err;
      return {
        layoutsInUse: null,
        transformedChunks: null,
        healQueueLength: null,
        openIntents: null,
        reclaimBacklog: null,
        containers: null,
        counters: null,
      };
    }
  }

  private intentBacklog(): StatusReport['intentBacklog'] {
    const b = this.env.backlog;
    return {
      intents: b.lengthIntents,
      bytes: b.lengthBytes,
      intentsMax: BACKLOG_INTENTS_MAX,
      bytesMax: BACKLOG_BYTES_MAX,
      appliedIntents: b.appliedIntents,
      appliedBytes: b.appliedBytes,
      appliedChunks: b.appliedChunks,
      rateBytesPerSec: Math.round(this.applier.rateBytesPerSec),
      lastError: this.applier.lastError,
      logFlushes: this.env.intentLog?.flushCount ?? 0,
      logBytesWritten: this.env.intentLog?.bytesWritten ?? 0,
    };
  }

  private containerStatus(): ContainerStatus {
    const out = { open: 0, full: 0, sealed: 0, liveBytes: 0, deadBytes: 0, compactionBacklog: 0 };
    for (const r of this.files.containers.all()) {
      if (r.state === 'open' || r.state === 'full' || r.state === 'sealed') out[r.state]++;
      out.liveBytes += this.files.slices.liveBytesIn(r.id);
      out.deadBytes += r.deadBytes;
      const ratio = this.compactor.deadRatio;
      const due =
        r.deadBytes >= ratio * r.usedBytes &&
        r.deadBytes >= Math.min(this.compactor.deadBytesMin, ratio * r.capacityBytes);
      if ((r.state === 'sealed' || r.state === 'open') && due) out.compactionBacklog++;
    }
    return out;
  }

  /**
   * Usable space: raw space of all disks divided by the default layout's overhead. Each disk's
   * filesystem is asked at once (df and every fallocate ask: one after the other, 6 disks cost 12
   * thread-pool round trips, 2,200 statfs/s through the mount against 30,000 on passthrough_hp), and
   * the device of a disk directory is learnt once (disks on one filesystem count once).
   */
  async statfs(reservedRawBytes = 0): Promise<StatfsResult> {
    const factor = overhead(parseLayout(this.opened.config.defaults.layout));
    const sum = await this.rawStatfs();
    // Bytes the write-back reserved are taken already (DESIGN §5 "Space for buffered bytes").
    const freeBytes = Math.max(0, sum.freeBytes - reservedRawBytes);
    const availBytes = Math.max(0, sum.availBytes - reservedRawBytes);
    return {
      totalBytes: Math.floor(sum.totalBytes / factor),
      freeBytes: Math.floor(freeBytes / factor),
      availBytes: Math.floor(availBytes / factor),
    };
  }

  /** Raw space of the online disks (offline disks' space is not usable), each file system once. */
  async rawStatfs(): Promise<StatfsResult> {
    const online = [...this.opened.diskPaths].filter(([id]) => this.env.health.unavailable(id) === undefined);
    const devs = await Promise.all(online.map(([, path]) => this.diskDevOf(path)));
    const seen = new Set<number>();
    const counted = online.filter((_, i) => {
      if (seen.has(devs[i])) return false;
      seen.add(devs[i]);
      return true;
    });
    const stats = await Promise.all(counted.map(([, path]) => this.io.statfs(path)));
    const sum = { totalBytes: 0, freeBytes: 0, availBytes: 0 };
    for (const s of stats) {
      sum.totalBytes += s.totalBytes;
      sum.freeBytes += s.freeBytes;
      sum.availBytes += s.availBytes;
    }
    return sum;
  }

  /**
   * What the disk bytes of file ino's stored bytes follow (src/space-need.ts): its layout, chunk and
   * bitrot block sizes; the defaults when ino is no file of this store any more.
   */
  spaceLayoutOf(ino: number): SpaceLayout {
    try {
      return this.files.layoutOf(ino);
    } catch (err) {
      if (!(err instanceof FsError)) throw err;
      const d = this.opened.config.defaults;
      return { layout: parseLayout(d.layout), chunkSizeBytes: d.chunkSizeBytes, bitrotBlockBytes: d.bitrotBlockBytes };
    }
  }

  /** st_dev of a disk directory, learnt once per path (replace-disk moves a disk to a new path; -1, not kept, when it cannot be statted). */
  private async diskDevOf(path: string): Promise<number> {
    const known = this.diskDevs.get(path);
    if (known !== undefined) return known;
    const dev = (await this.io.stat(path))?.dev ?? -1;
    if (dev !== -1) this.diskDevs.set(path, dev);
    return dev;
  }

  /** Shard file path of (ino, chunk, shard) for the live version: tools and fault-injection tests. */
  shardPath(ino: number, chunkIndex: number, shardIndex: number): Promise<string | null> {
    return this.files.withChunk(ino, chunkIndex, async (ref) =>
      ref === null ? null : this.env.shards.path(ref, shardIndex),
    );
  }
  /** Disk directories by id. */
  diskPaths(): ReadonlyMap<number, string> {
    return this.opened.diskPaths;
  }

  /** One path of an inode in the namespace ('/a/b'), or null when it has no name (store/meta/ops.ts pathOf). */
  pathOf(ino: number): string | null {
    return this.ns.pathOf(ino);
  }

  /**
   * Damage one shard of a stored chunk on purpose (chunkfs inject, store/upkeep/shard-damage.ts); shardIndex
   * undefined: the shard a read tries first.
   */
  async damageShard(
    ino: number,
    chunkIndex: number,
    shardIndex: number | undefined,
    kind: DamageKind,
    blockIndex = 0,
  ): Promise<DamageReport> {
    // The intent log first (DESIGN §5): damage goes into the stored bytes a read will meet, not into
    // blocks a pending intent still covers (and the needle is then in its container's shards for inspect).
    await this.applier.drain();
    // And the transaction group holding the file's chunks closes first: damage goes into committed
    // shards, not into a shard file the group has still to flush (DESIGN §5).
    await this.commitStored(ino);
    const slice = this.files.slices.get(ino);
    if (slice !== null) return this.damageNeedle(ino, slice, chunkIndex, shardIndex, kind);
    return this.files.withChunk(ino, chunkIndex, async (ref) => {
      if (ref === null)
        throw new FsError(
          'ENOENT',
          `file ${ino} has no stored chunk ${chunkIndex} (a hole, past its end, or not a regular file)`,
        );
      return damageShard(this.env, ref, shardIndex, kind, blockIndex);
    });
  }

  /** Where a small file's needle is (spec §11.3): its container, the chunk and offset there; null when not packed. */
  needleOf(ino: number): { containerIno: number; chunkIndex: number; offsetBytes: string; lengthBytes: number } | null {
    const slice = this.files.slices.get(ino);
    if (slice === null) return null;
    const cid = Number(slice.containerId);
    const cs = BigInt(this.files.layoutOf(cid).chunkSizeBytes);
    return {
      containerIno: cid,
      chunkIndex: Number(slice.offsetBytes / cs),
      offsetBytes: slice.offsetBytes.toString(),
      lengthBytes: slice.lengthBytes,
    };
  }

  /** A small file packed as a needle (spec §11): the container chunk holding it, at the middle of its data. */
  private damageNeedle(
    ino: number,
    slice: Slice,
    chunkIndex: number,
    shardIndex: number | undefined,
    kind: DamageKind,
  ): Promise<DamageReport> {
    if (chunkIndex !== 0)
      throw new FsError(
        'EINVAL',
        `file ${ino} is packed as a needle (${slice.lengthBytes} bytes): it has only chunk 0`,
      );
    const cid = Number(slice.containerId);
    const cs = BigInt(this.files.layoutOf(cid).chunkSizeBytes);
    const c = Number(slice.offsetBytes / cs);
    // The first byte of the needle's data, so a read of the file meets it (spec §11.2: data follows the needle header).
    const offIn =
      Number(slice.offsetBytes % cs) +
      NEEDLE_HEADER_BYTES +
      (slice.lengthBytes > 0 ? Math.floor(slice.lengthBytes / 2) : 0);
    return this.files.withChunk(cid, c, async (ref) => {
      if (ref === null) throw new FsError('EIO', `file ${ino}: its container ${cid} has no stored chunk ${c}`);
      const at = shardByteOf(ref, offIn, shardIndex);
      const r = await damageShard(
        this.env,
        ref,
        at.shardIndex,
        kind,
        0,
        kind === 'data' || kind === 'hash' ? at.shardOffsetBytes : undefined,
      );
      return { ...r, needle: { containerIno: cid, offsetBytes: slice.offsetBytes.toString() } };
    });
  }
}

/** The default dirty-byte bound of a transaction group: min(1 GiB, 10% of RAM) (DESIGN §5). */
function groupDirtyBytesDefault(): number {
  return Math.min(GROUP_DIRTY_BYTES_DEFAULT_MAX, Math.floor(os.totalmem() / GROUP_RAM_DIVISOR));
}
