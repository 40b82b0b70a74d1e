// The namespace's rows on PostgreSQL (DESIGN §9 "Operations", "Fewer round trips"): the statements
// behind store/meta/ops-base.ts, and what the lease holder keeps of them so that an operation
// asks the server only for what it does not know. While the mount holds the lease it is the only
// writer, and these operations are the only writers of directory entries and of the tree's shape,
// so they keep, by operation rather than by reading SQL text:
// - names (name-cache.ts), by (directory, name): set by lookups, by the entries added and removed
//   here, by a directory listed whole along with a lookup that missed in it, and known empty for a
//   directory made here; a removed directory's names go with it;
// - the inherited layout of a directory (row-cache.ts layouts): a new directory's is its parent's,
//   all are dropped when a user.chunkfs.layout changes or a directory moves, a removed one's with it;
// - inode rows and xattrs stay the row cache's keyed reads (row-cache.ts), since the data path
//   (file-rows.ts and others) writes the same rows; a lookup's joined row is kept there as the read
//   of its inode.
// All of it is trusted only while rows are (the lease) and dropped with them (rollback, lost
// connection, lost lease).
import { Db, ROOT_INO } from '../meta';
import { NEXT_INO_SQL } from './schema';
import type { SqlStatement } from '../sql-engine';
import { ATTR_COLUMNS, Attr, InodeType, LAYOUT_XATTR, Row, TREE_DEPTH_MAX, attrOf, attrOfValues } from '../attr';
import { toColumns } from '../far-times';
import { DirEntry, NamespaceOptions } from '../ops';
import { NamespaceBase, NewInode, XattrFind } from '../ops-base';
import { PgDb, PgStatement } from './engine';
import { LISTED_ENTRIES_MAX } from './name-cache';
import type { PgRowCache } from './row-cache';

type Values = Array<bigint | string | null>;

