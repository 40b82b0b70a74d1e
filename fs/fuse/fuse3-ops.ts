// One handler per libfuse3 request kind: the request row's fields -> an inode-based core call ->
// the reply (fuse3-reply.ts). Every handler answers exactly once (guard.ts). Entries handed to the
// kernel count as lookups (lookups.ts) only when the kernel took them (the reply returned 0).
import type { ReadGrants } from './read-grants';
import type { DirAttrs } from './attr-table';
import type { EntryTable } from './entry-table';
import type { FsCore } from '../core';
import type { AttrChanges, Caller, Stat, TimeArg } from '../types';
import * as attr from '../ops-attr';
import * as names from '../ops-names';
import * as file from '../ops-file';
import * as dir from '../ops-dir';
import * as xattr from '../ops-xattr';
import { fallocate } from '../ops-fallocate';
import { lseek } from '../ops-seek';
import { F, FIELD_COUNT, OP, OP_NAMES, OPEN_CLEAN, OPEN_KEEP_CACHE, OPEN_NOFLUSH, SET } from './fuse3-abi';
import { Log, OpLog, guard } from './guard';
import { leaseLostRefusal, refusalOf } from './read-only';
import type { OpObserver } from './op-observer';
import type { Replier } from './fuse3-reply';
import { ReadBuffers } from './read-buffers';
import { posix } from '../errno';
import { staleIfGone } from './gone-stale';

/** open(2)'s access-mode bits, and read-only among them (fcntl.h). */
const O_ACCMODE = 0o3;
const O_RDONLY = 0;

const NS_PER_S = 1_000_000_000n;
const ENOSYS = 38;
/** Bytes a directory entry takes at least in a reply (fuse_dirent / fuse_direntplus with a short name). */
const DIRENT_BYTES_MIN = 32;
const DIRENTPLUS_BYTES_MIN = 152;

/** One delivered batch: request i's fields are rows[i * FIELD_COUNT + F.*]. */
export interface Batch {
  rows: Float64Array;
  names: Array<string | undefined>;
  bufs: Array<Buffer | undefined>;
}

export interface Ctx {
  core: FsCore;
  reply: Replier;
  log: Log;
  readBuffers: ReadBuffers;
  /** Read grants (fs/fuse/read-grants.ts), or null when the mount cannot have them. */
  grants: ReadGrants | null;
  /** Directory attributes answered by the binding (fs/fuse/attr-table.ts), or null when the mount cannot have them. */
  dirAttrs: DirAttrs | null;
  /** Names answered by the binding (fs/fuse/entry-table.ts), or null when the mount cannot have them. */
  entries: EntryTable | null;
  /** Guards an op whose success answer is ok; a failure answers its errno. */
  run<T>(b: Batch, i: number, fn: () => T | Promise<T>, ok: (v: T) => void): void;
}

const num = (b: Batch, i: number, f: number): number => b.rows[i * FIELD_COUNT + f];
const nameOf = (b: Batch, i: number): string => b.names[2 * i] ?? '';
const name2Of = (b: Batch, i: number): string => b.names[2 * i + 1] ?? '';
const idOf = (b: Batch, i: number): number => num(b, i, F.id);
const inoOf = (b: Batch, i: number): number => num(b, i, F.ino);
const fhOf = (b: Batch, i: number): number => num(b, i, F.fh);

function callerOf(b: Batch, i: number): Caller {
  return { uid: num(b, i, F.uid), gid: num(b, i, F.gid), pid: num(b, i, F.pid), umask: num(b, i, F.umask) };
}

/**
 * A time the kernel passed (signed 64-bit seconds, nanoseconds), as nanoseconds since the epoch.
 * Seconds travel as a double; beyond 2^53 the seconds it lost ride in the nanoseconds field
 * (native/fuse3/time_split.h), so the sum is exact for every time the kernel can pass.
 */
function timeOf(b: Batch, i: number, s: number, ns: number): bigint {
  const sec = num(b, i, s);
  const nsec = num(b, i, ns);
  if (!Number.isInteger(sec) || !Number.isInteger(nsec))
    throw posix('EINVAL', `time of ${sec} s ${nsec} ns is not whole`);
  return BigInt(sec) * NS_PER_S + BigInt(nsec);
}

