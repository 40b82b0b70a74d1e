// `chunkfs meta copy` (DESIGN §9): move a store's metadata from one engine to the
// other (SQLite in <store>/meta.db, or a PostgreSQL database), offline. Order, so that nothing is
// lost whenever it stops:
//   1. the store lock (a mount holds it: refused, naming it) and on PostgreSQL the source's lease;
//   2. the source this store's (DESIGN §4 "Identity") at this build's schema version (older: refused,
//      open it read-write once);
//   3. the target empty (one holding a store: refused);
//   4. in ONE transaction on the target: this build's schema (naming the store, DESIGN §4), every row,
//      then every row compared
//      (store/meta/table-copy.ts). A kill or error before its commit leaves the target empty:
//      PostgreSQL rolls it back; SQLite's copy is built in meta.db.copy, which only a later
//      attempt removes (the config never names it), and becomes meta.db by a link once complete;
//   5. chunkfs.json names the new engine (tmp + fsync + rename + directory fsync): the switch.
// Until step 5 the config names the old engine, whose metadata is never written (read-only open;
// PostgreSQL's lease row aside), and afterwards it is left where it was, for the user to drop.
import * as path from 'node:path';
import { ChunkfsError } from '../src/errors';
import { ConfigError, openConfig, setMetaTarget } from './config';
import { MetaTarget } from './meta-target';
import { StoreLock, StoreLockedError } from './store-lock';
import { SyncIo, nodeSyncIo } from './io/sync-io';
import { Db, SCHEMA_VERSION } from './meta/meta';
import {
  MetaSite,
  StoreLease,
  acquireLease,
  copyIntoMeta,
  leftBehindAdvice,
  metaSiteOf,
  openStoreMeta,
  parseMetaArg,
} from './meta/engine-open';
import { unknownTables } from './meta/meta-tables';
import { COPY_BATCH_ROWS, COPY_BATCH_ROWS_MAX, TableRows, copyTables, verifyTables } from './meta/table-copy';
import { CopyStep } from './meta/copy-target';
import { IntentLogTail } from './meta/intent-log-tail';
import { pendingLogRecords } from './chunks/intent-log';

/** The SQLite metadata file of a store (as store/store.ts names it). */
const META_FILE = 'meta.db';
const LOCK_NOTE = 'meta copy';

export interface MetaMoveOptions {
  /** Rows per batch read, written and compared (default COPY_BATCH_ROWS). */
  batchRows?: number;
  /** The store key, when mkfs kept it outside the store. */
  keyFile?: string;
  io?: SyncIo;
  /** One line per step. */
  log?: (line: string) => void;
}

export type MetaPlace = MetaSite;

export interface MetaMoveReport {
  store: string;
  from: MetaPlace;
  to: MetaPlace;
  tables: TableRows[];
  /** Rows copied (= rows compared). */
  rows: number;
  /** Copy and verification, and the rate over both. */
  seconds: number;
  rowsPerSecond: number;
  /** Where the old metadata stays, untouched, and how to drop it once the new engine serves. */
  leftBehind: string;
}

function placeOf(dir: string, meta: MetaTarget | undefined): MetaPlace {
  return metaSiteOf(path.join(dir, META_FILE), meta);
}

/** The store lock, or an error naming who holds it (a mount: its mount point). */
function takeLock(dir: string, io: SyncIo): StoreLock {
  try {
    return StoreLock.acquire(dir, io, LOCK_NOTE);
  } catch (err) {
    if (!(err instanceof StoreLockedError)) throw err;
    const what = err.holderNote === '' ? 'a chunkfs process' : err.holderNote;
    throw new ChunkfsError(
      `store ${dir} is in use by pid ${err.holderPid} (${what}): meta copy works on a store nobody has open; ` +
        'unmount it (chunkfs umount MOUNTPOINT) or wait for it, then retry; nothing was changed',
      { path: dir },
    );
  }
}

interface Source {
  db: Db;
  lease: StoreLease | null;
}

