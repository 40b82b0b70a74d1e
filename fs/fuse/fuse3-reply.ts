// Answers to libfuse3 requests: core shapes (Stat, FsCounts, directory pages) written into the
// binding's scratch rows, then one fuse_reply_* call. Counts what is in flight, so teardown knows
// when every request has its answer.
import type { Fuse3Native, Session } from './fuse3-native';
import type { DirEntry, FsCounts, Stat } from '../types';
import { A, ATTR_FIELD_COUNT, DIR_ENTRIES_PER_REPLY_MAX, S, SECONDS_SENT_MAX } from './fuse3-abi';

const NS_PER_S = 1_000_000_000n;
const STATFS_BLOCK_BYTES = 4096;

export interface CacheTimeouts {
  /** How long the kernel may keep attributes without asking again. */
  attrS: number;
  /** How long the kernel may keep a name -> inode entry. */
  entryS: number;
}

function putTime(row: Float64Array, base: number, sField: number, nsField: number, t: bigint): void {
  let s = t / NS_PER_S;
  let ns = t % NS_PER_S;
  if (ns < 0n) {
    s -= 1n;
    ns += NS_PER_S;
  } // times before 1970: seconds down, nanoseconds positive
  // Beyond 2^53 s the double rounds: the seconds it lost ride in the nanoseconds field
  // (native/fuse3/time_split.h), whose largest seconds value is the largest double below 2^63.
  const sent = Math.min(Number(s), SECONDS_SENT_MAX);
  row[base + sField] = sent;
  row[base + nsField] = Number((s - BigInt(sent)) * NS_PER_S + ns);
}

/** Requests delivered to JS and not answered yet; far above the binding's slots (4096). */
const IN_FLIGHT_MAX = 1 << 16;

export class Replier {
  /** Ids of requests delivered and not yet answered. */
  private readonly pending = new Set<number>();
  private drained: (() => void) | null = null;

  constructor(
    readonly native: Fuse3Native,
    readonly session: Session,
    readonly scratch: Float64Array,
    readonly timeouts: CacheTimeouts,
  ) {}

  get inFlight(): number {
    return this.pending.size;
  }

  /** A request was handed to JS: it is in flight until answered. */
  delivered(id: number): void {
    if (this.pending.size >= IN_FLIGHT_MAX) throw new RangeError(`more than ${IN_FLIGHT_MAX} requests in flight`);
    this.pending.add(id);
  }

