// Single writer per store: <store>/chunkfs.lock, created with O_EXCL and holding the
// pid of the process that has the store open read-write, on a second line what it holds the
// store for ("mount MOUNTPOINT" for a mount: a new mount waits for a holder whose mount the kernel
// already detached, cli/live-store.ts), and on a third the holder's host name and boot id. Two
// writers would each run recovery and garbage collection under the other's feet (DESIGN §5). A lock
// whose pid is dead is stale and is taken over (with a message); so is one from an earlier boot of
// this host (after a power loss its pid may name an unrelated process). A lock of another host is
// never taken over: its holder may be alive there (a store on shared storage); it is refused naming
// that host, unless the store's metadata is on PostgreSQL, whose lease (taken right after this lock,
// store/meta/postgres/lease.ts) decides between hosts by the server's clock (DESIGN §9). Read-only
// opens (`chunkfs status` of a store not mounted) take no lock. The writer also
// holds meta.db itself (store/meta/sqlite/database.ts), so the verbs reach a live mount through its
// control socket.
import * as os from 'node:os';
import * as path from 'node:path';
import { ChunkfsError } from '../src/errors';
import { SyncIo, nodeSyncIo } from './io/sync-io';

export const LOCK_FILE = 'chunkfs.lock';
const ACQUIRE_TRIES_MAX = 4;
const EMPTY_LOCK_WAITS_MAX = 20; // a holder between its O_EXCL create and its write
const EMPTY_LOCK_WAIT_MS = 10;
const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

/** Where a lock holder runs: the host's name and the id of its current boot. */
export interface HostIdentity {
  host: string;
  boot: string;
}

/** This process's host identity ('unknown' boot when the kernel does not say). */
export function thisHost(io: SyncIo = nodeSyncIo): HostIdentity {
  let boot = 'unknown';
  try {
    boot = io.readFile(BOOT_ID_FILE).toString('utf8').trim() || 'unknown';
  } catch {
    // no /proc: the pid alone decides, as before the host line existed
  }
  return { host: os.hostname().replace(/\s/g, '_') || 'unknown', boot };
}

/** The lock file's text (see the header comment). */
export function lockText(pid: number, note: string, self: HostIdentity): string {
  return `${pid}\n${note}\nhost ${self.host} boot ${self.boot}\n`;
}

interface LockContent {
  pid: number;
  note: string;
  holder: HostIdentity | null;
}

export class StoreLockedError extends ChunkfsError {
  readonly code = 'EBUSY';
  /** holderNote: the holder's second line (e.g. "mount /mnt/x"), '' when it wrote none. */
  /** holderHost: the holder's host when it is not this one (its pid cannot be checked from here). */
  constructor(
    dir: string,
    readonly holderPid: number,
    readonly holderNote = '',
    readonly holderHost: string | null = null,
  ) {
    const file = path.join(dir, LOCK_FILE);
    const who =
      holderHost !== null
        ? `pid ${holderPid} on host ${holderHost}`
        : holderPid === process.pid
          ? `this process (pid ${holderPid})`
          : `pid ${holderPid}`;
    // chunkfs commands reach a live mount through its control socket; this is met when another
    // command (or a mount of an older build) holds the store.
    const what =
      holderHost !== null
        ? `unmount it there; if that host is down for good, remove ${file} by hand`
        : 'wait for it to finish, or unmount it';
    super(`store ${dir} is already open read-write by ${who} (lock ${file}); ${what}`, { path: dir });
  }
}

function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // alive, another user's
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The pid in a lock file, or null when it holds none (torn / empty); undefined when the file is gone. */
function readHolder(io: SyncIo, file: string): number | null | undefined {
  const lock = readLock(io, file);
  return lock === undefined || lock === null ? lock : lock.pid;
}

/**
 * Whether a lock must be respected: its holder runs on another host (cannot be checked from here),
 * or on this boot of this host and its pid is alive. A lock of an older build (no host line) is
 * judged by its pid alone.
 */
function holderMayRun(lock: LockContent, self: HostIdentity, otherHostsByLease: boolean): boolean {
  if (lock.holder !== null && lock.holder.host !== self.host) return !otherHostsByLease;
  if (lock.holder !== null && lock.holder.boot !== self.boot) return false; // that boot ended
  return pidAlive(lock.pid);
}

