// The rules of the namespace's operations that every engine shares (DESIGN §9 "Operations"): name
// and type checks, errno choices, rename's replace rules, link counts, the orphan list, the
// inherited layout and user.chunkfs.layout, each operation in one transaction, and the order of its
// writes. An engine (store/meta/<engine>/namespace-ops.ts) extends this with the row reads and
// writes below, in its own SQL and with its own caches; it changes no rule here.
//
// The orphan list holds nlink 0 files whose chunks are deleted later, so a crash cannot leak them.
// user.chunkfs.layout: on a directory it is stored and inherited by files created beneath
// (validated, EINVAL if this store cannot hold it); on a file it shows the file's own layout and may
// change only while the file holds no data. listxattr names it only where it was set explicitly (a
// row: cp --preserve=xattr, rsync -X and xattr comparisons must not see an attribute nobody set);
// getxattr answers it on every file.
import { randomU64 } from '../random-ids';
import { Db, ROOT_INO, nowNs, u64ToDb } from './meta';
import { FsError } from '../fs-error';
import { SYMLINK_BYTES_MAX, checkName } from './names';
import { toColumns } from './far-times';
import {
  Attr,
  InodeType,
  LAYOUT_XATTR,
  S_IFDIR,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  SpecialType,
  TREE_DEPTH_MAX,
  typeBits,
} from './attr';
import {
  AttrChange,
  DirEntry,
  NamespaceOps,
  NamespaceOptions,
  RenameFlags,
  Unlinked,
  XATTR_CREATE,
  XATTR_REPLACE,
} from './ops';

/** A whiteout is a character device with device number 0 (the kernel's WHITEOUT_DEV). */
const WHITEOUT_RDEV = 0;
const XATTR_NAME_BYTES_MAX = 255;
const XATTR_VALUE_BYTES_MAX = 64 * 1024;
/** Deeper paths are cut (pathOf: reports name them by inode then). */
const PATH_DEPTH_MAX = 4096;
/** readdir without a limit. */
export const ENTRIES_ALL = Number.MAX_SAFE_INTEGER;

/** The columns of a new inode row; t is its four times. Absent columns are NULL (rdev, size: 0). */
export interface NewInode {
  type: InodeType;
  mode: number;
  uid: number;
  gid: number;
  nlink: number;
  t: bigint;
  size: number;
  parent: number | null;
  layout: string | null;
  cs: number | null;
  bb: number | null;
  eb: number | null;
  seed: bigint | null;
  epoch: number | null;
  target: string | null;
  rdev: number;
}

/** What setattr writes of an inode, in this order (the rest of its row stays). */
export type WrittenAttrs = [mode: number, uid: number, gid: number, atimeNs: bigint, mtimeNs: bigint, ctimeNs: bigint];

/** What getxattr needs of an inode and one of its xattrs (a file's layout is its column). */
export interface XattrFind {
  type: string;
  layout: string | null;
  value: Buffer | null;
}

export abstract class NamespaceBase implements NamespaceOps {
  /** One transaction wrapper, made once (db.transaction builds a new one per call); nested calls are savepoints. */
  private readonly tx;

  constructor(
    readonly db: Db,
    readonly opts: NamespaceOptions,
  ) {
    this.tx = db.transaction((fn: () => unknown) => fn());
  }

  get answersOnceSent(): boolean {
    return this.db.caps.answersOnceSent;
  }

  // ---- The rows, as each engine reads and writes them (its SQL, its caches) ----

