// POSIX namespace over the metadata database (store-api.md): inodes,
// directory entries, hard links, rename replace rules, symlinks, and the orphan
// list (nlink 0 files whose chunks are deleted later, so a crash cannot leak them).
// Every multi-row change is one transaction. Extended attributes: store/meta/xattrs.ts.
import { randomU64 } from '../random-ids';
import { Db, NEXT_INO_SQL, ROOT_INO, nowNs, u64ToDb } from './meta';
import type { SqlStatement } from './sql-engine';
import { FsError } from '../fs-error';
import { SYMLINK_BYTES_MAX, checkName } from './names';
import { Xattrs } from './xattrs';
import { toColumns } from './far-times';
import {
  Attr,
  InodeType,
  LAYOUT_XATTR,
  Row,
  S_IFDIR,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  SpecialType,
  TREE_DEPTH_MAX,
  ATTR_COLUMNS,
  attrOfValues,
  typeBits,
} from './attr';

export { Attr, InodeType, LAYOUT_XATTR, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, SpecialType };

/** Layout chosen for new files: from an ancestor's user.chunkfs.layout or the store default. */
export interface NamespaceOptions {
  defaults: { layout: string; chunkSizeBytes: number; bitrotBlockBytes: number; ecBlockSizeBytes: number };
  clusterMapEpoch: number;
  /** Throws FsError EINVAL for a layout this store cannot hold. */
  checkLayout(text: string): void;
  /** A file's layout changed (while it held no data): caches of it must be dropped. */
  layoutChanged?(ino: number): void;
}

/** Columns of a new inode (insertInode fills the rest). */
/** renameat2(2) flags the namespace carries out (RENAME_EXCHANGE is exchange()). */
export interface RenameFlags {
  noReplace?: boolean;
  /** RENAME_WHITEOUT: leave a whiteout owned by this caller at the old name. */
  whiteout?: { uid: number; gid: number };
}

