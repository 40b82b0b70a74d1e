// The default transport: our libfuse3 low-level binding (native/fuse3/, DESIGN §2 and §8). Requests
// arrive in batches and are answered by fuse3-ops.ts; forget notices feed the lookup counts.
// Options: 1 MiB writes, readdirplus, attribute and entry caching (the kernel sees every inode as
// one inode, hard links included, so cached attributes stay right), keep_cache, max_background.
// Teardown (stop): a lazy unmount ends the kernel connection once the kernel has written back what
// it caches (an abort after END_WAIT_MS if open files keep it alive); then every request still in
// JS is answered and the session is freed. A crash
// is cleaned up by auto_unmount (libfuse's fusermount3 helper unmounts when this process dies,
// told so by our guard process once this one has wholly exited: unmount-guard.ts).
import { ReadGrants } from './read-grants';
import { DirAttrs } from './attr-table';
import { EntryTable } from './entry-table';
import { raiseDirtyShare } from './dirty-share';
import { execFile } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import * as path from 'node:path';
import type { FsCore } from '../core';
import { Invalidations } from './invalidations';
import type { ReadGrantStats, Transport, TransportOptions } from './transport';
import { findAddon, fuse3Native, Session } from './fuse3-native';
import { startUnmountGuard } from './unmount-guard';
import { ATTR_FIELD_COUNT, DIR_ENTRIES_PER_REPLY_MAX, F, FIELD_COUNT, OP } from './fuse3-abi';
import { Replier } from './fuse3-reply';
import { Batch, Ctx, handle, makeRun } from './fuse3-ops';
import { ReadBuffers } from './read-buffers';
import { opLog } from './guard';
import { STORED_XATTR_PREFIXES } from '../ops-xattr';
import { ACL_PREFIX } from '../acl';

/**
 * The kernel may keep attributes and names this long (DESIGN §6: it caches what chunkfs alone
 * changes). Every change reaches the store through this kernel, which updates or drops what it
 * cached (a write or a read marks the attributes or atime stale itself); storing buffered bytes,
 * heal, scrub and compaction change no attribute; `chunkfs inject` drops the caches explicitly.
 * 1 s before (libfuse's default), held there while fusermount3's auto_unmount misjudged a dead
 * mount as alive; the unmount guard (native/fuse3/unmount_guard.cc) settled that. Measured: a
 * second `stat` of 2,000 files 2 s after the first asked the mount again for each at 1 s.
 */
export const CACHE_TIMEOUT_S = 30;
const MAX_WRITE_BYTES = 1 << 20;
// Background requests (read-ahead, write-back) the kernel keeps in flight; the write-back buffer
// takes writes as fast as memory copies, so 64 x 1 MiB keeps a stream going without a backlog.
const MAX_BACKGROUND = 64;
const CONGESTION_THRESHOLD = 48;
/** After a lazy unmount, how long open files may keep the connection before it is aborted. */
const END_WAIT_MS = 5_000;
/** How long requests still in the core may take to finish at teardown before they answer EIO. */
const DRAIN_WAIT_MS = 60_000;
const UNMOUNT_TIMEOUT_MS = 10_000;

function sleep(ms: number): Promise<'timeout'> {
  return new Promise((resolve) => setTimeout(() => resolve('timeout'), ms).unref());
}

/** Runs a command; null on success, else what went wrong. */
function runQuietly(cmd: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: UNMOUNT_TIMEOUT_MS }, (err, stdout, stderr) => {
      resolve(err === null ? null : `${err.message.trim()} ${String(stderr).trim()}`);
    });
  });
}

const FUSECTL_DIR = '/sys/fs/fuse/connections';

/** The first of names on $PATH, or null. */
function onPath(...names: string[]): string | null {
  const dirs = (process.env.PATH ?? '/usr/bin:/bin').split(':').filter((d) => d.length > 0);
  for (const name of names) for (const d of dirs) if (existsSync(path.join(d, name))) return name;
  return null;
}