  /** Resolves when nothing is in flight. */
  whenDrained(): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = resolve;
    });
  }

  /**
   * Calls the binding; the request is answered even when the call throws (bad arguments: the
   * binding answered EIO itself; unknown id: it was answered before).
   */
  private answer(id: number, fn: () => number): number {
    try {
      return fn();
    } finally {
      if (this.pending.delete(id) && this.pending.size === 0 && this.drained !== null) {
        const d = this.drained;
        this.drained = null;
        d();
      }
    }
  }

  private putStat(row: number, st: Stat): void {
    const r = this.scratch;
    const b = row * ATTR_FIELD_COUNT;
    r[b + A.ino] = st.ino;
    r[b + A.generation] = st.generation;
    r[b + A.mode] = st.mode;
    r[b + A.nlink] = st.nlink;
    r[b + A.uid] = st.uid;
    r[b + A.gid] = st.gid;
    r[b + A.rdev] = st.rdev;
    r[b + A.size] = st.sizeBytes;
    r[b + A.blocks] = st.blocks;
    r[b + A.blksize] = st.blksizeBytes;
    putTime(r, b, A.atimeS, A.atimeNs, st.atimeNs);
    putTime(r, b, A.mtimeS, A.mtimeNs, st.mtimeNs);
    putTime(r, b, A.ctimeS, A.ctimeNs, st.ctimeNs);
    r[b + A.attrTimeout] = this.timeouts.attrS;
    r[b + A.entryTimeout] = this.timeouts.entryS;
  }

  /** errno > 0 fails the request; 0 answers success for ops without data. */
  err(id: number, errno: number): number {
    return this.answer(id, () => this.native.replyErr(this.session, id, errno));
  }
  ok(id: number): number {
    return this.err(id, 0);
  }
  /** keep: the name table may keep a LOOKUP's entry (fs/fuse/entry-table.ts). */
  entry(id: number, st: Stat, keep = false): number {
    this.putStat(0, st);
    return this.answer(id, () => this.native.replyEntry(this.session, id, keep));
  }
  /**
   * "No such name", cached by the kernel for the entry timeout (node id 0: a negative dentry, no
   * lookup count). Safe for as long as positive entries are: every name is made through this kernel.
   */
  missing(id: number): number {
    const r = this.scratch;
    r.fill(0, 0, ATTR_FIELD_COUNT);
    r[A.entryTimeout] = this.timeouts.entryS;
    return this.answer(id, () => this.native.replyEntry(this.session, id));
  }
  /** A directory's attributes as they are now, into the binding's table (attr-table.ts); false if refused. */
  putAttr(st: Stat): boolean {
    this.putStat(0, st);
    return this.native.attrPut(this.session);
  }
  /** The entry of name in directory parent as it is now, into the binding's name table (entry-table.ts). */
  putEntry(parent: number, name: string, st: Stat): boolean {
    this.putStat(0, st);
    return this.native.entryPut(this.session, parent, name);
  }
  /** A directory just made as name in parent, into the binding's name table (entry-table.ts). */
  putDirMade(parent: number, name: string, st: Stat): boolean {
    this.putStat(0, st);
    return this.native.entryDirMade(this.session, parent, name);
  }
  /** An inode's entry as it is now, for the names the binding's name table holds of it. */
  putEntryAttrs(st: Stat): boolean {
    this.putStat(0, st);
    return this.native.entryAttrsPut(this.session);
  }
  /** clean: after a setattr, the file's close may be answered by the binding (fs/write-buffer.ts closesToBatch). */
  attr(id: number, st: Stat, clean = false): number {
    this.putStat(0, st);
    return this.answer(id, () => this.native.replyAttr(this.session, id, clean));
  }
  open(id: number, fh: number, flags: number): number {
    return this.answer(id, () => this.native.replyOpen(this.session, id, fh, flags));
  }
  create(id: number, st: Stat, fh: number, flags: number): number {
    this.putStat(0, st);
    return this.answer(id, () => this.native.replyCreate(this.session, id, fh, flags));
  }
  /** clean: the file's close may be answered by the binding (fs/write-buffer.ts closesToBatch). */
  write(id: number, count: number, clean = false): number {
    return this.answer(id, () => this.native.replyWrite(this.session, id, count, clean));
  }
  buf(id: number, data: Buffer, lengthBytes: number): number {
    return this.answer(id, () => this.native.replyBuf(this.session, id, data, lengthBytes));
  }
  readlink(id: number, target: string): number {
    return this.answer(id, () => this.native.replyReadlink(this.session, id, target));
  }
  lseek(id: number, offsetBytes: number): number {
    return this.answer(id, () => this.native.replyLseek(this.session, id, offsetBytes));
  }
  xattrSize(id: number, sizeBytes: number): number {
    return this.answer(id, () => this.native.replyXattrSize(this.session, id, sizeBytes));
  }

  statfs(id: number, c: FsCounts): number {
    const r = this.scratch;
    const blocks = (n: number): number => Math.max(0, Math.floor(n / STATFS_BLOCK_BYTES));
    r[S.bsize] = STATFS_BLOCK_BYTES;
    r[S.frsize] = STATFS_BLOCK_BYTES;
    r[S.blocks] = blocks(c.totalBytes);
    r[S.bfree] = blocks(c.freeBytes);
    r[S.bavail] = blocks(c.availBytes);
    r[S.files] = c.files;
    r[S.ffree] = c.filesFree;
    r[S.favail] = c.filesFree;
    r[S.fsid] = 0;
    r[S.flag] = 0;
    r[S.namemax] = c.nameBytesMax;
    return this.answer(id, () => this.native.replyStatfs(this.session, id));
  }

  /**
   * A page of a listing: plain entries, or with attributes (readdirplus). Returns how many entries
   * the kernel received (negative errno if the reply was dropped).
   */
  dir(id: number, sizeBytes: number, page: Array<{ entry: DirEntry; stat?: Stat }>): number {
    const n = Math.min(page.length, DIR_ENTRIES_PER_REPLY_MAX);
    const names: string[] = [];
    for (let i = 0; i < n; i++) {
      const { entry, stat } = page[i];
      const b = i * ATTR_FIELD_COUNT;
      if (stat !== undefined) this.putStat(i, stat);
      else {
        this.scratch[b + A.ino] = entry.ino;
        this.scratch[b + A.mode] = entry.mode;
      }
      this.scratch[b + A.dirOff] = entry.offset;
      names.push(entry.name);
    }
    const plus = page.length > 0 && page[0].stat !== undefined;
    return this.answer(id, () => this.native.replyDir(this.session, id, plus, sizeBytes, names, n));
  }
}