const INSERT_INODE_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent, atime_ns, mtime_ns, ctime_ns, birth_ns,
  layout, chunk_size, bitrot_block, ec_block_size, placement_seed, cluster_map_epoch, symlink_target, rdev)`;
const INODE_VALUES_SQL =
  '@type, @mode, @uid, @gid, @size, @nlink, @parent, @t, @t, @t, @t, @layout, @cs, @bb, @eb, @seed, @epoch, @target, @rdev';
/** dirIno's ancestors after the first row (inheritedLayout). */
const INHERITED_LAYOUT_REST = `UNION ALL SELECT coalesce(i.parent, ${ROOT_INO}), up.depth + 1 FROM up JOIN inodes i ON i.ino = up.ino
    WHERE up.ino != ${ROOT_INO} AND up.depth + 1 < @depthMax)
  SELECT x.value FROM up JOIN xattrs x ON x.ino = up.ino AND x.name = @name ORDER BY up.depth LIMIT 1`;

/** A whiteout is a character device with device number 0 (the kernel's WHITEOUT_DEV). */
const WHITEOUT_RDEV = 0;

interface NewInode {
  type: InodeType;
  mode: number;
  uid: number;
  gid: number;
  nlink: number;
  size?: number;
  parent?: number;
  layout?: string;
  cs?: number;
  bb?: number;
  eb?: number;
  seed?: bigint;
  epoch?: number;
  target?: string;
  rdev?: number;
}

export class Namespace {
  private readonly q;
  private readonly xattrs: Xattrs;
  /** One transaction wrapper, made once (db.transaction builds a new one per call); nested calls are savepoints. */
  private readonly tx;
  constructor(
    readonly db: Db,
    readonly opts: NamespaceOptions,
  ) {
    this.tx = db.transaction((fn: () => unknown) => fn());
    this.xattrs = new Xattrs(
      db,
      (ino) => this.attr(ino),
      (text) => opts.checkLayout(text),
      (ino) => opts.layoutChanged?.(ino),
    );
    this.q = {
      get: db.prepare('SELECT * FROM inodes WHERE ino = ?'),
      lookup: db.prepare('SELECT i.* FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = ? AND d.name = ?'),
      // getattr and lookup, the most frequent requests, as raw rows of ATTR_COLUMNS (store/meta/attr.ts).
      attrValues: db.prepare(`SELECT ${ATTR_COLUMNS.join(', ')} FROM inodes WHERE ino = ?`).raw(true),
      lookupValues: db
        .prepare(
          `SELECT ${ATTR_COLUMNS.map((c) => `i.${c}`).join(', ')} FROM dirents d JOIN inodes i ON i.ino = d.ino
        WHERE d.parent = ? AND d.name = ?`,
        )
        .raw(true),
      entries: db.prepare(
        `SELECT d.name, d.ino, i.type FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = ? ORDER BY d.name`,
      ),
      hasEntries: db.prepare('SELECT 1 FROM dirents WHERE parent = ? LIMIT 1'),
      // PostgreSQL gives the new number back by RETURNING (SQLite: lastInsertRowid).
      insert: db.prepare({
        sqlite: `${INSERT_INODE_SQL} VALUES (${NEXT_INO_SQL.sqlite}, ${INODE_VALUES_SQL})`,
        postgres: `${INSERT_INODE_SQL} VALUES (${NEXT_INO_SQL.postgres}, ${INODE_VALUES_SQL}) RETURNING ino`,
      }),
      addEntry: db.prepare('INSERT INTO dirents(parent, name, ino) VALUES (?, ?, ?)'),
      delEntry: db.prepare('DELETE FROM dirents WHERE parent = ? AND name = ?'),
      nlink: db.prepare('UPDATE inodes SET nlink = nlink + ?, ctime_ns = ? WHERE ino = ?'),
      touchDir: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
      setParent: db.prepare('UPDATE inodes SET parent = ? WHERE ino = ?'),
      delInode: db.prepare('DELETE FROM inodes WHERE ino = ?'),
      delXattrs: db.prepare('DELETE FROM xattrs WHERE ino = ?'),
      orphan: db.prepare('INSERT INTO orphans(ino) VALUES (?) ON CONFLICT DO NOTHING'),
      orphans: db.prepare('SELECT ino FROM orphans ORDER BY ino'),
      // instr (strpos), not LIKE: LIKE folds ASCII case and treats '_' (as in '.fuse_hidden') as a wildcard.
      byPrefix: db.prepare({
        sqlite: `SELECT d.parent, d.name FROM dirents d JOIN inodes i ON i.ino = d.ino
          WHERE instr(d.name, ?) = 1 AND i.type != 'dir' ORDER BY d.parent, d.name LIMIT ?`,
        postgres: `SELECT d.parent, d.name FROM dirents d JOIN inodes i ON i.ino = d.ino
          WHERE strpos(d.name, ?) = 1 AND i.type != 'dir' ORDER BY d.parent, d.name LIMIT ?`,
      }),
      // dirIno and its ancestors up to the root (whose parent is itself), nearest first, at most depthMax.
      // PostgreSQL types the recursive column from its first row: the parameter needs its type named.
      // Its answer depends on the tree and xattrs only: cached by the lease holder (postgres/row-cache.ts).
      inheritedLayout: db.prepare({
        sqlite: `WITH RECURSIVE up(ino, depth) AS (SELECT @ino, 0 ${INHERITED_LAYOUT_REST}`,
        postgres: `WITH RECURSIVE up(ino, depth) AS (SELECT CAST(@ino AS BIGINT), 0 ${INHERITED_LAYOUT_REST}`,
        pgCache: 'ancestry',
      }),
      setattr:
        db.prepare(`UPDATE inodes SET mode = ?, uid = ?, gid = ?, atime_ns = ?, atime_far = ?, mtime_ns = ?, mtime_far = ?,
        ctime_ns = ?, ctime_far = ? WHERE ino = ?`),
      setAtime: db.prepare('UPDATE inodes SET atime_ns = ?, atime_far = ? WHERE ino = ?'),
    };
  }

  /** The INSERT of an inode whose number this side chose (Db.newIno: PostgreSQL with the lease); made on first use. */
  private insertNumbered: SqlStatement | null = null;

  private inTx<T>(fn: () => T): T {
    return this.tx(fn) as T;
  }

  /** The size a transaction group will commit for ino (store/chunks/tx-group.ts): getattr shows it already (DESIGN §5 one view). */
  pendingSize: (ino: number) => number | undefined = () => undefined;
  private withPending(a: Attr): Attr {
    const p = this.pendingSize(a.ino);
    if (p !== undefined && p > a.sizeBytes) a.sizeBytes = p;
    return a;
  }

  getattr(ino: number): Attr | null {
    const v = this.q.attrValues.get(ino) as Array<bigint | string | null> | undefined;
    return v === undefined ? null : this.withPending(attrOfValues(v));
  }
  /** getattr that throws ENOENT. */
  attr(ino: number): Attr {
    const a = this.getattr(ino);
    if (a === null) throw new FsError('ENOENT', `no inode ${ino}`);
    return a;
  }
  lookup(parentIno: number, name: string): Attr | null {
    const v = this.q.lookupValues.get(parentIno, name) as Array<bigint | string | null> | undefined;
    if (v !== undefined) return this.withPending(attrOfValues(v)); // only a directory has entries: its check is needed on a miss only
    this.dir(parentIno);
    return null;
  }
  /** Parent directory of a directory (root's parent is root). */
  parentOf(dirIno: number): number {
    const r = this.q.get.get(dirIno) as Row | undefined;
    if (r === undefined) throw new FsError('ENOENT', `no inode ${dirIno}`);
    return Number(r.parent ?? ROOT_INO);
  }

  private dir(ino: number): Attr {
    const a = this.attr(ino);
    if (a.type !== 'dir') throw new FsError('ENOTDIR', `inode ${ino} is not a directory`);
    return a;
  }

  /** The new inode's attributes, as inserted (not read back). */
  private insertInode(v: NewInode): Attr {
    const t = nowNs();
    const values = {
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
    const own = this.db.newIno(v.type === 'dir');
    let ino: number;
    if (own === null) ino = Number(this.q.insert.run(values).lastInsertRowid);
    else {
      // Nothing to read back: the INSERT waits for the transaction's COMMIT (one round trip).
      this.insertNumbered ??= this.db.prepare(`${INSERT_INODE_SQL} VALUES (@ino, ${INODE_VALUES_SQL})`);
      this.insertNumbered.run({ ...values, ino: own });
      ino = own;
    }
    return {
      ino,
      type: v.type,
      mode: v.mode,
      uid: v.uid,
      gid: v.gid,
      sizeBytes: v.size ?? 0,
      nlink: v.nlink,
      atimeNs: t,
      mtimeNs: t,
      ctimeNs: t,
      birthtimeNs: t,
      layout: v.layout ?? '',
      rdev: v.rdev ?? 0,
      chunkSizeBytes: v.cs ?? 0,
    };
  }

  private addEntry(parentIno: number, name: string, ino: number): void {
    this.q.addEntry.run(parentIno, name, ino);
    const t = nowNs();
    this.q.touchDir.run(t, t, parentIno);
  }

  private checkNew(parentIno: number, name: string): void {
    checkName(name);
    this.dir(parentIno);
    if (this.q.lookup.get(parentIno, name) !== undefined)
      throw new FsError('EEXIST', `'${name}' exists in directory ${parentIno}`);
  }

  mkdir(parentIno: number, name: string, mode: number, uid: number, gid: number): Attr {
    return this.inTx(() => {
      this.checkNew(parentIno, name);
      const a = this.insertInode({
        type: 'dir',
        mode: S_IFDIR | (mode & 0o7777),
        uid,
        gid,
        nlink: 2,
        parent: parentIno,
      });
      this.addEntry(parentIno, name, a.ino);
      this.q.nlink.run(1, nowNs(), parentIno); // the new '..'
      this.db.prefetch(this.q.lookupValues, parentIno, name); // the lookup that follows, answered from the cache
      return a;
    });
  }

  /** Layout text a new file under dirIno gets: nearest ancestor's xattr, else the store default. */
  inheritedLayout(dirIno: number): string {
    // One statement for the whole walk up (it was two per ancestor, on every create).
    const r = this.q.inheritedLayout.get({ ino: dirIno, name: LAYOUT_XATTR, depthMax: TREE_DEPTH_MAX }) as
      | { value: Buffer }
      | undefined;
    return r !== undefined ? r.value.toString('utf8') : this.opts.defaults.layout;
  }

  create(parentIno: number, name: string, mode: number, uid: number, gid: number, layout?: string): Attr {
    return this.inTx(() => {
      this.checkNew(parentIno, name);
      const text = layout ?? this.inheritedLayout(parentIno);
      this.opts.checkLayout(text);
      const d = this.opts.defaults;
      const seed = randomU64();
      const a = this.insertInode({
        type: 'file',
        mode: S_IFREG | (mode & 0o7777),
        uid,
        gid,
        nlink: 1,
        layout: text,
        cs: d.chunkSizeBytes,
        bb: d.bitrotBlockBytes,
        eb: d.ecBlockSizeBytes,
        seed: u64ToDb(seed),
        epoch: this.opts.clusterMapEpoch,
      });
      this.addEntry(parentIno, name, a.ino);
      this.db.prefetch(this.q.lookupValues, parentIno, name); // the lookup that follows, answered from the cache
      return a;
    });
  }

  symlink(parentIno: number, name: string, target: string, uid: number, gid: number): Attr {
    const size = Buffer.byteLength(target, 'utf8');
    if (size === 0 || size > SYMLINK_BYTES_MAX)
      throw new FsError(size === 0 ? 'ENOENT' : 'ENAMETOOLONG', 'bad symlink target length');
    return this.inTx(() => {
      this.checkNew(parentIno, name);
      const a = this.insertInode({ type: 'symlink', mode: S_IFLNK | 0o777, uid, gid, nlink: 1, size, target });
      this.addEntry(parentIno, name, a.ino);
      return a;
    });
  }

  /** A FIFO, socket or device node (no data of its own); rdev is the device number of devices. */
  mknod(
    parentIno: number,
    name: string,
    type: SpecialType,
    mode: number,
    rdev: number,
    uid: number,
    gid: number,
  ): Attr {
    return this.inTx(() => {
      this.checkNew(parentIno, name);
      const dev = type === 'chardev' || type === 'blockdev' ? rdev : 0;
      const a = this.insertInode({ type, mode: typeBits(type) | (mode & 0o7777), uid, gid, nlink: 1, rdev: dev });
      this.addEntry(parentIno, name, a.ino);
      return a;
    });
  }

  readlink(ino: number): string {
    const r = this.q.get.get(ino) as Row | undefined;
    if (r === undefined) throw new FsError('ENOENT', `no inode ${ino}`);
    if (r.type !== 'symlink') throw new FsError('EINVAL', `inode ${ino} is not a symlink`);
    return String(r.symlink_target);
  }

  link(ino: number, newParentIno: number, newName: string): Attr {
    return this.inTx(() => {
      const a = this.attr(ino);
      if (a.type === 'dir') throw new FsError('EPERM', 'hard links to directories are not allowed');
      this.checkNew(newParentIno, newName);
      this.addEntry(newParentIno, newName, ino);
      this.q.nlink.run(1, nowNs(), ino);
      return this.attr(ino);
    });
  }

  /** Drop one link of a non-directory; nlink 0 files go on the orphan list. */
  private dropLink(a: Attr): number {
    this.q.nlink.run(-1, nowNs(), a.ino);
    const nlink = a.nlink - 1;
    if (nlink > 0) return nlink;
    if (a.type === 'file')
      this.q.orphan.run(a.ino); // data deleted by Store.deleteFile
    else this.removeInodeRow(a.ino);
    return 0;
  }

  private removeInodeRow(ino: number): void {
    this.q.delXattrs.run(ino);
    this.q.delInode.run(ino);
  }

  /** Remove a name of a non-directory. nlink 0 => the caller deletes the data when no handle holds it. */
  unlink(parentIno: number, name: string): { ino: number; nlink: number } {
    return this.inTx(() => {
      checkName(name);
      const a = this.lookup(parentIno, name);
      if (a === null) throw new FsError('ENOENT', `'${name}' not found in directory ${parentIno}`);
      if (a.type === 'dir') throw new FsError('EISDIR', `'${name}' is a directory`);
      this.q.delEntry.run(parentIno, name);
      const t = nowNs();
      this.q.touchDir.run(t, t, parentIno);
      return { ino: a.ino, nlink: this.dropLink(a) };
    });
  }

  rmdir(parentIno: number, name: string): void {
    this.inTx(() => {
      if (name === '.') throw new FsError('EINVAL', "cannot rmdir '.'");
      if (name === '..') throw new FsError('ENOTEMPTY', "cannot rmdir '..'");
      checkName(name);
      const a = this.lookup(parentIno, name);
      if (a === null) throw new FsError('ENOENT', `'${name}' not found in directory ${parentIno}`);
      if (a.type !== 'dir') throw new FsError('ENOTDIR', `'${name}' is not a directory`);
      if (this.q.hasEntries.get(a.ino) !== undefined)
        throw new FsError('ENOTEMPTY', `directory '${name}' is not empty`);
      this.q.delEntry.run(parentIno, name);
      this.removeInodeRow(a.ino);
      this.q.nlink.run(-1, nowNs(), parentIno);
      const t = nowNs();
      this.q.touchDir.run(t, t, parentIno);
    });
  }

  /** True when dirIno is ancestorIno or lies beneath it. */
  private isWithin(dirIno: number, ancestorIno: number): boolean {
    let ino = dirIno;
    for (let depth = 0; depth < TREE_DEPTH_MAX; depth++) {
      if (ino === ancestorIno) return true;
      if (ino === ROOT_INO) return false;
      ino = this.parentOf(ino);
    }
    throw new FsError('EIO', 'directory tree deeper than the depth limit (corrupt parent chain?)');
  }

  /**
   * rename(2) with replace semantics. Returns the inode that lost a name by being
   * replaced (nlink 0 => caller deletes its data when unused), or null.
   */
  rename(
    oldParent: number,
    oldName: string,
    newParent: number,
    newName: string,
    flags: RenameFlags = {},
  ): { ino: number; nlink: number } | null {
    return this.inTx(() => {
      checkName(oldName);
      checkName(newName);
      const src = this.lookup(oldParent, oldName);
      if (src === null) throw new FsError('ENOENT', `'${oldName}' not found in directory ${oldParent}`);
      // Only a directory has entries: found src proves oldParent is one, so newParent needs its check when it differs.
      if (newParent !== oldParent) this.dir(newParent);
      const dstValues = this.q.lookupValues.get(newParent, newName) as Array<bigint | string | null> | undefined;
      const dst = dstValues === undefined ? null : attrOfValues(dstValues);
      if (dst !== null && flags.noReplace === true) throw new FsError('EEXIST', `'${newName}' exists`);
      if (dst !== null && dst.ino === src.ino) return null; // two links to one inode: POSIX says do nothing
      if (src.type === 'dir' && this.isWithin(newParent, src.ino))
        throw new FsError('EINVAL', 'cannot move a directory beneath itself');
      let replaced: { ino: number; nlink: number } | null = null;
      if (dst !== null) {
        if (src.type === 'dir' && dst.type !== 'dir') throw new FsError('ENOTDIR', `'${newName}' is not a directory`);
        if (src.type !== 'dir' && dst.type === 'dir') throw new FsError('EISDIR', `'${newName}' is a directory`);
        if (dst.type === 'dir') {
          if (this.q.hasEntries.get(dst.ino) !== undefined)
            throw new FsError('ENOTEMPTY', `directory '${newName}' is not empty`);
          this.q.delEntry.run(newParent, newName);
          this.removeInodeRow(dst.ino);
          this.q.nlink.run(-1, nowNs(), newParent);
          replaced = { ino: dst.ino, nlink: 0 };
        } else {
          this.q.delEntry.run(newParent, newName);
          replaced = { ino: dst.ino, nlink: this.dropLink(dst) };
        }
      }
      this.q.delEntry.run(oldParent, oldName);
      this.q.addEntry.run(newParent, newName, src.ino);
      if (flags.whiteout !== undefined) this.addWhiteout(oldParent, oldName, flags.whiteout);
      if (src.type === 'dir' && oldParent !== newParent) {
        this.q.setParent.run(newParent, src.ino);
        this.q.nlink.run(-1, nowNs(), oldParent);
        this.q.nlink.run(1, nowNs(), newParent);
      }
      const t = nowNs();
      this.touchDirs(t, oldParent, newParent);
      this.q.nlink.run(0, t, src.ino); // ctime changes on rename (Linux)
      return replaced;
    });
  }

  /** mtime and ctime of both parents of a rename: one UPDATE when they are one directory. */
  private touchDirs(t: bigint, oldParent: number, newParent: number): void {
    this.q.touchDir.run(t, t, oldParent);
    if (newParent !== oldParent) this.q.touchDir.run(t, t, newParent);
  }

  /**
   * RENAME_WHITEOUT: the old name becomes a whiteout, a character device 0/0 (what the kernel's
   * vfs_whiteout makes on a local file system, and what overlayfs reads as "deleted below"), in the
   * rename's own transaction, so no one sees the name missing or the source in two places.
   */
  private addWhiteout(parentIno: number, name: string, owner: { uid: number; gid: number }): void {
    const a = this.insertInode({
      type: 'chardev',
      mode: typeBits('chardev'),
      uid: owner.uid,
      gid: owner.gid,
      nlink: 1,
      rdev: WHITEOUT_RDEV,
    });
    this.q.addEntry.run(parentIno, name, a.ino);
  }

  /**
   * renameat2(RENAME_EXCHANGE): the two names swap inodes atomically. Both must exist; a directory
   * may not move beneath itself; parents' link counts follow the directories that changed parent.
   */
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
      this.q.delEntry.run(oldParent, oldName);
      this.q.delEntry.run(newParent, newName);
      this.q.addEntry.run(oldParent, oldName, b.ino);
      this.q.addEntry.run(newParent, newName, a.ino);
      const t = nowNs();
      if (oldParent !== newParent) {
        if (a.type === 'dir') this.q.setParent.run(newParent, a.ino);
        if (b.type === 'dir') this.q.setParent.run(oldParent, b.ino);
        const dirsMoved = (a.type === 'dir' ? 1 : 0) - (b.type === 'dir' ? 1 : 0); // into newParent
        if (dirsMoved !== 0) {
          this.q.nlink.run(-dirsMoved, t, oldParent);
          this.q.nlink.run(dirsMoved, t, newParent);
        }
      }
      this.touchDirs(t, oldParent, newParent);
      this.q.nlink.run(0, t, a.ino); // ctime of both changes, as on rename
      this.q.nlink.run(0, t, b.ino);
    });
  }

  /** Entries of a directory, without '.' and '..' (the mount adds those). */
  readdir(ino: number): Array<{ name: string; ino: number; type: InodeType }> {
    this.dir(ino);
    return (this.q.entries.all(ino) as Row[]).map((r) => ({
      name: String(r.name),
      ino: Number(r.ino),
      type: r.type as InodeType,
    }));
  }

  setattr(
    ino: number,
    v: { mode?: number; uid?: number; gid?: number; atimeNs?: bigint; mtimeNs?: bigint; ctimeNs?: bigint },
  ): Attr {
    return this.inTx(() => {
      const a = this.attr(ino);
      const mode = v.mode === undefined ? a.mode : (a.mode & S_IFMT) | (v.mode & 0o7777);
      const t = nowNs();
      const at = toColumns(v.atimeNs ?? a.atimeNs);
      const mt = toColumns(v.mtimeNs ?? a.mtimeNs);
      const ct = toColumns(v.ctimeNs ?? t);
      const uid = v.uid ?? a.uid;
      const gid = v.gid ?? a.gid;
      this.q.setattr.run(mode, uid, gid, at.ns, at.far, mt.ns, mt.far, ct.ns, ct.far, ino);
      // What was just written (far-times.ts stores these exactly), not read back.
      return {
        ...a,
        mode,
        uid,
        gid,
        atimeNs: v.atimeNs ?? a.atimeNs,
        mtimeNs: v.mtimeNs ?? a.mtimeNs,
        ctimeNs: v.ctimeNs ?? t,
      };
    });
  }

  /**
   * Access times only (fs/atime.ts batches them): no ctime change, one transaction; inodes gone
   * meanwhile are skipped.
   */
  setAtimes(times: Array<[number, bigint]>): void {
    this.inTx(() => {
      for (const [ino, t] of times) {
        const c = toColumns(t);
        this.q.setAtime.run(c.ns, c.far, ino);
      }
    });
  }

  /**
   * Unlink every non-directory name starting with prefix (e.g. libfuse's '.fuse_hidden' names of files
   * unlinked while open, left by a crash), at most countMax, in one transaction. nlink 0 => the caller
   * deletes the data (Store.deleteFile), as after unlink.
   */
  unlinkByPrefix(
    prefix: string,
    countMax: number,
  ): Array<{ parent: number; name: string; ino: number; nlink: number }> {
    if (prefix.length === 0) throw new FsError('EINVAL', 'an empty prefix would unlink every name');
    return this.inTx(() => {
      const rows = this.q.byPrefix.all(prefix, countMax) as Row[];
      return rows.map((r) => {
        const parent = Number(r.parent);
        const name = String(r.name);
        return { parent, name, ...this.unlink(parent, name) };
      });
    });
  }

  /** Files unlinked while open or before a crash: their data still has to be deleted. */
  orphans(): number[] {
    return (this.q.orphans.all() as Row[]).map((r) => Number(r.ino));
  }

  getxattr(ino: number, name: string): Buffer {
    return this.xattrs.get(ino, name);
  }
  /** getxattr, with null for a name the inode does not have (no ENODATA error built on a hot path: ACLs). */
  findxattr(ino: number, name: string): Buffer | null {
    return this.xattrs.find(ino, name);
  }
  /** flags: XATTR_CREATE (1) / XATTR_REPLACE (2), as Linux. */
  setxattr(ino: number, name: string, value: Uint8Array, flags = 0): void {
    this.xattrs.set(ino, name, value, flags);
  }
  listxattr(ino: number): string[] {
    return this.xattrs.list(ino);
  }
  removexattr(ino: number, name: string): void {
    this.xattrs.remove(ino, name);
  }
}