  protected abstract inodeAttr(ino: number): Attr | undefined;
  protected abstract entryAttr(parent: number, name: string): Attr | undefined;
  /** The inode's parent column (null for non-directories), undefined when there is no such inode. */
  protected abstract inodeParent(ino: number): number | null | undefined;
  /** The first of ino's names by (parent, name), undefined when it has none. */
  protected abstract firstName(ino: number): { parent: number; name: string } | undefined;
  protected abstract symlinkOf(ino: number): { type: string; target: string | null } | undefined;
  /** The new inode's number; the engine numbers it. */
  protected abstract insertInode(v: NewInode): number;
  protected abstract addEntry(parent: number, name: string, ino: number): void;
  protected abstract removeEntry(parent: number, name: string): void;
  /** nlink += delta and ctime = t. */
  protected abstract addLinks(ino: number, delta: number, t: bigint): void;
  /** mtime and ctime = t (a directory whose entries changed). */
  protected abstract touchDir(ino: number, t: bigint): void;
  protected abstract setParent(ino: number, parent: number): void;
  /** The inode row and its xattrs. */
  protected abstract removeInode(ino: number): void;
  protected abstract hasEntries(dir: number): boolean;
  protected abstract entries(dir: number, after: string, limit: number): DirEntry[];
  protected abstract addOrphan(ino: number): void;
  protected abstract orphanList(): number[];
  protected abstract namesByPrefix(prefix: string, countMax: number): Array<{ parent: number; name: string }>;
  /** The nearest user.chunkfs.layout of dir and its ancestors (at most TREE_DEPTH_MAX), or undefined. */
  protected abstract layoutAbove(dir: number): string | undefined;
  protected abstract writeAttrs(ino: number, ...attrs: WrittenAttrs): void;
  protected abstract writeAtime(ino: number, atimeNs: bigint): void;
  /** A file or directory was made: the lookup that follows may be answered without asking (an engine's cache). */
  protected abstract made(ino: number): void;
  protected abstract xattrValue(ino: number, name: string): Buffer | undefined;
  /** The inode's type and layout with one xattr's value; undefined when there is no such inode. */
  protected abstract xattrFind(ino: number, name: string): XattrFind | undefined;
  protected abstract xattrNames(ino: number): string[];
  protected abstract putXattr(ino: number, name: string, value: Buffer): void;
  /** False when there was no such xattr. */
  protected abstract deleteXattr(ino: number, name: string): boolean;
  protected abstract setCtime(ino: number, t: bigint): void;
  /** The file holds data: chunks or a needle (spec §11). */
  protected abstract holdsData(ino: number): boolean;
  protected abstract setLayout(ino: number, text: string): void;

  // ---- Changes to inode rows ----
  // Each is told to attrChanged at once, inside the operation: a transport's table of attributes
  // revokes the inode before anything replies (DESIGN §6 "Answers in C", revoke before reply).

  /**
   * Told, synchronously, each inode whose attributes an operation just changed (mode, owner, times,
   * link count, parent, removal; xattrs move ctime). A file's size and data times (file-rows.ts) are
   * not told: the table it feeds holds directories only.
   */
  attrChanged: (ino: number) => void = () => undefined;

  private changeLinks(ino: number, delta: number, t: bigint): void {
    this.addLinks(ino, delta, t);
    this.attrChanged(ino);
  }
  private changeDirTimes(ino: number, t: bigint): void {
    this.touchDir(ino, t);
    this.attrChanged(ino);
  }
  private changeParent(ino: number, parent: number): void {
    this.setParent(ino, parent);
    this.attrChanged(ino);
  }
  private dropInode(ino: number): void {
    this.removeInode(ino);
    this.attrChanged(ino);
  }
  private changeAttrs(...args: Parameters<NamespaceBase['writeAttrs']>): void {
    this.writeAttrs(...args);
    this.attrChanged(args[0]);
  }
  private changeAtime(ino: number, atimeNs: bigint): void {
    this.writeAtime(ino, atimeNs);
    this.attrChanged(ino);
  }
  private changeCtime(ino: number, t: bigint): void {
    this.setCtime(ino, t);
    this.attrChanged(ino);
  }

  // ---- Operations ----

  protected inTx<T>(fn: () => T): T {
    return this.tx(fn) as T;
  }

  pendingSize: (ino: number) => number | undefined = () => undefined;
  private withPending(a: Attr): Attr {
    const p = this.pendingSize(a.ino);
    if (p !== undefined && p > a.sizeBytes) a.sizeBytes = p;
    return a;
  }

  getattr(ino: number): Attr | null {
    const a = this.inodeAttr(ino);
    return a === undefined ? null : this.withPending(a);
  }
  attr(ino: number): Attr {
    const a = this.getattr(ino);
    if (a === null) throw new FsError('ENOENT', `no inode ${ino}`);
    return a;
  }
  lookup(parent: number, name: string): Attr | null {
    const a = this.entryAttr(parent, name);
    if (a !== undefined) return this.withPending(a); // only a directory has entries: its check is needed on a miss only
    this.dir(parent);
    return null;
  }
  parentOf(dir: number): number {
    const p = this.inodeParent(dir);
    if (p === undefined) throw new FsError('ENOENT', `no inode ${dir}`);
    return p ?? ROOT_INO;
  }