/** The source read-only, this store's, at this build's schema (an older one is refused by the open itself). */
function openSource(
  dir: string,
  meta: MetaTarget | undefined,
  storeUuid: string | undefined,
  io: SyncIo,
  log: (line: string) => void,
): Source {
  const where = placeOf(dir, meta).location;
  if (meta === undefined && io.stat(where) === null)
    throw new ConfigError(where, 'metadata database missing; nothing to copy');
  // This store's own metadata (DESIGN §4 "Identity"): another store's would be copied under this store's name.
  const db = openStoreMeta(path.join(dir, META_FILE), meta, true, io, log, storeUuid);
  let lease: StoreLease | null = null;
  try {
    lease = acquireLease(db, LOCK_NOTE, log); // PostgreSQL: no mount on another machine either
    const version = db.schemaVersion();
    if (version > SCHEMA_VERSION)
      throw new ConfigError(
        where,
        `schema version ${version} is newer than this build's (${SCHEMA_VERSION}): copy it with the newer build`,
      );
    const unknown = unknownTables(db);
    if (unknown.length > 0)
      throw new ConfigError(
        where,
        `holds table(s) ${unknown.join(', ')} that this build's meta copy does not know (store/meta/meta-tables.ts): copy it with the build that made them`,
      );
  } catch (err) {
    lease?.release();
    db.close();
    throw err;
  }
  return { db, lease };
}

/** The intent log file of a SQLite store must be folded into the shards first: PostgreSQL keeps intents as rows (DESIGN §5). */
function refusePendingLog(dir: string, db: Db, io: SyncIo): void {
  const n = pendingLogRecords(dir, new IntentLogTail(db), io);
  if (n === 0) return;
  throw new ChunkfsError(
    `store ${dir}: its intent log holds ${n} fsync'd write(s) not yet in the shards; mount and unmount the store once ` +
      '(that applies them), then retry; nothing was changed',
    { path: dir },
  );
}

/**
 * What a move of dir's metadata to `to` would do, checked without changing anything: the target
 * parses (no password), the config and key are this store's, and the target is another place.
 */
export function planMetaMove(storeDir: string, to: string, opts: MetaMoveOptions = {}) {
  const dir = path.resolve(storeDir);
  const io = opts.io ?? nodeSyncIo;
  const target = parseMetaArg(to);
  const opened = openConfig(dir, io, opts.keyFile);
  const from = placeOf(dir, opened.config.meta);
  const dest = placeOf(dir, target);
  if (from.location === dest.location) {
    throw new ConfigError(dir, `its metadata is in ${from.location} already; nothing to copy`);
  }
  return { dir, io, target, opened, from, dest };
}

/** Move the metadata of the store in dir to `to` ('sqlite', or a PostgreSQL URI). */
export function moveStoreMeta(storeDir: string, to: string, opts: MetaMoveOptions = {}): MetaMoveReport {
  const log = opts.log ?? ((): void => undefined);
  const batchRows = opts.batchRows ?? COPY_BATCH_ROWS;
  if (!Number.isSafeInteger(batchRows) || batchRows < 1 || batchRows > COPY_BATCH_ROWS_MAX)
    throw new RangeError(`batch rows ${batchRows}: expected 1..${COPY_BATCH_ROWS_MAX}`);
  const { dir, io, target, opened, from, dest } = planMetaMove(storeDir, to, opts);
  const fromMeta = opened.config.meta; // the config names the target once the copy is done
  const lock = takeLock(dir, io);
  try {
    const source = openSource(dir, fromMeta, opened.config.storeUuid, io, log);
    const storeUuid = opened.config.storeUuid!; // the source names it: openSource checked
    try {
      if (source.db.caps.intentLogInFile) refusePendingLog(dir, source.db, io);
      const started = process.hrtime.bigint();
      const step: CopyStep = (db) => {
        const tables = copyTables(source.db, db, batchRows, (name, rows) => log(`copying ${name}: ${rows} rows`));
        log(`verifying ${tables.length} tables row for row`);
        return { tables, rows: verifyTables(source.db, db, batchRows) };
      };
      const result = copyIntoMeta(path.join(dir, META_FILE), target, io, step, storeUuid);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      setMetaTarget(dir, opened, target, io); // the switch: only after the copy was verified and committed
      log(`${dir}/chunkfs.json names ${dest.engine} now`);
      return {
        store: dir,
        from,
        to: dest,
        ...result,
        seconds,
        rowsPerSecond: result.rows / Math.max(seconds, 1e-9),
        leftBehind: leftBehindAdvice(path.join(dir, META_FILE), fromMeta),
      };
    } finally {
      source.lease?.release(); // after the switch: no other opener slips in before it
      source.db.close();
    }
  } finally {
    lock.release();
  }
}
