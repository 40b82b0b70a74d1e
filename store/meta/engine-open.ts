// The metadata engine a store uses (DESIGN §9), chosen by its config: SQLite in meta.db in the store
// directory (no `meta` in chunkfs.json), or PostgreSQL at the recorded connection string. The store
// opens, creates, copies and commits through these, and never names an engine itself: this is the
// one file outside store/meta/sqlite/ and store/meta/postgres/ that imports either (DESIGN §9 "Engines").
import { Io } from '../io/io';
import { SyncIo } from '../io/sync-io';
import { ConfigError } from '../config';
import { Db } from './sql-engine';
import { migrate } from './meta';
import { createDb } from './sqlite/database';
import { openMeta } from './sqlite/open';
import { CommitPoint } from './commit-point';
import { SqliteWalCommitPoint } from './sqlite/commit-point';
import { PgCommitPoint } from './postgres/commit-point';
import { PgDb } from './postgres/engine';
import { createPgSchema, openPgMeta, upgradePgMeta } from './postgres/open';
import { SqliteDb } from './sqlite/engine';
import type { MetaTarget } from '../meta-target';
import { POSTGRES_ENGINE, parseMetaTarget, redactedUrl } from './postgres/target';
import { LEASE_MS, LeaseInfo, PgLease, readLease } from './postgres/lease';
import { ChangeAnnouncer, awaitAnnouncing } from './postgres/announce';
import type { Outage, Reconnection } from './postgres/reconnect';
import type { NamespaceOptions } from './ops';
import type { NamespaceBase } from './ops-base';
import { SqliteNamespaceOps } from './sqlite/namespace-ops';
import { PgNamespaceOps } from './postgres/namespace-ops';
import type { DataOps } from './data-ops';
import { SqlDataOps } from './sql/data-ops';
import { PgDataOps } from './postgres/data-ops';
import { SQLITE_DIALECT } from './sqlite/dialect';
import { POSTGRES_DIALECT } from './postgres/dialect';
import { Changed, PgListener } from './postgres/listen';
import { probeTarget } from './postgres/target-probe';
import { copyIntoPg } from './postgres/copy-target';
import { copyToSqlite } from './sqlite/copy-target';
import { CopyResult, CopyStep } from './copy-target';

export type { Changed, Reconnection };
export { redactedUrl };

/** Relations named in a listing of what a database holds; the rest are counted. */
const LISTED_RELATIONS_MAX = 10;
/**
 * mkfs, before anything is written: the target can be reached and its schema is empty. A database
 * holding another store's metadata would be shared by two stores; one holding anything else would
 * mix our tables with another program's (or collide with one named like ours). SQLite: nothing to check.
 */
export function checkNewMeta(target: MetaTarget | undefined): void {
  if (target === undefined) return;
  const { names, version, ...where } = probeTarget(target.url);
  const url = redactedUrl(target.url);
  if (where.schema === null) {
    throw new ConfigError(
      url,
      `database ${where.db} has no schema in the search_path to create tables in; create one or set search_path`,
    );
  }
  if (version > 0) {
    throw new ConfigError(
      url,
      `database ${where.db} already holds chunkfs metadata (schema version ${version}); ` +
        'make a new store on an empty database',
    );
  }
  if (names.length > 0) {
    const more = names.length > LISTED_RELATIONS_MAX ? ` and ${names.length - LISTED_RELATIONS_MAX} more` : '';
    throw new ConfigError(
      url,
      `database ${where.db} holds tables ${names.slice(0, LISTED_RELATIONS_MAX).join(', ')}${more} ` +
        `(schema ${where.schema}): make a new store on an empty database`,
    );
  }
}

/**
 * mkfs: the new store's schema, naming its id (DESIGN §4 "Identity"); with meta copy, the only maker
 * of a schema. SQLite: meta.db (created 0600 by the caller).
 */
export function createMeta(metaPath: string, target: MetaTarget | undefined, storeUuid: string): void {
  if (target === undefined) createDb(metaPath, storeUuid).close();
  else createPgSchema(target.url, storeUuid);
}

/** Each engine chunkfs.json may name under `meta`, with the parser of its connection strings. */
const TARGET_PARSERS: Readonly<Record<string, (url: string) => MetaTarget>> = { [POSTGRES_ENGINE]: parseMetaTarget };

/** The target chunkfs.json records, checked before it is used: an engine this build knows, a string it takes. */
function checkedTarget(target: MetaTarget): MetaTarget {
  const where = redactedUrl(target.url);
  const parse = Object.hasOwn(TARGET_PARSERS, target.engine) ? TARGET_PARSERS[target.engine] : undefined;
  if (parse === undefined) {
    const known = Object.keys(TARGET_PARSERS).join(', ');
    throw new ConfigError(where, `metadata engine '${target.engine}' is not one this build knows (${known})`);
  }
  try {
    return parse(target.url);
  } catch (err) {
    throw new ConfigError(where, (err as Error).message);
  }
}