export function changesOf(b: Batch, i: number): AttrChanges {
  const set = num(b, i, F.toSet);
  const c: AttrChanges = {};
  if (num(b, i, F.killSuidgid) === 1) c.killSuidgid = true;
  if (set & SET.mode) c.mode = num(b, i, F.mode);
  if (set & SET.uid) c.uid = num(b, i, F.attrUid);
  if (set & SET.gid) c.gid = num(b, i, F.attrGid);
  if (set & SET.size) c.sizeBytes = num(b, i, F.size);
  if (set & (SET.atime | SET.atimeNow))
    c.atime = set & SET.atimeNow ? 'now' : (timeOf(b, i, F.atimeS, F.atimeNs) as TimeArg);
  if (set & (SET.mtime | SET.mtimeNow))
    c.mtime = set & SET.mtimeNow ? 'now' : (timeOf(b, i, F.mtimeS, F.mtimeNs) as TimeArg);
  if (set & SET.ctime) c.ctimeNs = timeOf(b, i, F.ctimeS, F.ctimeNs);
  return c;
}

/**
 * Answer with an entry; the kernel holds a reference to it when the reply went through. keep: a
 * LOOKUP's entry the name table may keep (entry-table.ts).
 */
function entry(x: Ctx, id: number, st: Stat, keep = false): void {
  if (x.reply.entry(id, st, keep) === 0) x.core.lookups.add(st.ino);
}

/** A handle the kernel never received (its open reply was dropped) is closed here: no release comes. */
function releaseLost(x: Ctx, fh: number): void {
  file.release(x.core, fh).catch((err: Error) => x.log(`release of an unanswered open: ${err.message}`));
}

/**
 * Open flags: every change reaches the store through this kernel, so its cached pages stay right and
 * are kept across opens. Not under strictatime: the kernel leaves atime to us (FUSE inodes are
 * S_NOATIME) and a read it answers from its cache never reaches us, so each open starts with the
 * cache dropped and its first read moves atime (xfstests generic/003; reads from cache through a
 * descriptor that stays open still do not: docs/filesystem.md).
 */
function openFlagsOf(x: Ctx): number {
  // A follower's files change by another process's writes: each open starts with the cache dropped.
  return x.core.atime.mode === 'strictatime' || x.core.followsWriter ? 0 : OPEN_KEEP_CACHE;
}

/**
 * A read-only descriptor's close needs no FLUSH: it buffered nothing to store or report (a writer's
 * own close or fsync does that: WriteBack.close), and the kernel keeps POSIX and flock locks itself
 * (lowlevel_ops.cc), so a FLUSH would only cost a round trip (one of 4 requests of a cold
 * open-read-close). Writable descriptors keep it: close reports a failed
 * background flush and stores a file larger than a chunk before it returns.
 */
function noFlushOf(openFlags: number): number {
  return (openFlags & O_ACCMODE) === O_RDONLY ? OPEN_NOFLUSH : 0;
}

/**
 * A new file's close answered by the binding (native/fuse3/clean_closes.h, DESIGN §6): it holds
 * nothing to store or report, and the binding forgets the mark when a write, setattr, fallocate or
 * open of it arrives.
 */
function cleanOf(x: Ctx, fh: number): number {
  const f = x.core.handles.fileIfOpen(fh);
  return f !== undefined && x.core.wb.closesClean(f) ? OPEN_CLEAN : 0;
}

/**
 * A written file's close answered by the binding (native/fuse3/clean_closes.h, DESIGN §6): it would
 * report nothing and only join a close batch, which its release joins instead. One JS round trip
 * less of the four (OPEN, WRITE, FLUSH, RELEASE) in open-write-close of a small file; the setattr
 * answer marks too (tar sets times, owner and mode by descriptor between its write and close).
 */
function closesToBatch(x: Ctx, fh: number): boolean {
  const f = x.core.handles.fileIfOpen(fh);
  return f !== undefined && x.core.wb.closesToBatch(f);
}

/** An open; one the kernel marked FUSE_OPEN_KILL_SUIDGID (an O_TRUNC open by a caller without CAP_FSETID) drops set-id bits. */
async function openKilling(x: Ctx, b: Batch, i: number): Promise<number> {
  const fh = await file.open(x.core, inoOf(b, i), num(b, i, F.flags));
  if (num(b, i, F.killSuidgid) === 1) attr.dropSetIdAfterWrite(x.core, inoOf(b, i), callerOf(b, i));
  return fh;
}

type Handler = (x: Ctx, b: Batch, i: number) => void;