  pathOf(ino: number): string | null {
    if (ino === ROOT_INO) return '/';
    const names: string[] = [];
    let at = ino;
    for (let depth = 0; depth < PATH_DEPTH_MAX && at !== ROOT_INO; depth++) {
      const n = this.firstName(at);
      if (n === undefined) return null;
      names.push(n.name);
      at = n.parent;
    }
    return at === ROOT_INO ? '/' + names.reverse().join('/') : null;
  }

  private dir(ino: number): Attr {
    const a = this.attr(ino);
    if (a.type !== 'dir') throw new FsError('ENOTDIR', `inode ${ino} is not a directory`);
    return a;
  }

  /** The new inode's attributes, as inserted (not read back). */
  private newInode(v: Partial<NewInode> & Pick<NewInode, 'type' | 'mode' | 'uid' | 'gid' | 'nlink'>): Attr {
    const t = nowNs();
    const row: NewInode = {
      size: 0,
      parent: null,
      layout: null,
      cs: null,
      bb: null,
      eb: null,
      seed: null,
      epoch: null,
      target: null,
      rdev: 0,
      ...v,
      t,
    };
    const ino = this.insertInode(row);
    return {
      ino,
      type: row.type,
      mode: row.mode,
      uid: row.uid,
      gid: row.gid,
      sizeBytes: row.size,
      nlink: row.nlink,
      atimeNs: t,
      mtimeNs: t,
      ctimeNs: t,
      birthtimeNs: t,
      layout: row.layout ?? '',
      rdev: row.rdev,
      chunkSizeBytes: row.cs ?? 0,
    };
  }

  private enter(parent: number, name: string, ino: number): void {
    this.addEntry(parent, name, ino);
    this.changeDirTimes(parent, nowNs());
  }

  private checkNew(parent: number, name: string): void {
    checkName(name);
    this.dir(parent);
    if (this.entryAttr(parent, name) !== undefined)
      throw new FsError('EEXIST', `'${name}' exists in directory ${parent}`);
  }

  mkdir(parent: number, name: string, mode: number, uid: number, gid: number): Attr {
    return this.inTx(() => {
      this.checkNew(parent, name);
      const a = this.newInode({ type: 'dir', mode: S_IFDIR | (mode & 0o7777), uid, gid, nlink: 2, parent });
      this.enter(parent, name, a.ino);
      this.changeLinks(parent, 1, nowNs()); // the new '..'
      this.made(a.ino);
      return a;
    });
  }

  inheritedLayout(dir: number): string {
    return this.layoutAbove(dir) ?? this.opts.defaults.layout;
  }

  create(parent: number, name: string, mode: number, uid: number, gid: number, layout?: string): Attr {
    return this.inTx(() => {
      this.checkNew(parent, name);
      const text = layout ?? this.inheritedLayout(parent);
      this.opts.checkLayout(text);
      const d = this.opts.defaults;
      const a = this.newInode({
        type: 'file',
        mode: S_IFREG | (mode & 0o7777),
        uid,
        gid,
        nlink: 1,
        layout: text,
        cs: d.chunkSizeBytes,
        bb: d.bitrotBlockBytes,
        eb: d.ecBlockSizeBytes,
        seed: u64ToDb(randomU64()),
        epoch: this.opts.clusterMapEpoch,
      });
      this.enter(parent, name, a.ino);
      this.made(a.ino);
      return a;
    });
  }

  symlink(parent: number, name: string, target: string, uid: number, gid: number): Attr {
    const size = Buffer.byteLength(target, 'utf8');
    if (size === 0 || size > SYMLINK_BYTES_MAX)
      throw new FsError(size === 0 ? 'ENOENT' : 'ENAMETOOLONG', 'bad symlink target length');
    return this.inTx(() => {
      this.checkNew(parent, name);
      const a = this.newInode({ type: 'symlink', mode: S_IFLNK | 0o777, uid, gid, nlink: 1, size, target });
      this.enter(parent, name, a.ino);
      return a;
    });
  }

  mknod(parent: number, name: string, type: SpecialType, mode: number, rdev: number, uid: number, gid: number): Attr {
    return this.inTx(() => {
      this.checkNew(parent, name);
      const dev = type === 'chardev' || type === 'blockdev' ? rdev : 0;
      const a = this.newInode({ type, mode: typeBits(type) | (mode & 0o7777), uid, gid, nlink: 1, rdev: dev });
      this.enter(parent, name, a.ino);
      return a;
    });
  }