/**
 * Open the store's metadata (recovering or explaining a failed open, sqlite/open.ts / postgres/open.ts) and
 * check, before anything changes, that it is this store's: storeUuid is the config's (DESIGN §4
 * "Identity"). follower: a session that refuses writes. A read-write opener then calls upgradeStoreMeta.
 */
export function openStoreMeta(
  metaPath: string,
  target: MetaTarget | undefined,
  readOnly: boolean,
  syncIo: SyncIo,
  log: (line: string) => void,
  storeUuid: string | undefined,
  follower = false,
): Db {
  return target === undefined
    ? openMeta(metaPath, readOnly, syncIo, log, storeUuid)
    : openPgMeta(checkedTarget(target).url, readOnly, follower, storeUuid);
}

/**
 * A read-write open, once openStoreMeta found the metadata this store's: the migrations it lacks (a
 * store made before ids gets storeUuid recorded), and PostgreSQL's engine tables.
 */
export function upgradeStoreMeta(db: Db, storeUuid: string): void {
  if (db instanceof PgDb) return upgradePgMeta(db, storeUuid);
  try {
    migrate(db, storeUuid);
  } catch (err) {
    const where = db instanceof SqliteDb ? db.native.name : db.engine;
    throw new ConfigError(where, `cannot upgrade metadata database: ${(err as Error).message}`);
  }
}

/** The engine's full commit for store/meta/commit-log.ts; walPath: SQLite's meta.db-wal. */
export function commitPointOf(db: Db, io: Io, walPath: string): CommitPoint {
  if (db instanceof SqliteDb) return new SqliteWalCommitPoint(db, io, walPath);
  if (db instanceof PgDb) return new PgCommitPoint(db);
  throw new Error(`no commit point for metadata engine ${db.engine}`);
}

/** The engine's namespace operations (DESIGN §9 "Operations"). */
export function namespaceOpsOf(db: Db, opts: NamespaceOptions): NamespaceBase {
  if (db instanceof SqliteDb) return new SqliteNamespaceOps(db, opts);
  if (db instanceof PgDb) return new PgNamespaceOps(db, opts);
  throw new Error(`no namespace operations for metadata engine ${db.engine}`);
}

/** The engine's data operations on inode rows (DESIGN §9 "Operations"). */
export function dataOpsOf(db: Db): DataOps {
  if (db instanceof SqliteDb) return new SqlDataOps(db, SQLITE_DIALECT);
  if (db instanceof PgDb) return new PgDataOps(db);
  throw new Error(`no data operations for metadata engine ${db.engine}`);
}

/** A read-write opener's hold on the store beyond this machine (DESIGN §9). */
export interface StoreLease {
  release(): void;
  /** Before shards are written or deleted: throws (EROFS) once the lease is lost (DESIGN §9 "Lease and fencing"). */
  checkHeld(): void;
  /** fn hears why, once, when the lease is found lost (a refused write, a renewal that found it taken). */
  onLost(fn: (why: string) => void): void;
}

/**
 * PostgreSQL: take the store's lease (store/meta/postgres/lease.ts), or throw LeaseHeldError naming the
 * holder. SQLite: null, the store lock file is the only one needed (meta.db lives on this machine).
 */
export function acquireLease(db: Db, note: string, log: (line: string) => void, leaseMs = LEASE_MS): StoreLease | null {
  if (!(db instanceof PgDb)) return null;
  const lease = new PgLease(db, leaseMs, log);
  lease.acquire(note);
  // The lease holder tells read-only followers what it changes, while there are any (DESIGN §9).
  const announcer = new ChangeAnnouncer(db, lease.side, log);
  announcer.start();
  db.onFence(() => announcer.stop()); // the new holder announces its own changes
  return {
    release: () => {
      announcer.stop();
      lease.release();
    },
    checkHeld: () => lease.checkHeld(),
    onLost: (fn) => db.onFence(fn),
  };
}

/**
 * fn hears of each reconnection to the metadata server after its connection broke (DESIGN §9 "A
 * broken connection"); SQLite's file never breaks so: never.
 */
export function onMetaReconnect(db: Db, fn: (r: Reconnection) => void): void {
  if (db instanceof PgDb) db.onReconnect(fn);
}

/** A read-only follower, listening already, waits until the writer announces its changes (DESIGN §9). */
export async function awaitWriterAnnouncing(db: Db, log: (line: string) => void): Promise<void> {
  if (db instanceof PgDb) await awaitAnnouncing(db, log);
}

