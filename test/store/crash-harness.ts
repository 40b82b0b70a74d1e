// Shared by the store crash tests (crash.test.ts, small-files-crash.test.ts, ...): open a store on a
// crashable Io, and reopen it after the crash as a process kill or a power loss leaves it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { tmpDir } from './helpers';

/** What lets a store opened for a process kill write its metadata again (metaEndsAtCrash), for its close. */
const metaRestores = new WeakMap<Store, () => void>();

/**
 * A process kill (power false): the process ends at the crash, so its metadata is frozen there
 * (metaEndsAtCrash) until reopenAfterCrash closes it.
 * Power loss: SQLite's own checkpoints would sync the WAL behind the Io's back (FaultyIo.restoreExternal).
 * unlinksDurable: shard-file deletes survive the power loss although no directory fsync followed
 * them, while the metadata WAL goes back to its last full commit (DESIGN §5 free last).
 */
export async function openCrashable(
  dir: string,
  power: boolean,
  opts: { unlinksDurable?: boolean; metaGroupMs?: number } = {},
): Promise<{ s: Store; io: FaultyIo }> {
  const io = new FaultyIo(new NodeIo());
  io.restoreExternal = power;
  io.unlinksDurable = opts.unlinksDurable ?? false;
  const s = await Store.open(dir, { io, log: crashTestLog });
  if (!power) metaRestores.set(s, metaEndsAtCrash(s, io));
  if (opts.metaGroupMs !== undefined) s.startMetaGroups(opts.metaGroupMs);
  if (power)
    (s as unknown as { db: import('../../store/meta/sqlite/engine').SqliteDb }).db.native.pragma(
      'wal_autocheckpoint = 0',
    );
  return { s, io };
}

/**
 * After a crash of s (its Io crashed): a process kill keeps every SQLite commit, so the store is
 * reopened in place; a power loss also puts meta.db-wal back to its last full commit, and the store
 * is reopened from a copy without the SQLite shared memory and the lock, as after a reboot (with meta.db-wal
 * as the crash put it back: commits the process made after it are not in the copy). grouped:
 * a process kill of a store whose operations commit in groups (openCrashable's metaGroupMs) loses
 * the open group, so it is reopened from a copy too (the close would commit it).
 */
export async function reopenAfterCrash(
  s: Store,
  dir: string,
  power: boolean,
  grouped = false,
): Promise<{ r: Store; dir: string }> {
  metaRestores.get(s)?.();
  if (!power && !grouped) {
    await s.close();
    return { r: await Store.open(dir), dir };
  }
  // On the store's own file system (a test's store in memory stays there: memTmpDir).
  const copy = path.join(tmpDir('chunkfs-crash-', path.dirname(path.dirname(path.resolve(dir)))), 'store');
  fs.cpSync(dir, copy, { recursive: true, filter: (p) => !p.endsWith('-shm') && !p.endsWith('chunkfs.lock') });
  // SQLite went on committing after the crash (FaultyIo.externalRestored): the copy gets the WAL put back.
  if (power && s.io instanceof FaultyIo)
    for (const [file, content] of s.io.externalRestored) {
      const inStore = path.relative(dir, file);
      if (!inStore.startsWith('..')) fs.writeFileSync(path.join(copy, inStore), content);
    }
  await s.close().catch(() => undefined); // its SQLite state is stale now; the copy is what survived
  return { r: await Store.open(copy), dir: copy };
}

/**
 * The process ends at the crash: from then on its metadata connection writes nothing. Else a write
 * whose other shards were done when the crash refused its last one commits degraded after it, and a
 * process kill (reopened in place) keeps that commit, naming a shard the crash undid. Returns what
 * lets it write again, for the close before the reopen. On SQLite, query_only refuses every later
 * write, autocommits included. On PostgreSQL the session's transactions become read-only (the server
 * refuses every later write, implicit pipeline transactions and autocommits included); answering
 * early is turned off first, so a refused write fails its caller as on SQLite rather than counting as
 * a crash of the metadata, whose new connection would write again. The crash comes from an Io call,
 * never inside a metadata transaction (those are synchronous), so the session's setting applies to
 * every transaction after it; those sent before it were committed before the kill, as SQLite's were.
 */
export function metaEndsAtCrash(s: Store, io: FaultyIo): () => void {
  const db = (s as unknown as { db: import('../../store/meta/meta').Db }).db;
  if (db.engine === 'sqlite') {
    const native = (db as import('../../store/meta/sqlite/engine').SqliteDb).native;
    io.onCrash = () => native.pragma('query_only = ON');
    return () => native.pragma('query_only = OFF');
  }
  const pg = db as import('../../store/meta/postgres/engine').PgDb;
  let ended = false;
  io.onCrash = () => {
    pg.answerEarly = false;
    pg.exec('SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY');
    ended = true;
  };
  return () => {
    if (ended) pg.exec('SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE');
    pg.answerEarly = true;
  };
}

/**
 * The log of a store under test that is crashed or killed on purpose: the applier's retries against
 * the dead store ("io crashed: ... refused", "... (kept in the intent log, tried again)") are
 * expected there by the hundred, so they are dropped; every other line is printed.
 */
export function crashTestLog(line: string): void {
  if (
    line.includes('io crashed') ||
    line.includes('attempt to write a readonly database') || // metaEndsAtCrash, SQLite
    line.includes('in a read-only transaction') || // metaEndsAtCrash, PostgreSQL
    (line.startsWith('applier: ') && line.endsWith('(kept in the intent log, tried again)'))
  )
    return;
  process.stderr.write(`${line}\n`);
}
