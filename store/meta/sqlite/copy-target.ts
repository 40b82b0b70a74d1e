// meta copy into SQLite (DESIGN §9; the shared part: store/meta/copy-target.ts): meta.db is built
// and verified in meta.db.copy, made self-contained (out of WAL mode), then linked as meta.db, never
// replacing one; a kill before the link leaves only meta.db.copy, which the next attempt removes (the
// config never names it).
import * as path from 'node:path';
import { ChunkfsError } from '../../../src/errors';
import { ConfigError } from '../../config';
import { SyncIo } from '../../io/sync-io';
import { CopyResult, CopyStep } from '../copy-target';
import { createDb } from './database';

/** Where the copy is built, beside meta.db. */
const COPY_SUFFIX = '.copy';

/**
 * SQLite's meta.db must not exist, nor a WAL that SQLite would replay into a new meta.db (the old
 * metadata of an earlier copy to PostgreSQL may be there): moved aside by the user, never by us.
 */
function refuseSqliteTarget(metaPath: string, io: SyncIo): void {
  for (const f of [metaPath, `${metaPath}-wal`]) {
    if (io.stat(f) === null) continue;
    throw new ConfigError(
      f,
      "exists already and may hold metadata (this store's own from before an earlier meta copy to PostgreSQL?); " +
        `meta copy will not replace it: move it aside with its companions (for s in "" -wal -shm; do [ ! -e ${metaPath}$s ] || mv ${metaPath}$s ${metaPath}.old$s; done), then retry; nothing was changed`,
    );
  }
}

/** SQLite target: built and verified in meta.db.copy, made self-contained, then linked as meta.db. */
export function copyToSqlite(metaPath: string, io: SyncIo, step: CopyStep, storeUuid: string): CopyResult {
  const dir = path.dirname(metaPath);
  refuseSqliteTarget(metaPath, io);
  const copyPath = metaPath + COPY_SUFFIX;
  for (const s of ['', '-wal', '-shm', '-journal']) io.remove(copyPath + s); // an interrupted copy's: the config never named it
  io.createExclusive(copyPath, Buffer.alloc(0)); // 0600: SQLite gives its -wal the same mode
  let result: CopyResult;
  try {
    result = copyIntoSqlite(copyPath, step, storeUuid);
    io.fsync(copyPath);
    io.link(copyPath, metaPath); // EEXIST if a meta.db appeared meanwhile: never replaced
  } catch (err) {
    for (const s of ['', '-wal', '-shm', '-journal']) io.remove(copyPath + s);
    throw err;
  }
  io.remove(copyPath);
  io.fsync(dir);
  return result;
}

/**
 * SQLite: into file, a new empty file (the caller made it, 0600). Committed with a device flush,
 * then out of WAL mode: every page in the file itself, no -wal beside it to lose when it is linked.
 */
function copyIntoSqlite(file: string, step: CopyStep, storeUuid: string): CopyResult {
  const db = createDb(file, storeUuid); // this build's schema
  try {
    db.native.pragma('synchronous = FULL');
    const result = db.transaction(() => step(db))();
    const mode = String(db.native.pragma('journal_mode = DELETE', { simple: true }));
    if (mode !== 'delete')
      throw new ChunkfsError(`${file}: could not leave WAL mode (journal_mode ${mode})`, { path: file });
    return result;
  } finally {
    db.close();
  }
}