const HANDLERS: Partial<Record<number, Handler>> = {
  [OP.lookup]: (x, b, i) =>
    x.run(
      b,
      i,
      () => names.lookupOrMissing(x.core, inoOf(b, i), nameOf(b, i)),
      (st) => {
        if (st === null) x.reply.missing(idOf(b, i));
        else entry(x, idOf(b, i), st, x.entries?.keeps(st) === true);
      },
    ),
  [OP.getattr]: (x, b, i) =>
    x.run(
      b,
      i,
      () => attr.getattr(x.core, inoOf(b, i)),
      (st) => x.reply.attr(idOf(b, i), st),
    ),
  [OP.setattr]: (x, b, i) =>
    x.run(
      b,
      i,
      () => attr.setattr(x.core, inoOf(b, i), changesOf(b, i), callerOf(b, i)),
      (st) => {
        const f = x.core.handles.file(inoOf(b, i));
        x.reply.attr(idOf(b, i), st, f !== undefined && x.core.wb.closesToBatch(f));
        x.entries?.putAttrs(inoOf(b, i));
      },
    ),
  [OP.readlink]: (x, b, i) =>
    x.run(
      b,
      i,
      () => names.readlink(x.core, inoOf(b, i)),
      (t) => x.reply.readlink(idOf(b, i), t),
    ),
  [OP.mknod]: (x, b, i) =>
    x.run(
      b,
      i,
      () => names.mknod(x.core, inoOf(b, i), nameOf(b, i), num(b, i, F.mode), num(b, i, F.rdev), callerOf(b, i)),
      (st) => {
        x.dirAttrs?.put(inoOf(b, i));
        entry(x, idOf(b, i), st);
      },
    ),
  [OP.mkdir]: (x, b, i) =>
    x.run(
      b,
      i,
      () => names.mkdir(x.core, inoOf(b, i), nameOf(b, i), num(b, i, F.mode), callerOf(b, i)),
      (st) => {
        x.dirAttrs?.put(inoOf(b, i));
        entry(x, idOf(b, i), st);
        x.entries?.dirMade(inoOf(b, i), nameOf(b, i), st);
      },
    ),
  [OP.unlink]: (x, b, i) =>
    x.run(
      b,
      i,
      () => names.unlink(x.core, inoOf(b, i), nameOf(b, i)),
      () => {
        x.dirAttrs?.put(inoOf(b, i));
        x.reply.ok(idOf(b, i));
        x.entries?.gone(inoOf(b, i), nameOf(b, i));
      },
    ),
  [OP.rmdir]: (x, b, i) =>
    x.run(
      b,
      i,
      () => names.rmdir(x.core, inoOf(b, i), nameOf(b, i)),
      () => {
        x.dirAttrs?.put(inoOf(b, i));
        x.reply.ok(idOf(b, i));
        x.entries?.gone(inoOf(b, i), nameOf(b, i));
      },
    ),
  [OP.symlink]: (x, b, i) =>
    x.run(
      b,
      i,
      () => names.symlink(x.core, inoOf(b, i), nameOf(b, i), name2Of(b, i), callerOf(b, i)),
      (st) => {
        x.dirAttrs?.put(inoOf(b, i));
        entry(x, idOf(b, i), st);
      },
    ),
  [OP.rename]: (x, b, i) => {
    let moved: number | null = null;
    x.run(
      b,
      i,
      () => {
        // The inode renamed, read before (a read of the new name after could wait on PostgreSQL for the
        // rename's own statements: DESIGN §9 "answered once sent"); looked up again by inode after.
        moved = x.entries === null ? null : (x.core.ns.lookup(inoOf(b, i), nameOf(b, i))?.ino ?? null);
        return names
          .rename(
            x.core,
            inoOf(b, i),
            nameOf(b, i),
            num(b, i, F.ino2),
            name2Of(b, i),
            num(b, i, F.flags),
            callerOf(b, i),
          )
          .finally(() => x.entries?.revokeNames(inoOf(b, i), nameOf(b, i), num(b, i, F.ino2), name2Of(b, i)));
      },
      () => {
        x.dirAttrs?.put(inoOf(b, i));
        if (num(b, i, F.ino2) !== inoOf(b, i)) x.dirAttrs?.put(num(b, i, F.ino2));
        x.reply.ok(idOf(b, i));
        if (moved !== null) x.entries?.putMoved(num(b, i, F.ino2), name2Of(b, i), moved);
        // A plain rename leaves nothing at the old name (an exchange or a whiteout does: asked of JS).
        const same = num(b, i, F.ino2) === inoOf(b, i) && name2Of(b, i) === nameOf(b, i);
        if (!same && (num(b, i, F.flags) & (names.RENAME_EXCHANGE | names.RENAME_WHITEOUT)) === 0)
          x.entries?.gone(inoOf(b, i), nameOf(b, i));
      },
    );
  },
  [OP.link]: (x, b, i) =>
    x.run(
      b,
      i,
      () => names.link(x.core, inoOf(b, i), num(b, i, F.ino2), name2Of(b, i)),
      (st) => {
        x.dirAttrs?.put(num(b, i, F.ino2));
        entry(x, idOf(b, i), st);
      },
    ),

  [OP.open]: (x, b, i) =>
    x.run(
      b,
      i,
      () => openKilling(x, b, i),
      (fh) => {
        if (x.reply.open(idOf(b, i), fh, openFlagsOf(x) | noFlushOf(num(b, i, F.flags))) !== 0) releaseLost(x, fh);
      },
    ),
  [OP.create]: (x, b, i) =>
    x.run(
      b,
      i,
      () => file.create(x.core, inoOf(b, i), nameOf(b, i), num(b, i, F.mode), num(b, i, F.flags), callerOf(b, i)),
      ({ stat, fh }) => {
        x.dirAttrs?.put(inoOf(b, i));
        if (x.reply.create(idOf(b, i), stat, fh, openFlagsOf(x) | cleanOf(x, fh)) === 0) x.core.lookups.add(stat.ino);
        else releaseLost(x, fh);
        x.entries?.putName(inoOf(b, i), nameOf(b, i), stat.ino);
      },
    ),
  [OP.read]: (x, b, i) => {
    const size = num(b, i, F.size);
    const buf = x.readBuffers.take(size);
    x.run(
      b,
      i,
      () => file.read(x.core, fhOf(b, i), buf, size, num(b, i, F.off)),
      (n) => {
        try {
          x.reply.buf(idOf(b, i), buf, n);
        } finally {
          x.readBuffers.give(buf);
        }
        if (n > 0) x.grants?.offer(fhOf(b, i), num(b, i, F.off));
      },
    );
  },
  [OP.write]: (x, b, i) => {
    const data = b.bufs[i] ?? Buffer.alloc(0);
    x.run(
      b,
      i,
      () => {
        if (num(b, i, F.killSuidgid) === 1)
          attr.dropSetIdAfterWrite(x.core, x.core.handles.fileOf(fhOf(b, i)).ino, callerOf(b, i));
        return file.write(x.core, fhOf(b, i), data, data.length, num(b, i, F.off));
      },
      (n) => x.reply.write(idOf(b, i), n, closesToBatch(x, fhOf(b, i))),
    );
  },
  [OP.flush]: (x, b, i) =>
    x.run(
      b,
      i,
      () => file.flush(x.core, fhOf(b, i)),
      () => x.reply.ok(idOf(b, i)),
    ),
  [OP.release]: (x, b, i) =>
    x.run(
      b,
      i,
      () => file.release(x.core, fhOf(b, i)),
      () => x.reply.ok(idOf(b, i)),
    ),
  [OP.fsync]: (x, b, i) =>
    x.run(
      b,
      i,
      () => file.fsync(x.core, fhOf(b, i)),
      () => x.reply.ok(idOf(b, i)),
    ),
  [OP.fallocate]: (x, b, i) =>
    x.run(
      b,
      i,
      () => fallocate(x.core, fhOf(b, i), num(b, i, F.flags), num(b, i, F.off), num(b, i, F.size)),
      () => x.reply.ok(idOf(b, i)),
    ),
  [OP.lseek]: (x, b, i) =>
    x.run(
      b,
      i,
      () => lseek(x.core, fhOf(b, i), num(b, i, F.off), num(b, i, F.flags)),
      (off) => x.reply.lseek(idOf(b, i), off),
    ),

  [OP.opendir]: (x, b, i) =>
    x.run(
      b,
      i,
      () => dir.opendir(x.core, inoOf(b, i)),
      (fh) => {
        if (x.reply.open(idOf(b, i), fh, 0) !== 0) dir.releasedir(x.core, fh);
      },
    ),
  [OP.readdir]: (x, b, i) => {
    const size = num(b, i, F.size);
    x.run(
      b,
      i,
      () =>
        dir
          .readdir(x.core, fhOf(b, i), num(b, i, F.off), Math.ceil(size / DIRENT_BYTES_MIN))
          .map((e) => ({ entry: e })),
      (page) => x.reply.dir(idOf(b, i), size, page),
    );
  },
  [OP.readdirplus]: (x, b, i) => {
    const size = num(b, i, F.size);
    x.run(
      b,
      i,
      () => dir.readdirplus(x.core, fhOf(b, i), num(b, i, F.off), Math.ceil(size / DIRENTPLUS_BYTES_MIN)),
      (page) => {
        const sent = x.reply.dir(idOf(b, i), size, page);
        for (let k = 0; k < sent; k++) {
          const e = page[k].entry;
          if (e.name !== '.' && e.name !== '..') x.core.lookups.add(e.ino);
        }
      },
    );
  },
  [OP.releasedir]: (x, b, i) =>
    x.run(
      b,
      i,
      () => dir.releasedir(x.core, fhOf(b, i)),
      () => x.reply.ok(idOf(b, i)),
    ),
  [OP.fsyncdir]: (x, b, i) =>
    x.run(
      b,
      i,
      () => file.fsyncdir(x.core),
      () => x.reply.ok(idOf(b, i)),
    ),
  [OP.statfs]: (x, b, i) =>
    x.run(
      b,
      i,
      () => attr.statfs(x.core),
      (c) => x.reply.statfs(idOf(b, i), c),
    ),

  [OP.setxattr]: (x, b, i) =>
    x.run(
      b,
      i,
      () =>
        xattr.setxattr(
          x.core,
          inoOf(b, i),
          nameOf(b, i),
          b.bufs[i] ?? Buffer.alloc(0),
          num(b, i, F.flags),
          callerOf(b, i),
        ),
      () => x.reply.ok(idOf(b, i)),
    ),
  [OP.getxattr]: (x, b, i) =>
    x.run(
      b,
      i,
      () => xattr.getxattr(x.core, inoOf(b, i), nameOf(b, i), num(b, i, F.size)),
      (r) => (typeof r === 'number' ? x.reply.xattrSize(idOf(b, i), r) : x.reply.buf(idOf(b, i), r, r.length)),
    ),
  [OP.listxattr]: (x, b, i) =>
    x.run(
      b,
      i,
      () => xattr.listxattr(x.core, inoOf(b, i), num(b, i, F.size)),
      (r) => (typeof r === 'number' ? x.reply.xattrSize(idOf(b, i), r) : x.reply.buf(idOf(b, i), r, r.length)),
    ),
  [OP.removexattr]: (x, b, i) =>
    x.run(
      b,
      i,
      () => xattr.removexattr(x.core, inoOf(b, i), nameOf(b, i)),
      () => x.reply.ok(idOf(b, i)),
    ),
};