  readlink(ino: number): string {
    const r = this.symlinkOf(ino);
    if (r === undefined) throw new FsError('ENOENT', `no inode ${ino}`);
    if (r.type !== 'symlink') throw new FsError('EINVAL', `inode ${ino} is not a symlink`);
    return String(r.target);
  }

  link(ino: number, newParent: number, newName: string): Attr {
    return this.inTx(() => {
      const a = this.attr(ino);
      if (a.type === 'dir') throw new FsError('EPERM', 'hard links to directories are not allowed');
      this.checkNew(newParent, newName);
      this.enter(newParent, newName, ino);
      this.changeLinks(ino, 1, nowNs());
      return this.attr(ino);
    });
  }

  /** Drop one link of a non-directory; nlink 0 files go on the orphan list (data deleted by Store.deleteFile). */
  private dropLink(a: Attr): number {
    this.changeLinks(a.ino, -1, nowNs());
    const nlink = a.nlink - 1;
    if (nlink > 0) return nlink;
    if (a.type === 'file') this.addOrphan(a.ino);
    else this.dropInode(a.ino);
    return 0;
  }

  unlink(parent: number, name: string): Unlinked {
    return this.inTx(() => {
      checkName(name);
      const a = this.lookup(parent, name);
      if (a === null) throw new FsError('ENOENT', `'${name}' not found in directory ${parent}`);
      if (a.type === 'dir') throw new FsError('EISDIR', `'${name}' is a directory`);
      this.removeEntry(parent, name);
      this.changeDirTimes(parent, nowNs());
      return { ino: a.ino, nlink: this.dropLink(a) };
    });
  }

  rmdir(parent: number, name: string): void {
    this.inTx(() => {
      if (name === '.') throw new FsError('EINVAL', "cannot rmdir '.'");
      if (name === '..') throw new FsError('ENOTEMPTY', "cannot rmdir '..'");
      checkName(name);
      const a = this.lookup(parent, name);
      if (a === null) throw new FsError('ENOENT', `'${name}' not found in directory ${parent}`);
      if (a.type !== 'dir') throw new FsError('ENOTDIR', `'${name}' is not a directory`);
      if (this.hasEntries(a.ino)) throw new FsError('ENOTEMPTY', `directory '${name}' is not empty`);
      this.removeEntry(parent, name);
      this.dropInode(a.ino);
      this.changeLinks(parent, -1, nowNs());
      this.changeDirTimes(parent, nowNs());
    });
  }

  /** True when dir is ancestor or lies beneath it. */
  private isWithin(dir: number, ancestor: number): boolean {
    let ino = dir;
    for (let depth = 0; depth < TREE_DEPTH_MAX; depth++) {
      if (ino === ancestor) return true;
      if (ino === ROOT_INO) return false;
      ino = this.parentOf(ino);
    }
    throw new FsError('EIO', 'directory tree deeper than the depth limit (corrupt parent chain?)');
  }

  rename(
    oldParent: number,
    oldName: string,
    newParent: number,
    newName: string,
    flags: RenameFlags = {},
  ): Unlinked | null {
    return this.inTx(() => {
      checkName(oldName);
      checkName(newName);
      const src = this.lookup(oldParent, oldName);
      if (src === null) throw new FsError('ENOENT', `'${oldName}' not found in directory ${oldParent}`);
      // Only a directory has entries: found src proves oldParent is one, so newParent needs its check when it differs.
      if (newParent !== oldParent) this.dir(newParent);
      const dst = this.entryAttr(newParent, newName) ?? null;
      if (dst !== null && flags.noReplace === true) throw new FsError('EEXIST', `'${newName}' exists`);
      if (dst !== null && dst.ino === src.ino) return null; // two links to one inode: POSIX says do nothing
      if (src.type === 'dir' && this.isWithin(newParent, src.ino))
        throw new FsError('EINVAL', 'cannot move a directory beneath itself');
      const replaced = dst === null ? null : this.replace(src, dst, newParent, newName);
      this.removeEntry(oldParent, oldName);
      this.addEntry(newParent, newName, src.ino);
      if (flags.whiteout !== undefined) this.addWhiteout(oldParent, oldName, flags.whiteout);
      if (src.type === 'dir' && oldParent !== newParent) {
        this.changeParent(src.ino, newParent);
        this.changeLinks(oldParent, -1, nowNs());
        this.changeLinks(newParent, 1, nowNs());
      }
      const t = nowNs();
      this.touchDirs(t, oldParent, newParent);
      this.changeLinks(src.ino, 0, t); // ctime changes on rename (Linux)
      return replaced;
    });
  }