/** A lock file's pid, note and host (null: it holds none, torn or empty); undefined when the file is gone. */
function readLock(io: SyncIo, file: string): LockContent | null | undefined {
  for (let wait = 0; wait < EMPTY_LOCK_WAITS_MAX; wait++) {
    let text: string;
    try {
      text = io.readFile(file).toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const m = /^(\d+)\n(?:([^\n]*)\n(?:host (\S+) boot (\S+)\n)?)?/.exec(text);
    if (m !== null)
      return { pid: Number(m[1]), note: m[2] ?? '', holder: m[3] === undefined ? null : { host: m[3], boot: m[4] } };
    sleepSync(EMPTY_LOCK_WAIT_MS);
  }
  return null;
}

export interface LockHolder {
  pid: number;
  note: string;
  host: string | null;
}

/**
 * Who holds store dir read-write now, as its lock file says: pid, note and host (host null: a lock
 * of an older build); null when the store is not locked (or the lock names nobody yet).
 */
export function lockHolder(dir: string, io: SyncIo = nodeSyncIo): LockHolder | null {
  const lock = readLock(io, path.join(dir, LOCK_FILE));
  if (lock === undefined || lock === null) return null;
  return { pid: lock.pid, note: lock.note, host: lock.holder?.host ?? null };
}

/** What a lock file that cannot be made (but exists already: EEXIST, thrown as is) tells the user. */
function createLock(io: SyncIo, dir: string, file: string, text: string): void {
  try {
    io.createExclusive(file, Buffer.from(text, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw err;
    const why =
      code === 'ENOSPC' ? 'its file system is full (ENOSPC): free some space there and retry' : String(code ?? err);
    throw new ChunkfsError(`store ${dir}: cannot make the lock ${file}: ${why}; nothing was changed`, { path: file });
  }
}

export class StoreLock {
  private released = false;

  /** tookOverFrom: the dead holder's pid when a stale lock was taken over (0: it named none). */
  private constructor(
    private readonly io: SyncIo,
    readonly file: string,
    readonly tookOverFrom: number | null,
  ) {}

  /**
   * Take the lock or throw StoreLockedError naming the holder; a dead holder's lock is taken over.
   * note: one line saying what this process holds the store for (no newline), '' for none.
   * self: this host (a parameter so tests can stand in for another host or boot).
   * otherHostsByLease: another host's lock is left to the metadata lease (PostgreSQL stores).
   */
  static acquire(
    dir: string,
    io: SyncIo = nodeSyncIo,
    note = '',
    self: HostIdentity = thisHost(io),
    otherHostsByLease = false,
  ): StoreLock {
    if (note.includes('\n')) throw new ChunkfsError(`store lock note '${note}' has a newline`, { path: dir });
    const file = path.join(dir, LOCK_FILE);
    let tookOverFrom: number | null = null;
    for (let attempt = 0; attempt < ACQUIRE_TRIES_MAX; attempt++) {
      try {
        createLock(io, dir, file, lockText(process.pid, note, self));
        if (tookOverFrom !== null) {
          const whose =
            tookOverFrom === 0
              ? 'that names no pid'
              : `of pid ${tookOverFrom}, which is no longer running (or ran in an earlier boot)`;
          process.stderr.write(`chunkfs: took over the stale lock ${file} ${whose}\n`);
        }
        return new StoreLock(io, file, tookOverFrom);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const lock = readLock(io, file);
      if (lock === undefined) continue; // released meanwhile
      const holder = lock === null ? null : lock.pid;
      if (lock !== null && holderMayRun(lock, self, otherHostsByLease)) {
        const otherHost = lock.holder !== null && lock.holder.host !== self.host ? lock.holder.host : null;
        throw new StoreLockedError(dir, lock.pid, lock.note, otherHost);
      }
      StoreLock.removeStale(io, file, holder, self, otherHostsByLease);
      tookOverFrom = holder ?? 0;
    }
    throw new ChunkfsError(`store ${dir}: cannot take the lock ${file} (contended); try again`, { path: file });
  }

  /**
   * Move the stale lock aside under a unique name, then check it is the one judged
   * stale: a second process taking over at the same time may already have replaced it.
   */
  private static removeStale(
    io: SyncIo,
    file: string,
    stalePid: number | null,
    self: HostIdentity,
    otherHostsByLease: boolean,
  ): void {
    const aside = `${file}.stale.${process.pid}`;
    try {
      io.rename(file, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    const moved = readLock(io, aside);
    if (
      moved !== undefined &&
      moved !== null &&
      moved.pid !== stalePid &&
      holderMayRun(moved, self, otherHostsByLease)
    ) {
      // We moved a live holder's fresh lock: put it back (fails only if yet another took the name).
      try {
        io.link(aside, file);
      } catch {
        // leave it aside; that holder's release finds its lock gone and does nothing
      }
    }
    io.remove(aside);
  }

  /** Remove the lock if it is still ours. */
  release(): void {
    if (this.released) return;
    this.released = true;
    let holder: number | null | undefined;
    try {
      holder = readHolder(this.io, this.file);
    } catch {
      return;
    }
    if (holder === process.pid) this.io.remove(this.file);
  }
}
