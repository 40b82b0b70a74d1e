// Names answered in C (DESIGN §6, native/fuse3/entry_table.h): the kernel asks a name again each
// time it dropped its dentry (memory pressure, drop_caches), one LOOKUP before the stat, open,
// chmod, rename or unlink that follows, and the binding answers it from a table of names and
// entries this class keeps current. Revoke before reply: the binding forgets a name when a request
// that may change it arrives, and an inode's entry when a request that may change it arrives; here
// every name the namespace changes is revoked inside the operation (RecentNames.onChange), and every
// attribute change through the directory attribute table's revocations (attr-table.ts), which reach
// both tables. Only entries no buffered write can change are kept: not a regular file with open
// state in this mount. A directory made by this mount starts complete in the binding: a name it
// lacks is answered missing there, and the operations here say what each change left (put, gone).
// Lookups the binding answered reach the lookup counts before they are read.
import type { FsCore } from '../core';
import type { Stat } from '../types';
import type { DirAttrs } from './attr-table';
import type { Fuse3Native, Session } from './fuse3-native';
import type { Replier } from './fuse3-reply';

/** st_mode's type bits and a regular file's (stat(2)). */
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;

/**
 * Metadata whose operations are answered once sent (PostgreSQL with a lease: DESIGN §9): a put's read
 * of a row an unanswered statement wrote waits for the server, on the thread that answers requests
 * (test/mount/pg-answered hung with the table on). The table stays off there.
 */
function answersEarly(core: FsCore): boolean {
  return core.ns.answersOnceSent;
}

export class EntryTable {
  private ended = false;

  private constructor(
    private readonly native: Fuse3Native,
    private readonly session: Session,
    private readonly core: FsCore,
    private readonly reply: Replier,
  ) {}

  /**
   * The table for this mount, or null where it cannot be kept current: where the directory attribute
   * table cannot (its revocations are this table's too: attr-table.ts), or the kernel keeps no names.
   */
  static start(
    native: Fuse3Native,
    session: Session,
    core: FsCore,
    reply: Replier,
    dirAttrs: DirAttrs | null,
  ): EntryTable | null {
    if (dirAttrs === null || reply.timeouts.entryS <= 0 || answersEarly(core)) return null;
    const t = new EntryTable(native, session, core, reply);
    core.recentNames.onChange = (parent, name) => t.revokeName(parent, name);
    core.stateGone = (ino) => t.putAttrs(ino);
    core.atime.written = (inos) => {
      for (const ino of inos) t.putAttrs(ino);
    };
    core.lookups.takeAnsweredFrom(() => (t.ended ? null : native.entryLookupsTake(session)));
    native.entriesEnable(session, reply.timeouts.entryS);
    return t;
  }

  /** An entry about to be answered may be kept: nothing buffered in this mount can change it. */
  keeps(st: Stat): boolean {
    return !this.ended && ((st.mode & S_IFMT) !== S_IFREG || this.core.handles.file(st.ino) === undefined);
  }

  private revokeName(parent: number, name: string): void {
    if (!this.ended) this.native.entryRevokeName(this.session, parent, name);
  }

  /** Inode ino was just moved to name in directory parent: its entry as it is now, for the LOOKUP that follows. */
  putMoved(parent: number, name: string, ino: number): void {
    if (this.ended) return;
    try {
      const a = this.core.ns.getattr(ino); // by inode: a read by the new name could wait (fuse3-ops.ts rename)
      if (a === null) return;
      const st = this.core.stat(a);
      if (this.keeps(st)) this.reply.putEntry(parent, name, st);
    } catch (err) {
      // Revoked already by the change: without a put the kernel's LOOKUP reaches JS, as before.
      this.core.opts.log(`entry of ${name} in directory ${parent} not kept: ${(err as Error).message}`);
    }
  }

  /** name in directory parent was just made as inode ino, open: answered once its entry is put (putAttrs). */
  putName(parent: number, name: string, ino: number): void {
    if (!this.ended) this.native.entryNamePut(this.session, parent, name, ino);
  }

  /** A directory just made: the binding knows all its names (none), so it answers missing ones too. */
  dirMade(parent: number, name: string, st: Stat): void {
    if (!this.ended) this.reply.putDirMade(parent, name, st);
  }

  /** name in directory parent was just removed or moved away: a LOOKUP of it may be answered "missing". */
  gone(parent: number, name: string): void {
    if (!this.ended) this.native.entryNameGone(this.session, parent, name);
  }

  /** ino's attributes changed by an operation that just ended: its entry as it is now, for its names held. */
  putAttrs(ino: number): void {
    // An open file's entry is not kept (keeps): no read of its row for nothing (tar sets owner, mode
    // and times by descriptor, three setattrs of an open file per file); its last release puts it.
    if (this.ended || this.core.handles.file(ino) !== undefined) return;
    try {
      const a = this.core.ns.getattr(ino);
      if (a === null) return;
      const st = this.core.stat(a);
      if (this.keeps(st)) this.reply.putEntryAttrs(st);
    } catch (err) {
      this.core.opts.log(`entry of inode ${ino} not kept: ${(err as Error).message}`);
    }
  }

  /** Both names of a rename again once it ended: a LOOKUP answered while it waited may have put the old one. */
  revokeNames(parent: number, name: string, newParent: number, newName: string): void {
    this.revokeName(parent, name);
    this.revokeName(newParent, newName);
  }

  /** What the store changed outside this mount's operations: no entry stands (attrsClear empties both tables). */
  clear(): void {
    if (!this.ended) this.native.attrsClear(this.session);
  }

  /** Before the session is destroyed: nothing reaches it after. The binding's lookups are taken first. */
  end(): void {
    this.core.lookups.settle();
    this.ended = true;
  }
}