/**
 * Where the metadata is, and on PostgreSQL who holds the lease (status); leaseLost: why this
 * opener lost it (DESIGN §9 "Lease and fencing"), null while it has not.
 */
export interface MetaStatus {
  engine: string;
  location: string;
  /** The engine has a lease (caps.leases): lease null then means nobody holds it. */
  leases: boolean;
  lease: LeaseInfo | null;
  leaseLost: string | null;
  /** Reconnections to the metadata server since open (PostgreSQL; DESIGN §9 "A broken connection"). */
  reconnects?: number;
  /** Crashes of the metadata since open (PostgreSQL; DESIGN §9 "PostgreSQL round trips"). */
  crashes?: number;
  /** The server unreachable now (PostgreSQL): lease null then means unknown, not free. */
  unreachable?: Outage | null;
}

export function metaStatus(db: Db, metaPath: string): MetaStatus {
  if (db instanceof PgDb)
    return {
      engine: db.engine,
      location: db.target,
      leases: db.caps.leases,
      lease: metaOutage(db) === null ? readLeaseIfReachable(db) : null,
      leaseLost: db.fencedBy,
      reconnects: db.reconnects,
      crashes: db.metaCrashes,
      unreachable: metaOutage(db),
    };
  return { engine: db.engine, location: metaPath, leases: db.caps.leases, lease: null, leaseLost: null };
}

/** The lease row, or null when reading it found the server unreachable (metaOutage says so then). */
function readLeaseIfReachable(db: PgDb): LeaseInfo | null {
  try {
    return readLease(db);
  } catch (err) {
    if (metaOutageAfterFailure(db) === null) throw err;
    return null;
  }
}

/**
 * The metadata server unreachable now (DESIGN §9 "A broken connection"): since when, why, tries to
 * dial again; null while it answers (SQLite's file: always null).
 */
export function metaOutage(db: Db): Outage | null {
  return db instanceof PgDb ? db.outage() : null;
}

/**
 * metaOutage after a statement failed: libpq may report the server gone as the statement's own
 * error before it marks the connection broken, so a trivial statement asks again.
 */
export function metaOutageAfterFailure(db: Db): Outage | null {
  if (!(db instanceof PgDb)) return null;
  db.probe();
  return db.outage();
}

/** The `chunkfs meta copy` target's name for the embedded default (meta.db in the store directory). */
const EMBEDDED_ENGINE_ARG = 'sqlite';

/** A metadata target as the CLI names it: 'sqlite' (undefined: meta.db), or a PostgreSQL connection string. */
export function parseMetaArg(text: string): MetaTarget | undefined {
  return text === EMBEDDED_ENGINE_ARG ? undefined : parseMetaTarget(text);
}

/** The engine a store's config names, and where its metadata is (for reports; no password). */
export interface MetaSite {
  engine: string;
  location: string;
}

export function metaSiteOf(metaPath: string, target: MetaTarget | undefined): MetaSite {
  return target === undefined
    ? { engine: EMBEDDED_ENGINE_ARG, location: metaPath }
    : { engine: target.engine, location: redactedUrl(target.url) };
}

/** What to do with the metadata a meta copy left behind, once the store serves on its new engine. */
export function leftBehindAdvice(metaPath: string, target: MetaTarget | undefined): string {
  const where = metaSiteOf(metaPath, target).location;
  return target === undefined
    ? `the old metadata is left untouched in ${where} (with its -wal and -shm files); remove them once the store ` +
        'serves well on its new engine (a later meta copy back to SQLite needs them gone)'
    : `the old metadata is left untouched in the database ${where}; drop it (dropdb) once the store serves well ` +
        'on its new engine';
}

/**
 * meta copy's target (DESIGN §9): this build's schema naming storeUuid, then step (every row copied
 * and compared), made whole or not at all; metaPath: the store's meta.db (SQLite's target).
 */
export function copyIntoMeta(
  metaPath: string,
  target: MetaTarget | undefined,
  io: SyncIo,
  step: CopyStep,
  storeUuid: string,
): CopyResult {
  return target === undefined ? copyToSqlite(metaPath, io, step, storeUuid) : copyIntoPg(target, step, storeUuid);
}

/** A read-only follower's hearing of the writer's commits (DESIGN §9): listening, and whether it hears now. */
export interface ChangeListener {
  start(): void;
  stop(): void;
  readonly connected: boolean;
}

/** A follower's listener of the writer's commits to the metadata at url, telling fn each batch. */
export function listenForChanges(
  url: string,
  fn: (changed: Changed) => void,
  log: (line: string) => void,
): ChangeListener {
  return new PgListener(url, fn, log);
}