const INODE_COLUMNS_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent,
  atime_ns, mtime_ns, ctime_ns, birth_ns, layout, chunk_size, bitrot_block, ec_block_size, placement_seed,
  cluster_map_epoch, symlink_target, rdev)`;
const INODE_VALUES_SQL = `@type, @mode, @uid, @gid, @size, @nlink, @parent, @t, @t, @t, @t,
  @layout, @cs, @bb, @eb, @seed, @epoch, @target, @rdev`;
/** A directory's entries, read whole with a lookup in it that missed (name-cache.ts: one more is "large"). */
const LISTING_SQL = `SELECT name, ino FROM dirents WHERE parent = ? LIMIT ${LISTED_ENTRIES_MAX + 1}`;

export class PgNamespaceOps extends NamespaceBase {
  private readonly q: Record<string, SqlStatement>;
  /** Made on first use (each prepare is a round trip): the INSERT of a number this side chose, the listing. */
  private insertNumbered: SqlStatement | null = null;
  private listing: SqlStatement | null = null;

  constructor(
    private readonly pg: PgDb,
    opts: NamespaceOptions,
  ) {
    super(pg as Db, opts);
    const db = pg;
    this.q = {
      // getattr: some columns, answered from the inode's whole row when the row cache holds it.
      attr: db.prepare(`SELECT ${ATTR_COLUMNS.join(', ')} FROM inodes WHERE ino = ?`).raw(true),
      // A name not known: its inode's whole row comes with it (kept as the read of that inode).
      lookup: db.prepare('SELECT i.* FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = ? AND d.name = ?'),
      wholeInode: db.prepare('SELECT * FROM inodes WHERE ino = ?'),
      parent: db.prepare('SELECT parent FROM inodes WHERE ino = ?').raw(true),
      symlink: db.prepare('SELECT type, symlink_target FROM inodes WHERE ino = ?').raw(true),
      firstName: db.prepare('SELECT parent, name FROM dirents WHERE ino = ? ORDER BY parent, name LIMIT 1').raw(true),
      entries: db.prepare(`SELECT d.name, d.ino, i.type FROM dirents d JOIN inodes i ON i.ino = d.ino
        WHERE d.parent = ? AND d.name > ? ORDER BY d.name LIMIT ?`),
      hasEntries: db.prepare('SELECT 1 FROM dirents WHERE parent = ? LIMIT 1'),
      insert: db.prepare(`${INODE_COLUMNS_SQL} VALUES (${NEXT_INO_SQL}, ${INODE_VALUES_SQL}) RETURNING ino`),
      addEntry: db.prepare('INSERT INTO dirents(parent, name, ino) VALUES (?, ?, ?)'),
      delEntry: db.prepare('DELETE FROM dirents WHERE parent = ? AND name = ?'),
      nlink: db.prepare('UPDATE inodes SET nlink = nlink + ?, ctime_ns = ? WHERE ino = ?'),
      touchDir: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
      setParent: db.prepare('UPDATE inodes SET parent = ? WHERE ino = ?'),
      delInode: db.prepare('DELETE FROM inodes WHERE ino = ?'),
      delXattrs: db.prepare('DELETE FROM xattrs WHERE ino = ?'),
      orphan: db.prepare('INSERT INTO orphans(ino) VALUES (?) ON CONFLICT DO NOTHING'),
      orphans: db.prepare('SELECT ino FROM orphans ORDER BY ino').raw(true),
      // strpos, not LIKE: LIKE treats '_' (as in '.fuse_hidden') as a wildcard.
      byPrefix: db.prepare(`SELECT d.parent, d.name FROM dirents d JOIN inodes i ON i.ino = d.ino
          WHERE strpos(d.name, ?) = 1 AND i.type != 'dir' ORDER BY d.parent, d.name LIMIT ?`),
      // dir and its ancestors up to the root (whose parent is itself), nearest first, at most depthMax.
      // PostgreSQL types the recursive column from its first row: the parameter needs its type named.
      layoutAbove: db.prepare(`WITH RECURSIVE up(ino, depth) AS (SELECT CAST(@ino AS BIGINT), 0
    UNION ALL SELECT coalesce(i.parent, ${ROOT_INO}), up.depth + 1 FROM up JOIN inodes i ON i.ino = up.ino
    WHERE up.ino != ${ROOT_INO} AND up.depth + 1 < @depthMax)
  SELECT x.value FROM up JOIN xattrs x ON x.ino = up.ino AND x.name = @name ORDER BY up.depth LIMIT 1`),
      setattr: db.prepare(`UPDATE inodes SET mode = ?, uid = ?, gid = ?, atime_ns = ?, atime_far = ?,
        mtime_ns = ?, mtime_far = ?, ctime_ns = ?, ctime_far = ? WHERE ino = ?`),
      setAtime: db.prepare('UPDATE inodes SET atime_ns = ?, atime_far = ? WHERE ino = ?'),
      xattr: db.prepare('SELECT value FROM xattrs WHERE ino = ? AND name = ?'),
      // getxattr's inode part (ENOENT, a file's layout): a keyed read, as the row cache answers it.
      typeLayout: db.prepare('SELECT type, layout FROM inodes WHERE ino = ?'),
      xattrNames: db.prepare('SELECT name FROM xattrs WHERE ino = ? ORDER BY name').raw(true),
      putXattr: db.prepare(
        `INSERT INTO xattrs(ino, name, value) VALUES (?, ?, ?)
        ON CONFLICT(ino, name) DO UPDATE SET value = excluded.value`,
      ),
      delXattr: db.prepare('DELETE FROM xattrs WHERE ino = ? AND name = ?'),
      ctime: db.prepare('UPDATE inodes SET ctime_ns = ? WHERE ino = ?'),
      // chunks or a needle (spec §11)
      holdsData: db.prepare(
        `SELECT 1 FROM chunks WHERE ino = @ino AND version > 0
        UNION ALL SELECT 1 FROM inodes WHERE ino = @ino AND slice_container IS NOT NULL LIMIT 1`,
      ),
      setLayout: db.prepare('UPDATE inodes SET layout = ? WHERE ino = ?'),
    };
  }

  private get cache(): PgRowCache {
    return this.pg.rowCache;
  }

  protected inodeAttr(ino: number): Attr | undefined {
    const v = this.q.attr.get(ino) as Values | undefined;
    return v === undefined ? undefined : attrOfValues(v);
  }

  protected entryAttr(parent: number, name: string): Attr | undefined {
    const c = this.cache;
    const trusted = c.trusted;
    if (trusted) {
      const known = c.names.get(String(parent), name);
      if (known === null) {
        c.hits++;
        return undefined;
      }
      if (known !== undefined) return this.inodeAttr(Number(known));
      if (c.names.wantsListing(String(parent))) this.listAlong(parent);
    }
    const row = (this.q.lookup as PgStatement).getKeeping((pq) => c.keepInodeRow(pq), parent, name) as Row | undefined;
    if (trusted) c.names.set(String(parent), name, row === undefined ? null : String(row.ino));
    return row === undefined ? undefined : attrOf(row);
  }

  /** parent's entries go with the lookup that missed in it (same round trip), unless a write comes first. */
  private listAlong(parent: number): void {
    const c = this.cache;
    const writes = c.writes;
    this.listing ??= this.pg.prepare(LISTING_SQL);
    this.pg.along(this.listing, [parent], (r) => c.listed(String(parent), r, writes));
  }

  protected inodeParent(ino: number): number | null | undefined {
    const v = this.q.parent.get(ino) as Values | undefined;
    return v === undefined ? undefined : v[0] === null ? null : Number(v[0]);
  }
  protected firstName(ino: number): { parent: number; name: string } | undefined {
    const v = this.q.firstName.get(ino) as Values | undefined;
    return v === undefined ? undefined : { parent: Number(v[0]), name: String(v[1]) };
  }
  protected symlinkOf(ino: number): { type: string; target: string | null } | undefined {
    const v = this.q.symlink.get(ino) as Values | undefined;
    return v === undefined ? undefined : { type: String(v[0]), target: v[1] as string | null };
  }

  protected insertInode(v: NewInode): number {
    const ino = this.insertRow(v);
    // A new directory has no xattrs: it inherits what its parent does (a create in it asks nothing).
    const inherited = v.type === 'dir' && v.parent !== null ? this.cache.layouts.get(v.parent) : undefined;
    if (inherited !== undefined) this.cache.keepLayout(ino, inherited);
    return ino;
  }

  private insertRow(v: NewInode): number {
    // While the lease is held this side numbers it (no RETURNING to wait for: the INSERT goes with the COMMIT).
    const own = this.pg.newIno(v.type === 'dir');
    if (own === null) return Number(this.q.insert.run(v).lastInsertRowid);
    this.insertNumbered ??= this.pg.prepare(`${INODE_COLUMNS_SQL} VALUES (@ino, ${INODE_VALUES_SQL})`);
    this.insertNumbered.run({ ...v, ino: own });
    return own;
  }

  protected addEntry(parent: number, name: string, ino: number): void {
    this.q.addEntry.run(parent, name, ino);
    if (this.cache.trusted) this.cache.names.set(String(parent), name, String(ino));
  }
  protected removeEntry(parent: number, name: string): void {
    this.q.delEntry.run(parent, name);
    if (this.cache.trusted) this.cache.names.set(String(parent), name, null);
  }
  protected addLinks(ino: number, delta: number, t: bigint): void {
    this.q.nlink.run(delta, t, ino);
  }
  protected touchDir(ino: number, t: bigint): void {
    this.q.touchDir.run(t, t, ino);
  }
  protected setParent(ino: number, parent: number): void {
    this.q.setParent.run(parent, ino);
    this.cache.layouts.clear(); // every directory beneath it inherits from elsewhere now
  }
  protected removeInode(ino: number): void {
    this.q.delXattrs.run(ino);
    this.q.delInode.run(ino);
    // Only an empty directory goes: no walk of another directory passed it.
    this.cache.layouts.delete(ino);
    this.cache.names.forgetDirectory(String(ino));
  }
  protected hasEntries(dir: number): boolean {
    const known = this.cache.trusted ? this.cache.names.hasEntries(String(dir)) : undefined;
    return known ?? this.q.hasEntries.get(dir) !== undefined;
  }
  protected entries(dir: number, after: string, limit: number): DirEntry[] {
    return (this.q.entries.all(dir, after, limit) as Array<{ name: string; ino: bigint; type: string }>).map((r) => ({
      name: r.name,
      ino: Number(r.ino),
      type: r.type as InodeType,
    }));
  }
  protected addOrphan(ino: number): void {
    this.q.orphan.run(ino);
  }
  protected orphanList(): number[] {
    return (this.q.orphans.all() as Values[]).map((v) => Number(v[0]));
  }
  protected namesByPrefix(prefix: string, countMax: number): Array<{ parent: number; name: string }> {
    return (this.q.byPrefix.all(prefix, countMax) as Array<{ parent: bigint; name: string }>).map((r) => ({
      parent: Number(r.parent),
      name: r.name,
    }));
  }

  protected layoutAbove(dir: number): string | undefined {
    const c = this.cache;
    const known = c.trusted ? c.layouts.get(dir) : undefined;
    if (known !== undefined) {
      c.hits++;
      return known ?? undefined;
    }
    const r = this.q.layoutAbove.get({ ino: dir, name: LAYOUT_XATTR, depthMax: TREE_DEPTH_MAX }) as
      | { value: Buffer }
      | undefined;
    const layout = r === undefined ? null : r.value.toString('utf8');
    c.keepLayout(dir, layout);
    return layout ?? undefined;
  }

  protected writeAttrs(
    ino: number,
    mode: number,
    uid: number,
    gid: number,
    atimeNs: bigint,
    mtimeNs: bigint,
    ctimeNs: bigint,
  ): void {
    const at = toColumns(atimeNs);
    const mt = toColumns(mtimeNs);
    const ct = toColumns(ctimeNs);
    this.q.setattr.run(mode, uid, gid, at.ns, at.far, mt.ns, mt.far, ct.ns, ct.far, ino);
  }
  protected writeAtime(ino: number, atimeNs: bigint): void {
    const c = toColumns(atimeNs);
    this.q.setAtime.run(c.ns, c.far, ino);
  }
  /** The new inode's row comes with the operation's COMMIT: the lookup that follows is answered here. */
  protected made(ino: number): void {
    this.pg.prefetch(this.q.wholeInode, ino);
  }

  protected xattrValue(ino: number, name: string): Buffer | undefined {
    return (this.q.xattr.get(ino, name) as { value: Buffer } | undefined)?.value;
  }
  /** Two keyed reads, each answered from the row cache for an inode the mount knows (no join to send). */
  protected xattrFind(ino: number, name: string): XattrFind | undefined {
    const i = this.q.typeLayout.get(ino) as { type: string; layout: string | null } | undefined;
    if (i === undefined) return undefined;
    return { type: i.type, layout: i.layout, value: this.xattrValue(ino, name) ?? null };
  }
  protected xattrNames(ino: number): string[] {
    return (this.q.xattrNames.all(ino) as Values[]).map((v) => String(v[0]));
  }
  protected putXattr(ino: number, name: string, value: Buffer): void {
    this.q.putXattr.run(ino, name, value);
    if (name === LAYOUT_XATTR) this.cache.layouts.clear();
  }
  protected deleteXattr(ino: number, name: string): boolean {
    if (name === LAYOUT_XATTR) this.cache.layouts.clear();
    return this.q.delXattr.run(ino, name).changes > 0;
  }
  protected setCtime(ino: number, t: bigint): void {
    this.q.ctime.run(t, ino);
  }
  protected holdsData(ino: number): boolean {
    return this.q.holdsData.get({ ino }) !== undefined;
  }
  protected setLayout(ino: number, text: string): void {
    this.q.setLayout.run(text, ino);
  }
}