/** Answers request i of a batch (forget and interrupt notices are handled by the caller). */
export function handle(x: Ctx, b: Batch, i: number): void {
  const h = HANDLERS[num(b, i, F.op)];
  if (h === undefined) {
    x.reply.err(idOf(b, i), ENOSYS);
    return;
  }
  h(x, b, i);
}

/**
 * What a log line about request i names: the path of its inode (and the name it carries), made only
 * when a line is written; "ino N" for an inode without a name. Captures the fields now: the batch's
 * rows are reused once the handler returns.
 */
export function subjectOf(core: FsCore, b: Batch, i: number): () => string {
  const ino = inoOf(b, i);
  const n = b.names[2 * i];
  return () => {
    const p = core.store.pathOf(ino);
    const at = p === null ? `ino ${ino}` : p;
    return n === undefined ? at : `${at === '/' ? '' : at}/${n}`;
  };
}

/**
 * Runs request i's op under guard (one answer, whatever happens). readOnly: changes answer EROFS
 * (read-only.ts). observe: told the op's duration and result (bytes for read/write, 0 for other
 * successes, the negative errno of a failure), as fuse-native's observed op table is.
 */
export function makeRun(core: FsCore, reply: Replier, log: OpLog, readOnly: boolean, observe?: OpObserver): Ctx['run'] {
  return (b, i, fn, ok) => {
    const name = OP_NAMES[num(b, i, F.op)] ?? 'op';
    const refusal = readOnly ? refusalOf(name, num(b, i, F.flags)) : leaseLostRefusal(core, name, num(b, i, F.flags));
    const op =
      refusal === null
        ? fn
        : (): never => {
            throw refusal;
          };
    const fail = (neg: number): void => {
      reply.err(idOf(b, i), name === 'lookup' ? -neg : staleIfGone(core, -neg));
    };
    if (observe === undefined) {
      guard(log, name, subjectOf(core, b, i), op, ok, fail);
      return;
    }
    const startNs = process.hrtime.bigint();
    const seconds = (): number => Number(process.hrtime.bigint() - startNs) / 1e9;
    const counts = name === 'read' || name === 'write';
    guard(
      log,
      name,
      subjectOf(core, b, i),
      op,
      (v) => {
        observe(name, seconds(), counts && typeof v === 'number' ? v : 0);
        ok(v);
      },
      (neg) => {
        observe(name, seconds(), neg);
        fail(neg);
      },
    );
  };
}