  /** rename's target dst loses its name to src (types checked first). */
  private replace(src: Attr, dst: Attr, newParent: number, newName: string): Unlinked {
    if (src.type === 'dir' && dst.type !== 'dir') throw new FsError('ENOTDIR', `'${newName}' is not a directory`);
    if (src.type !== 'dir' && dst.type === 'dir') throw new FsError('EISDIR', `'${newName}' is a directory`);
    if (dst.type !== 'dir') {
      this.removeEntry(newParent, newName);
      return { ino: dst.ino, nlink: this.dropLink(dst) };
    }
    if (this.hasEntries(dst.ino)) throw new FsError('ENOTEMPTY', `directory '${newName}' is not empty`);
    this.removeEntry(newParent, newName);
    this.dropInode(dst.ino);
    this.changeLinks(newParent, -1, nowNs());
    return { ino: dst.ino, nlink: 0 };
  }

  /** mtime and ctime of both parents of a rename: one write when they are one directory. */
  private touchDirs(t: bigint, oldParent: number, newParent: number): void {
    this.changeDirTimes(oldParent, t);
    if (newParent !== oldParent) this.changeDirTimes(newParent, t);
  }

  /**
   * RENAME_WHITEOUT: the old name becomes a whiteout, a character device 0/0 (what the kernel's
   * vfs_whiteout makes on a local file system, and what overlayfs reads as "deleted below"), in the
   * rename's own transaction, so no one sees the name missing or the source in two places.
   */
  private addWhiteout(parent: number, name: string, owner: { uid: number; gid: number }): void {
    const a = this.newInode({
      type: 'chardev',
      mode: typeBits('chardev'),
      uid: owner.uid,
      gid: owner.gid,
      nlink: 1,
      rdev: WHITEOUT_RDEV,
    });
    this.addEntry(parent, name, a.ino);
  }

  exchange(oldParent: number, oldName: string, newParent: number, newName: string): void {
    this.inTx(() => {
      checkName(oldName);
      checkName(newName);
      const a = this.lookup(oldParent, oldName);
      const b = this.lookup(newParent, newName);
      if (a === null) throw new FsError('ENOENT', `'${oldName}' not found in directory ${oldParent}`);
      if (b === null) throw new FsError('ENOENT', `'${newName}' not found in directory ${newParent}`);
      if (a.ino === b.ino) return;
      if (a.type === 'dir' && this.isWithin(newParent, a.ino))
        throw new FsError('EINVAL', 'cannot move a directory beneath itself');
      if (b.type === 'dir' && this.isWithin(oldParent, b.ino))
        throw new FsError('EINVAL', 'cannot move a directory beneath itself');
      this.removeEntry(oldParent, oldName);
      this.removeEntry(newParent, newName);
      this.addEntry(oldParent, oldName, b.ino);
      this.addEntry(newParent, newName, a.ino);
      const t = nowNs();
      if (oldParent !== newParent) {
        if (a.type === 'dir') this.changeParent(a.ino, newParent);
        if (b.type === 'dir') this.changeParent(b.ino, oldParent);
        const dirsMoved = (a.type === 'dir' ? 1 : 0) - (b.type === 'dir' ? 1 : 0); // into newParent
        if (dirsMoved !== 0) {
          this.changeLinks(oldParent, -dirsMoved, t);
          this.changeLinks(newParent, dirsMoved, t);
        }
      }
      this.touchDirs(t, oldParent, newParent);
      this.changeLinks(a.ino, 0, t); // ctime of both changes, as on rename
      this.changeLinks(b.ino, 0, t);
    });
  }

  readdir(dir: number, after = '', limit = ENTRIES_ALL): DirEntry[] {
    this.dir(dir);
    return this.entries(dir, after, limit);
  }

  setattr(ino: number, v: AttrChange): Attr {
    return this.inTx(() => {
      const a = this.attr(ino);
      const mode = v.mode === undefined ? a.mode : (a.mode & S_IFMT) | (v.mode & 0o7777);
      const at = v.atimeNs ?? a.atimeNs;
      const mt = v.mtimeNs ?? a.mtimeNs;
      const ct = v.ctimeNs ?? nowNs();
      const uid = v.uid ?? a.uid;
      const gid = v.gid ?? a.gid;
      this.changeAttrs(ino, mode, uid, gid, at, mt, ct);
      // What was just written (far-times.ts stores these exactly), not read back.
      return { ...a, mode, uid, gid, atimeNs: at, mtimeNs: mt, ctimeNs: ct };
    });
  }

