// Store config chunkfs.json and the bitrot key file (DESIGN §3, §4).
// The key file holds the 32 raw random bytes of the cluster bitrot key K, mode 0600.
import * as crypto from 'node:crypto';
import * as path from 'node:path';
import { ChunkfsError } from '../src/errors';
import { BITROT_KEY_BYTES, BitrotKey, parseBitrotKey } from '../src/keying';
import { Layout, parseLayout, shardCount } from '../src/layout';
import { markerPath, writeMarker } from './disk-identity';
import type { MkfsStaging } from './mkfs-staging';
import { refuseSharedDiskDir } from './io/private-modes';
import { statToMake } from './mkfs-path';
import { MetaTarget } from './meta-target';
import { StoreKeyRef, checkKeyRef, createStoreKey, loadStoreKey } from './store-key';
import { SyncIo, nodeSyncIo } from './io/sync-io';

export const CONFIG_FILE = 'chunkfs.json';
export const KEY_FILE = 'bitrot.key';
export const STORE_FORMAT = 'chunkfs-store';
export const STORE_FORMAT_VERSION = 1;
export const DEFAULT_CHUNK_BYTES = 4 << 20; // spec §10
export const DEFAULT_BITROT_BYTES = 16 << 10; // spec §10
export const DEFAULT_EC_BLOCK_BYTES = 1 << 20; // spec §10
/** Files up to this size are packed as needles (DESIGN §5 "Small files"); set at mkfs. */
export const DEFAULT_SMALL_FILE_MAX_BYTES = 64 << 10;
/** A container is sealed once this many bytes are used (spec §11.6). */
export const DEFAULT_CONTAINER_CAPACITY_BYTES = 256 << 20;
const DISKS_MAX = 256;
const CHUNK_BYTES_MAX = 1 << 30;

export interface DiskEntry {
  id: number; // u64 used by placement (store/chunks/placement.ts)
  path: string; // absolute, or relative to the store directory
  epoch: number; // cluster_map_epoch in which the disk was added
}

export interface StoreDefaults {
  layout: string;
  chunkSizeBytes: number;
  bitrotBlockBytes: number;
  ecBlockSizeBytes: number;
  /** Needle packing threshold (spec §11); absent in stores made before small-file packing: 0, no packing. */
  smallFileMaxBytes?: number;
  /** Container capacity (spec §11.6 tunable); absent: DEFAULT_CONTAINER_CAPACITY_BYTES. */
  containerCapacityBytes?: number;
  /**
   * Days the leak scan keeps the shard files it removed in each disk's quarantine before deleting them
   * (DESIGN §4 "Identity", store/upkeep/quarantine.ts); absent: QUARANTINE_GRACE_DAYS_DEFAULT (7).
   */
  quarantineGraceDays?: number;
  /** A transaction group's dirty-byte bound (DESIGN §5; writers wait there); absent: min(1 GiB, 10% of RAM). */
  groupDirtyBytesMax?: number;
  /** How long after its first write a transaction group closes (DESIGN §5, ZFS's txg timeout); absent: 5 s. */
  groupIntervalMs?: number;
  /**
   * Whole-chunk writes of a live mount in transaction groups (DESIGN §5); absent or true: groups (the
   * default); false opts out: each chunk flushed before its commit, as stores opened by tools do.
   */
  transactionGroups?: boolean;
  /** The intent log file's size (SQLite stores, DESIGN §5); absent: INTENT_LOG_BYTES_DEFAULT (store/chunks/intent-log.ts). */
  intentLogBytes?: number;
  /**
   * A live mount's metadata operations commit in groups of this many milliseconds (SQLite stores,
   * DESIGN §5 "Group commit"); 0: each alone; absent: GROUP_COMMIT_MS (store/meta/commit-log.ts).
   */
  metaGroupMs?: number;
}

/** metaGroupMs's bound: the full commit timer's delay (store/meta/commit-log.ts FLUSH_DELAY_MS) commits any group. */
export const META_GROUP_MS_MAX = 5000;

/** The smallest intent log: room for a few of its largest commits (16 MiB: four 4 MiB commits). */
export const INTENT_LOG_BYTES_MIN = 16 << 20;

