// Directory attributes answered in C (DESIGN §6, native/fuse3/attr_table.h): the kernel asks a
// directory's attributes again after every create, unlink, rename, mkdir or rmdir in it (it drops
// them, and default_permissions needs them before the next permission check), and the binding
// answers that GETATTR from a table this class keeps current. Revoke before reply: every change of
// an inode's attributes in the namespace, and every new pending atime, revokes its entry
// synchronously, when it happens (FsCore.watchAttrs); the handlers that change a directory put its
// new attributes before they answer, so the GETATTR that follows finds them.
import type { FsCore } from '../core';
import type { Fuse3Native, Session } from './fuse3-native';
import type { Replier } from './fuse3-reply';

export class DirAttrs {
  /** The session is going: the namespace's late changes (atimes written at unmount) must not reach it. */
  private ended = false;

  private constructor(
    private readonly native: Fuse3Native,
    private readonly session: Session,
    private readonly core: FsCore,
    private readonly reply: Replier,
  ) {}

  /**
   * The table for this mount, or null where it cannot be kept current: a follower (another process
   * changes the namespace), a store whose namespace cannot tell its changes, no attribute caching.
   */
  static start(native: Fuse3Native, session: Session, core: FsCore, reply: Replier): DirAttrs | null {
    if (core.followsWriter || reply.timeouts.attrS <= 0) return null;
    const t = new DirAttrs(native, session, core, reply);
    if (!core.watchAttrs((ino) => t.revoke(ino))) return null;
    native.attrsEnable(session);
    return t;
  }

  private revoke(ino: number): void {
    if (!this.ended) this.native.attrRevoke(this.session, ino);
  }

  /** dirIno changed (an entry made or removed in it): its attributes as they are now, for the GETATTR that follows. */
  put(dirIno: number): void {
    if (this.ended) return;
    try {
      const a = this.core.ns.getattr(dirIno);
      if (a !== null && a.type === 'dir') this.reply.putAttr(this.core.stat(a));
    } catch (err) {
      // The change revoked the entry already: without a put the kernel's GETATTR reaches JS, as before.
      this.core.opts.log(`attributes of directory ${dirIno} not kept: ${(err as Error).message}`);
    }
  }

  /** The kernel's caches are being dropped (chunkfs inject): so is every entry. */
  clear(): void {
    if (!this.ended) this.native.attrsClear(this.session);
  }

  /** Before the session is destroyed: nothing reaches it after. */
  end(): void {
    this.ended = true;
  }
}