  setAtimes(times: Array<[number, bigint]>): void {
    this.inTx(() => {
      for (const [ino, t] of times) this.changeAtime(ino, t);
    });
  }

  /**
   * e.g. libfuse's '.fuse_hidden' names of files unlinked while open, left by a crash. nlink 0 =>
   * the caller deletes the data (Store.deleteFile), as after unlink.
   */
  unlinkByPrefix(prefix: string, countMax: number): Array<{ parent: number; name: string } & Unlinked> {
    if (prefix.length === 0) throw new FsError('EINVAL', 'an empty prefix would unlink every name');
    return this.inTx(() =>
      this.namesByPrefix(prefix, countMax).map(({ parent, name }) => ({ parent, name, ...this.unlink(parent, name) })),
    );
  }

  orphans(): number[] {
    return this.orphanList();
  }

  // ---- Extended attributes ----

  private checkXattrName(name: string): void {
    if (name.length === 0) throw new FsError('EINVAL', 'empty xattr name');
    if (Buffer.byteLength(name) > XATTR_NAME_BYTES_MAX) throw new FsError('ERANGE', 'xattr name too long');
  }

  getxattr(ino: number, name: string): Buffer {
    const v = this.findxattr(ino, name);
    if (v === null) throw new FsError('ENODATA', `no xattr '${name}' on inode ${ino}`);
    return v;
  }

  findxattr(ino: number, name: string): Buffer | null {
    this.checkXattrName(name);
    const r = this.xattrFind(ino, name);
    if (r === undefined) throw new FsError('ENOENT', `no inode ${ino}`);
    if (name === LAYOUT_XATTR && r.type === 'file') return Buffer.from(r.layout ?? '', 'utf8');
    return r.value === null ? null : Buffer.from(r.value);
  }

  setxattr(ino: number, name: string, value: Uint8Array, flags = 0): void {
    this.checkXattrName(name);
    if (value.length > XATTR_VALUE_BYTES_MAX) throw new FsError('ERANGE', 'xattr value too large');
    this.inTx(() => {
      const a = this.attr(ino);
      const exists = (name === LAYOUT_XATTR && a.type === 'file') || this.xattrValue(ino, name) !== undefined;
      if ((flags & XATTR_CREATE) !== 0 && exists) throw new FsError('EEXIST', `xattr '${name}' exists`);
      if ((flags & XATTR_REPLACE) !== 0 && !exists) throw new FsError('ENODATA', `no xattr '${name}'`);
      if (name !== LAYOUT_XATTR) return this.writeXattr(ino, name, Buffer.from(value));
      const text = Buffer.from(value).toString('utf8').trim();
      this.opts.checkLayout(text);
      if (a.type === 'file') return this.setFileLayout(a, text);
      if (a.type !== 'dir') throw new FsError('EINVAL', `${LAYOUT_XATTR} applies to files and directories only`);
      this.writeXattr(ino, name, Buffer.from(text, 'utf8'));
    });
  }

  private writeXattr(ino: number, name: string, value: Buffer): void {
    this.putXattr(ino, name, value);
    this.changeCtime(ino, nowNs());
  }

  /** A file's layout: its column is its truth; the xattr row marks it as set explicitly (listed). */
  private setFileLayout(a: Attr, text: string): void {
    const explicit = this.xattrValue(a.ino, LAYOUT_XATTR) !== undefined;
    if (text === a.layout && explicit) return;
    if (text !== a.layout) {
      if (this.holdsData(a.ino)) throw new FsError('EBUSY', 'the layout of a file that holds data cannot change');
      this.setLayout(a.ino, text);
      this.opts.layoutChanged?.(a.ino);
    }
    this.writeXattr(a.ino, LAYOUT_XATTR, Buffer.from(text, 'utf8'));
  }

  listxattr(ino: number): string[] {
    this.attr(ino); // ENOENT for a missing inode
    return this.xattrNames(ino);
  }

  removexattr(ino: number, name: string): void {
    this.checkXattrName(name);
    const a = this.attr(ino);
    if (name === LAYOUT_XATTR && a.type === 'file') throw new FsError('EPERM', 'a file always has a layout');
    if (!this.deleteXattr(ino, name)) throw new FsError('ENODATA', `no xattr '${name}' on inode ${ino}`);
    this.changeCtime(ino, nowNs());
  }
}