/**
 * Ends a FUSE connection at once (/sys/fs/fuse/connections/<id>/abort), whatever holds it. The
 * control file system is mounted here when the system has not (systemd does at boot; a bare VM
 * may not); without root that fails and the connection ends when the last open file closes.
 */
async function abortConnection(id: number, log: (m: string) => void): Promise<void> {
  const file = `${FUSECTL_DIR}/${id}/abort`;
  try {
    await fsp.access(file);
  } catch {
    const err = await runQuietly('mount', ['-t', 'fusectl', 'fusectl', FUSECTL_DIR]);
    if (err !== null) log(`mounting fusectl: ${err}`);
  }
  await fsp
    .writeFile(file, '1')
    .catch((e: Error) => log(`abort: ${e.message} (the mount ends when its last open file closes)`));
}

export async function mountFuse3(core: FsCore, mountpoint: string, opts: TransportOptions): Promise<Transport> {
  const native = fuse3Native();
  // auto_unmount needs libfuse3's helper. Without the fuse3 package (the old fuse package replaces
  // it) root can still mount, but a crash then leaves the mount point stale until the next mount.
  const helper = onPath('fusermount3');
  if (helper === null) opts.log('fusermount3 not found (Debian package fuse3): mounting without auto_unmount');
  const unmounter = helper ?? onPath('fusermount') ?? 'fusermount3';
  const scratch = new Float64Array(ATTR_FIELD_COUNT * DIR_ENTRIES_PER_REPLY_MAX);
  let ended: () => void = () => undefined;
  const endedP = new Promise<void>((resolve) => {
    ended = resolve;
  });
  let x: Ctx | null = null;
  let interrupts = 0;

  const onBatch = (
    rows: Float64Array,
    count: number,
    names: Array<string | undefined>,
    bufs: Array<Buffer | undefined>,
    end: boolean,
  ): void => {
    const b: Batch = { rows, names, bufs };
    for (let i = 0; i < count; i++) {
      const op = rows[i * FIELD_COUNT + F.op];
      if (op === OP.forget) {
        core
          .forget(rows[i * FIELD_COUNT + F.ino], rows[i * FIELD_COUNT + F.size])
          .catch((err: Error) => opts.log(`forget: ${err.message}`));
      } else if (op === OP.interrupt) {
        // Every op here finishes on its own (store I/O, no unbounded waits): the kernel gets the
        // normal answer, which the interrupt protocol allows. Counted for the teardown log.
        interrupts += 1;
      } else {
        x!.reply.delivered(rows[i * FIELD_COUNT + F.id]);
        handle(x!, b, i);
      }
    }
    if (end) ended();
  };

  // Every kernel since 4.9 grants POSIX ACLs; one that does not refuses the ACL names itself.
  // Without them (-o noacl) the kernel refuses the ACL names (EOPNOTSUPP) and checks the mode alone.
  core.posixAcl = opts.posixAcl;
  const session: Session = native.mount(
    {
      mountpoint,
      fsname: opts.fsname,
      subtype: 'chunkfs',
      allowOther: opts.allowOther,
      defaultPermissions: true,
      readOnly: opts.readOnly,
      suid: opts.suid,
      dev: opts.dev,
      posixAcl: opts.posixAcl,
      autoUnmount: helper !== null,
      writebackCache: opts.writebackCache,
      readdirplus: true,
      maxWriteBytes: MAX_WRITE_BYTES,
      maxBackground: MAX_BACKGROUND,
      congestionThreshold: CONGESTION_THRESHOLD,
      spinUs: opts.spinUs ?? 0,
      // The kernel asks for security.capability before every write (measured: 58,607 of them in the
      // sqlite test's 77,402 writes), each a JS round trip that finds nothing.
      xattrPrefixes: [...STORED_XATTR_PREFIXES, ACL_PREFIX],
    },
    onBatch,
    scratch,
  );
  if (helper !== null) startUnmountGuard(native, session, findAddon(), opts.log);
  // A follower's kernel caches no names and no attributes (another process changes them): every
  // lookup and stat reaches the store, and notify_inval_inode drops the pages of changed files.
  const timeoutS = core.followsWriter ? 0 : CACHE_TIMEOUT_S;
  const reply = new Replier(native, session, scratch, { attrS: timeoutS, entryS: timeoutS });
  const grants = ReadGrants.possible(core) ? new ReadGrants(native, session, core) : null;
  const dirAttrs = DirAttrs.start(native, session, core, reply);
  const entries = EntryTable.start(native, session, core, reply, dirAttrs);
  x = {
    core,
    reply,
    log: opts.log,
    readBuffers: new ReadBuffers(),
    grants,
    dirAttrs,
    entries,
    run: makeRun(core, reply, opLog(opts.log, core.opts.debug === true), opts.readOnly, opts.observeOp),
  };
  // A flush of an open file may fail: its close goes to JS again, to report it (clean_closes.h).
  core.wb.onStoreStart = (ino) => native.cleanCloseForget(session, ino);
  // After x is set: the session serves requests from now on (they may come during this await).
  const connId = native.connectionId(session);
  if (opts.writebackCache && process.getuid?.() === 0 && connId !== null) await raiseDirtyShare(connId, opts.log);

  let stopping = false;
  const invalidations = new Invalidations(
    (inos) => native.invalidate(session, inos),
    core.lookups,
    (parents, names) => native.invalidateEntries(session, parents, names),
  );
  return {
    name: 'fuse3',
    dropKernelCache(): Promise<void> {
      // Every inode the kernel knows (its lookup counts); the binding asks on a worker thread.
      dirAttrs?.clear();
      return invalidations.now(core.lookups.inos());
    },
    writerChanged(changed: readonly number[] | 'all'): void {
      // 'all': the metadata was reloaded (a reconnection, a lost lease): no answer from before stands.
      // Names too: one a crash of the metadata lost would stand until its entry timeout (DESIGN §9).
      if (changed === 'all') {
        dirAttrs?.clear();
        invalidations.forgetNames(core.recentNames.take());
      } else {
        entries?.clear(); // names in changed directories too (attrsClear: both tables)
      }
      invalidations.soon(changed);
    },
    readGrantStats(): ReadGrantStats | null {
      return grants === null || stopping ? null : grants.stats();
    },
    async stop(goneAlready: boolean): Promise<void> {
      stopping = true; // the session goes at the end: no more questions to it
      // The loop keeps serving during the unmount: the kernel writes cached dirty pages back first.
      if (!goneAlready) {
        const err = await runQuietly(unmounter, ['-u', '-z', mountpoint]);
        if (err !== null) opts.log(`unmount: ${err}`);
      }
      if ((await Promise.race([endedP, sleep(END_WAIT_MS)])) === 'timeout') {
        // Asked now, not at mount: once the kernel ended it, its number may name another mount's connection.
        const id = native.connectionId(session);
        if (id !== null) {
          opts.log(`open files keep ${mountpoint} alive: aborting FUSE connection ${id}`);
          await abortConnection(id, opts.log);
        }
        await endedP;
      }
      if ((await Promise.race([reply.whenDrained(), sleep(DRAIN_WAIT_MS)])) === 'timeout') {
        opts.log(`${reply.inFlight} requests still running after ${DRAIN_WAIT_MS} ms: answering EIO`);
      }
      await invalidations.stop(); // its worker thread uses the session
      grants?.end();
      dirAttrs?.end();
      entries?.end();
      const unanswered = native.destroy(session);
      if (unanswered > 0 || interrupts > 0)
        opts.log(`teardown: ${unanswered} unanswered requests, ${interrupts} interrupts seen`);
    },
  };
}
