// Opening meta.db after a crash (DESIGN §4/§5). A crashed writer leaves meta.db-wal
// (committed transactions: never to be removed), and a crashed reader or a writer of a build before
// earlier build meta.db-shm (an index of the WAL that SQLite rebuilds from it when nobody has the database
// open). SQLite recovers both by itself on open, torn or stale ones included. A read-write open keeps
// the WAL index in memory (locking_mode EXCLUSIVE, database.ts) and never uses a -shm; once it
// holds the database it removes a -shm left behind, since a read-only open after it cannot get past
// one it cannot open, size or map (SQLITE_IOERR_SHM*, reported as "disk I/O error"), e.g. one a
// crashed FUSE layer under the store left as something other than a plain file. Every failure of
// an open ends in a message that says what happened and what to do.
import { ConfigError } from '../../config';
import { Db, checkStoreDb } from '../meta';
import { openDb } from './database';
import { MetaIdentityError, MetaPlace } from '../store-identity';
import { SyncIo } from '../../io/sync-io';

/** SQLITE_IOERR_SHMOPEN, _SHMSIZE, _SHMLOCK, _SHMMAP: the -shm index, rebuildable from the WAL. */
const SHM_ERROR_RE = /^SQLITE_IOERR_SHM/;

function sqliteCode(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : 'unknown';
}

/** What to do about a failed open, by SQLite's error code (path: meta.db). */
export function metaOpenAdvice(path: string, code: string, readOnly: boolean): string {
  const keepWal = `never remove ${path}-wal: it holds committed metadata`;
  if (SHM_ERROR_RE.test(code)) {
    return readOnly
      ? `${path}-shm, SQLite's index of ${path}-wal, cannot be used (left by a crash? or its file system is full: ` +
          `df -h). Open the store read-write once (chunkfs mount or chunkfs scrub), which rebuilds it, or with ` +
          `nothing using the store remove ${path}-shm; ${keepWal}`
      : `${path}-shm cannot be used even after it was removed and rebuilt: check the filesystem holding the store ` +
          `(dmesg, df -h, mount options); ${keepWal}`;
  }
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return `another process holds the metadata database (fuser -v ${path}*): stop it, or wait for it, then retry; ${keepWal}`;
  }
  if (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_CANTOPEN' || code === 'SQLITE_PERM') {
    return (
      `check that ${path}, ${path}-wal and ${path}-shm are plain files you may read and write, and that the ` +
      `filesystem holding the store is mounted read-write; ${keepWal}`
    );
  }
  if (code === 'SQLITE_CORRUPT' || code === 'SQLITE_NOTADB') {
    return (
      `the metadata database is damaged: copy ${path}, ${path}-wal and ${path}-shm aside, then look at it with ` +
      `sqlite3 ${path} 'PRAGMA integrity_check'; ${keepWal}`
    );
  }
  return (
    `the device holding the store failed a read or write (dmesg, df -h), or the store directory changed under ` +
    `chunkfs; fix that and retry; ${keepWal}`
  );
}

/** What an operator checks when meta.db at path is not this store's (DESIGN §4 "Identity"). */
export function sqlitePlace(path: string): MetaPlace {
  return {
    where: path,
    check:
      `check that ${path} is this store's metadata (not an empty file, nor one copied or restored from another store; ` +
      "a backup of this store's own meta.db opens)",
  };
}

/**
 * openDb, with a ConfigError naming what to do when it fails, then checked to be this store's metadata
 * (storeUuid: the config's; store/meta/store-identity.ts) before anything changes. A read-write open
 * (which holds the store lock, and now meta.db's own) removes a leftover -shm; log: one line when that
 * -shm was not a plain file (it made read-only opens fail). The schema is not migrated here
 * (store/meta/engine-open.ts upgradeStoreMeta).
 */
export function openMeta(
  path: string,
  readOnly: boolean,
  io: SyncIo,
  log: (line: string) => void,
  storeUuid: string | undefined,
): Db {
  let db: Db;
  try {
    db = openDb(path, readOnly, (opened) => checkStoreDb(opened, sqlitePlace(path), storeUuid, readOnly));
  } catch (err) {
    throw err instanceof MetaIdentityError ? err : metaOpenError(path, err, sqliteCode(err), readOnly);
  }
  if (!readOnly) removeLeftoverShm(path, io, log);
  return db;
}

function removeLeftoverShm(path: string, io: SyncIo, log: (line: string) => void): void {
  const shm = `${path}-shm`;
  const st = io.stat(shm);
  if (st === null) return;
  io.remove(shm);
  if (st.kind !== 'file')
    log(
      `${shm} was not a plain file (read-only opens could not use it); removed it, SQLite rebuilds it from ${path}-wal`,
    );
}

function metaOpenError(path: string, err: unknown, code: string, readOnly: boolean): ConfigError {
  const message = (err as Error).message;
  // Not SQLite's (a schema from a newer build, one to upgrade): its message says what to do.
  if (!code.startsWith('SQLITE_')) return new ConfigError(path, `cannot open metadata database: ${message}`);
  return new ConfigError(
    path,
    `cannot open metadata database: ${message} (${code}). ${metaOpenAdvice(path, code, readOnly)}`,
  );
}