export interface StoreConfig {
  format: string;
  formatVersion: number;
  clusterMapEpoch: number;
  disks: DiskEntry[];
  defaults: StoreDefaults;
  keyFile: string;
  /** Names the store in every disk's identity marker (store/disk-identity.ts); absent in stores made before markers. */
  storeUuid?: string;
  /** The store key of encrypted layouts (store/store-key.ts); absent in stores made before transforms. */
  storeKey?: StoreKeyRef;
  /** Metadata in a database server (DESIGN §9; store/meta-target.ts); absent: SQLite in meta.db. */
  meta?: MetaTarget;
}

/** Longest quarantine grace (days) a config may ask for: ten years. */
const QUARANTINE_GRACE_DAYS_MAX = 3650;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export class ConfigError extends ChunkfsError {
  readonly code = 'EINVAL';
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}`, { path: file });
  }
}

/** Block sizes a layout needs (spec §10): bitrot multiple of 4096, chunk a multiple of EB. */
export function checkDefaults(d: StoreDefaults, diskCount: number, file: string): Layout {
  let layout: Layout;
  try {
    layout = parseLayout(d.layout);
  } catch (err) {
    throw new ConfigError(file, (err as Error).message);
  }
  const int = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
  if (!int(d.bitrotBlockBytes) || d.bitrotBlockBytes % 4096 !== 0) {
    throw new ConfigError(file, `bitrot_block ${d.bitrotBlockBytes} must be a positive multiple of 4096 (spec §10)`);
  }
  if (!int(d.chunkSizeBytes) || d.chunkSizeBytes % 4096 !== 0 || d.chunkSizeBytes > CHUNK_BYTES_MAX) {
    throw new ConfigError(file, `chunk_size ${d.chunkSizeBytes} must be a positive multiple of 4096, at most 1 GiB`);
  }
  if (!int(d.ecBlockSizeBytes) || d.chunkSizeBytes % d.ecBlockSizeBytes !== 0) {
    throw new ConfigError(
      file,
      `chunk_size ${d.chunkSizeBytes} must be a multiple of ec_block_size ${d.ecBlockSizeBytes} (spec §10)`,
    );
  }
  // A needle (32-byte header + data + pad) never crosses a container chunk (DESIGN §3): it must fit in one.
  if (
    d.smallFileMaxBytes !== undefined &&
    (!Number.isSafeInteger(d.smallFileMaxBytes) ||
      d.smallFileMaxBytes < 0 ||
      d.smallFileMaxBytes + 64 > d.chunkSizeBytes)
  ) {
    throw new ConfigError(
      file,
      `small_file_max ${d.smallFileMaxBytes} must be >= 0 and leave room for a needle header in a ${d.chunkSizeBytes}-byte chunk`,
    );
  }
  if (d.containerCapacityBytes !== undefined && !int(d.containerCapacityBytes)) {
    throw new ConfigError(file, `container_capacity ${d.containerCapacityBytes} must be a positive integer`);
  }
  const grace = d.quarantineGraceDays;
  if (grace !== undefined && (!Number.isSafeInteger(grace) || grace < 0 || grace > QUARANTINE_GRACE_DAYS_MAX)) {
    throw new ConfigError(
      file,
      `quarantineGraceDays ${grace} must be a whole number of days, 0..${QUARANTINE_GRACE_DAYS_MAX}`,
    );
  }
  if (d.transactionGroups !== undefined && typeof d.transactionGroups !== 'boolean') {
    throw new ConfigError(file, `transactionGroups ${JSON.stringify(d.transactionGroups)} must be true or false`);
  }
  if (d.groupDirtyBytesMax !== undefined && !int(d.groupDirtyBytesMax)) {
    throw new ConfigError(file, `groupDirtyBytesMax ${d.groupDirtyBytesMax} must be a positive integer (bytes)`);
  }
  const groupMs = d.metaGroupMs;
  if (groupMs !== undefined && (!Number.isSafeInteger(groupMs) || groupMs < 0 || groupMs > META_GROUP_MS_MAX)) {
    throw new ConfigError(
      file,
      `metaGroupMs ${groupMs} must be a whole number of milliseconds, 0..${META_GROUP_MS_MAX}`,
    );
  }
  if (d.groupIntervalMs !== undefined && !int(d.groupIntervalMs)) {
    throw new ConfigError(file, `groupIntervalMs ${d.groupIntervalMs} must be a positive integer (milliseconds)`);
  }
  if (
    d.intentLogBytes !== undefined &&
    (!int(d.intentLogBytes) || d.intentLogBytes % 4096 !== 0 || d.intentLogBytes < INTENT_LOG_BYTES_MIN)
  ) {
    throw new ConfigError(
      file,
      `intent_log_bytes ${d.intentLogBytes} must be a multiple of 4096, at least ${INTENT_LOG_BYTES_MIN}`,
    );
  }
  if (shardCount(layout) > diskCount) {
    throw new ConfigError(file, `layout ${d.layout} needs ${shardCount(layout)} disks, only ${diskCount} exist`);
  }
  return layout;
}

export interface CreateConfigOptions {
  disks?: number | string[];
  defaults?: Partial<StoreDefaults>;
  /** The store key outside the store directory (mkfs --keyfile); default: data.key inside it. */
  keyFile?: string;
  /** Metadata on PostgreSQL (mkfs --meta), checked by parseMetaTarget. */
  meta?: MetaTarget;
}

/**
 * mkfs: refuses duplicate disks, a non-empty disk, a layout needing more disks than exist. Builds in
 * staging (store/mkfs-staging.ts), which refused a non-empty target and undoes all this on failure.
 */
export function createConfig(staging: MkfsStaging, opts: CreateConfigOptions): StoreConfig {
  const { io, target: dir } = staging;
  const diskOpt = opts.disks ?? 3;
  const diskPaths: string[] =
    typeof diskOpt === 'number' ? Array.from({ length: diskOpt }, (_, i) => `disks/d${i}`) : diskOpt;
  if (diskPaths.length === 0 || diskPaths.length > DISKS_MAX) {
    throw new ConfigError(dir, `need 1..${DISKS_MAX} disks, got ${diskPaths.length}`);
  }
  const resolved = diskPaths.map((p: string) => path.resolve(dir, p));
  const seen = new Set<string>();
  for (const r of resolved) {
    if (seen.has(r)) throw new ConfigError(dir, `duplicate disk ${r}`);
    seen.add(r);
  }
  const defaults: StoreDefaults = {
    layout: opts.defaults?.layout ?? 'replica:3',
    chunkSizeBytes: opts.defaults?.chunkSizeBytes ?? DEFAULT_CHUNK_BYTES,
    bitrotBlockBytes: opts.defaults?.bitrotBlockBytes ?? DEFAULT_BITROT_BYTES,
    ecBlockSizeBytes: opts.defaults?.ecBlockSizeBytes ?? DEFAULT_EC_BLOCK_BYTES,
    // Default: 64 KiB, or half a chunk for stores with tiny chunks (a needle must fit in one, DESIGN §3).
    smallFileMaxBytes:
      opts.defaults?.smallFileMaxBytes ??
      Math.min(DEFAULT_SMALL_FILE_MAX_BYTES, (opts.defaults?.chunkSizeBytes ?? DEFAULT_CHUNK_BYTES) / 2),
    containerCapacityBytes: opts.defaults?.containerCapacityBytes ?? DEFAULT_CONTAINER_CAPACITY_BYTES,
    ...(opts.defaults?.intentLogBytes !== undefined ? { intentLogBytes: opts.defaults.intentLogBytes } : {}),
  };
  checkDefaults(defaults, diskPaths.length, dir); // the store to be: no chunkfs.json exists yet
  for (const r of resolved) {
    if (statToMake(io, r, 'disk directory') !== null && io.readdir(r).length > 0)
      throw new ConfigError(r, 'disk directory is not empty');
    refuseSharedDiskDir(io, r);
  }
  const config: StoreConfig = {
    format: STORE_FORMAT,
    formatVersion: STORE_FORMAT_VERSION,
    clusterMapEpoch: 1,
    disks: diskPaths.map((p: string, id: number) => ({ id, path: p, epoch: 1 })),
    defaults,
    keyFile: KEY_FILE,
    storeUuid: crypto.randomUUID(),
    ...(opts.meta === undefined ? {} : { meta: { engine: opts.meta.engine, url: opts.meta.url } }),
  };
  io.writeFileDurable(path.join(staging.dir, KEY_FILE), crypto.randomBytes(BITROT_KEY_BYTES));
  config.storeKey = createStoreKey(io, staging.dir, opts.keyFile, (file) => staging.recordMade(file));
  config.disks.forEach((d, i) => {
    // Private to the owner: an existing empty directory keeps no wider mode.
    const root = staging.makeDir(resolved[i]);
    writeMarker(io, root, config.storeUuid!, d.id);
    staging.recordMade(markerPath(root));
  });
  // The config last: an interrupted mkfs leaves no store that could be opened.
  io.writeFileDurable(path.join(staging.dir, CONFIG_FILE), configBytes(config));
  return config;
}

function checkShape(c: StoreConfig, file: string, dir: string): void {
  if (c.format !== STORE_FORMAT)
    throw new ConfigError(file, `format is '${String(c.format)}', expected '${STORE_FORMAT}'`);
  if (c.formatVersion !== STORE_FORMAT_VERSION) {
    throw new ConfigError(
      file,
      `unknown formatVersion ${String(c.formatVersion)} (this build reads ${STORE_FORMAT_VERSION})`,
    );
  }
  if (!Number.isSafeInteger(c.clusterMapEpoch) || c.clusterMapEpoch < 1)
    throw new ConfigError(file, 'clusterMapEpoch must be an integer >= 1');
  if (!Array.isArray(c.disks) || c.disks.length === 0) throw new ConfigError(file, 'disks must be a non-empty list');
  if (c.disks.length > DISKS_MAX) throw new ConfigError(file, `at most ${DISKS_MAX} disks, found ${c.disks.length}`);
  const ids = new Set<number>();
  const paths = new Map<string, number>();
  for (const d of c.disks) {
    if (!Number.isSafeInteger(d?.id) || d.id < 0 || ids.has(d.id))
      throw new ConfigError(file, `bad or duplicate disk id ${String(d?.id)}`);
    if (typeof d.path !== 'string' || d.path === '') throw new ConfigError(file, `disk ${d.id} has no path`);
    const resolved = path.resolve(dir, d.path);
    const other = paths.get(resolved);
    if (other !== undefined) throw new ConfigError(file, `disks ${other} and ${d.id} name the same path ${resolved}`);
    paths.set(resolved, d.id);
    if (!Number.isSafeInteger(d.epoch) || d.epoch < 1 || d.epoch > c.clusterMapEpoch)
      throw new ConfigError(file, `disk ${d.id} has bad epoch ${String(d.epoch)}`);
    ids.add(d.id);
  }
  if (typeof c.keyFile !== 'string' || c.keyFile === '') throw new ConfigError(file, 'keyFile missing');
  if (c.storeUuid !== undefined && (typeof c.storeUuid !== 'string' || !UUID_RE.test(c.storeUuid))) {
    throw new ConfigError(file, `storeUuid ${JSON.stringify(c.storeUuid)} is not a lowercase uuid`);
  }
  const keyProblem = checkKeyRef(c.storeKey);
  if (keyProblem !== null) throw new ConfigError(file, keyProblem);
  if (typeof c.defaults !== 'object' || c.defaults === null) throw new ConfigError(file, 'defaults missing');
  checkDefaults(c.defaults, c.disks.length, file);
  if (c.meta !== undefined) checkMeta(c.meta, file);
}

/**
 * The recorded metadata target's shape (store/meta-target.ts); its engine and connection string are
 * checked by the open (store/meta/engine-open.ts), which knows the engines.
 */
function checkMeta(meta: MetaTarget, file: string): void {
  if (typeof meta !== 'object' || meta === null || typeof meta.engine !== 'string' || typeof meta.url !== 'string') {
    throw new ConfigError(file, `meta ${JSON.stringify(meta)} is not {"engine": "postgres", "url": "postgres://..."}`);
  }
}

export interface OpenedConfig {
  config: StoreConfig;
  key: BitrotKey;
  /** The key of encrypted layouts (store/store-key.ts); null in a store without one. */
  storeKey: Buffer | null;
  diskPaths: Map<number, string>; // id -> absolute path
}

function configBytes(config: StoreConfig): Buffer {
  return Buffer.from(JSON.stringify(config, null, 2) + '\n', 'utf8');
}

/** Read and validate chunkfs.json and the keys it names; storeKeyFile: the store key given at mount time. */
export function openConfig(dir: string, io: SyncIo = nodeSyncIo, storeKeyFile?: string): OpenedConfig {
  const file = path.join(dir, CONFIG_FILE);
  let text: string;
  try {
    text = io.readFile(file).toString('utf8');
  } catch (err) {
    throw new ConfigError(file, `cannot read store config: ${(err as Error).message}`);
  }
  let config: StoreConfig;
  try {
    config = JSON.parse(text) as StoreConfig;
  } catch (err) {
    throw new ConfigError(file, `corrupt config, not valid JSON: ${(err as Error).message}`);
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    throw new ConfigError(file, 'corrupt config, not a JSON object');
  checkShape(config, file, dir);
  const keyBytes = readKey(io, keyPath(dir, config));
  const diskPaths = new Map(config.disks.map((d) => [d.id, path.resolve(dir, d.path)]));
  const storeKey = loadStoreKey(io, dir, config.storeKey, storeKeyFile);
  return { config, key: parseBitrotKey(keyBytes), storeKey, diskPaths };
}

export function keyPath(dir: string, config: StoreConfig): string {
  return path.resolve(dir, config.keyFile);
}

/**
 * The 32-byte key file: a regular file, exactly 32 bytes (DESIGN §3). Its mode is not checked here:
 * Store.open makes it owner-only with the rest of the store (store/io/private-modes.ts), or refuses.
 */
function readKey(io: SyncIo, keyPath: string): Buffer {
  let st;
  try {
    st = io.stat(keyPath);
  } catch (err) {
    throw new ConfigError(keyPath, `bitrot key file missing or unreadable: ${(err as Error).message}`);
  }
  if (st === null) throw new ConfigError(keyPath, 'bitrot key file missing or unreadable: it does not exist');
  if (st.kind !== 'file') throw new ConfigError(keyPath, 'bitrot key file is not a regular file');
  let keyBytes: Buffer;
  try {
    keyBytes = io.readFile(keyPath);
  } catch (err) {
    throw new ConfigError(keyPath, `bitrot key file missing or unreadable: ${(err as Error).message}`);
  }
  if (keyBytes.length !== BITROT_KEY_BYTES)
    throw new ConfigError(keyPath, `bitrot key must be ${BITROT_KEY_BYTES} bytes, found ${keyBytes.length}`);
  return keyBytes;
}

/**
 * replace-disk onto another directory: the disk keeps its id, so its placement slot
 * (DESIGN §3), and only its path changes, durably in the config and at once in opened.diskPaths.
 */
export function setDiskPath(
  dir: string,
  opened: OpenedConfig,
  diskId: number,
  newPath: string,
  io: SyncIo = nodeSyncIo,
): void {
  const disk = opened.config.disks.find((d) => d.id === diskId);
  if (disk === undefined) throw new ConfigError(path.join(dir, CONFIG_FILE), `no disk ${diskId}`);
  const resolved = path.resolve(dir, newPath);
  for (const [id, p] of opened.diskPaths) {
    if (id !== diskId && p === resolved) throw new ConfigError(resolved, `is disk ${id} already`);
  }
  disk.path = newPath;
  io.writeFileDurable(path.join(dir, CONFIG_FILE), configBytes(opened.config));
  opened.diskPaths.set(diskId, resolved);
}

/**
 * A store made before disk identity markers: give it a uuid and mark the disk
 * directories that exist now (a missing one stays offline until replaced). Read-write
 * opens only; the config is rewritten durably after the markers.
 */
export function adoptLegacyStore(dir: string, opened: OpenedConfig, io: SyncIo = nodeSyncIo): string[] {
  const { config } = opened;
  if (config.storeUuid !== undefined) return [];
  const uuid = crypto.randomUUID();
  const marked: string[] = [];
  for (const d of config.disks) {
    const root = opened.diskPaths.get(d.id)!;
    if (io.stat(root)?.kind !== 'dir') continue;
    writeMarker(io, root, uuid, d.id);
    marked.push(root);
  }
  config.storeUuid = uuid;
  io.writeFileDurable(path.join(dir, CONFIG_FILE), configBytes(config));
  return marked;
}

/**
 * `chunkfs meta copy` (DESIGN §9): the store's metadata is now at meta (undefined: SQLite in
 * meta.db), recorded durably (tmp file, fsync, rename, directory fsync): the switch is atomic.
 */
export function setMetaTarget(
  dir: string,
  opened: OpenedConfig,
  meta: MetaTarget | undefined,
  io: SyncIo = nodeSyncIo,
): void {
  if (meta === undefined) delete opened.config.meta;
  else opened.config.meta = { engine: meta.engine, url: meta.url };
  io.writeFileDurable(path.join(dir, CONFIG_FILE), configBytes(opened.config));
}
