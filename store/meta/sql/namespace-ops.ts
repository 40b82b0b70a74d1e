// The namespace's rows in the SQL both SQL engines speak alike (DESIGN §9 "Operations"): the
// statements behind store/meta/ops-base.ts, prepared once, and the mapping of their rows. An engine
// (sqlite/ or postgres/namespace-ops.ts) gives the few spellings that differ (sql/dialect.ts),
// the reads it answers its own way (a lookup, getxattr's inode part) and its caches, by overriding
// the operations they concern (postgres/namespace-ops.ts keeps rows by operation, whatever the texts).
import { Db, ROOT_INO } from '../meta';
import type { SqlStatement } from '../sql-engine';
import { ATTR_COLUMNS, Attr, InodeType, LAYOUT_XATTR, TREE_DEPTH_MAX, attrOfValues } from '../attr';
import { toColumns } from '../far-times';
import { DirEntry, NamespaceOptions } from '../ops';
import { NamespaceBase, NewInode, WrittenAttrs } from '../ops-base';
import type { SqlDialect } from './dialect';

type Values = Array<bigint | string | null>;

export const INODE_COLUMNS_SQL = `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, parent,
  atime_ns, mtime_ns, ctime_ns, birth_ns, layout, chunk_size, bitrot_block, ec_block_size, placement_seed,
  cluster_map_epoch, symlink_target, rdev)`;
export const INODE_VALUES_SQL = `@type, @mode, @uid, @gid, @size, @nlink, @parent, @t, @t, @t, @t,
  @layout, @cs, @bb, @eb, @seed, @epoch, @target, @rdev`;

/** dir and its ancestors up to the root (whose parent is itself), nearest first, at most depthMax. */
function layoutAboveSql(walkStartSql: string): string {
  return `WITH RECURSIVE up(ino, depth) AS (SELECT ${walkStartSql}, 0
    UNION ALL SELECT coalesce(i.parent, ${ROOT_INO}), up.depth + 1 FROM up JOIN inodes i ON i.ino = up.ino
    WHERE up.ino != ${ROOT_INO} AND up.depth + 1 < @depthMax)
  SELECT x.value FROM up JOIN xattrs x ON x.ino = up.ino AND x.name = @name ORDER BY up.depth LIMIT 1`;
}

function statements(db: Db, d: SqlDialect) {
  return {
    // getattr, the most frequent request, as raw rows of ATTR_COLUMNS (store/meta/attr.ts).
    attr: db.prepare(`SELECT ${ATTR_COLUMNS.join(', ')} FROM inodes WHERE ino = ?`).raw(true),
    parent: db.prepare('SELECT parent FROM inodes WHERE ino = ?').raw(true),
    symlink: db.prepare('SELECT type, symlink_target FROM inodes WHERE ino = ?').raw(true),
    firstName: db.prepare('SELECT parent, name FROM dirents WHERE ino = ? ORDER BY parent, name LIMIT 1').raw(true),
    entries: db.prepare(`SELECT d.name, d.ino, i.type FROM dirents d JOIN inodes i ON i.ino = d.ino
        WHERE d.parent = ? AND d.name > ? ORDER BY d.name LIMIT ?`),
    hasEntries: db.prepare('SELECT 1 FROM dirents WHERE parent = ? LIMIT 1'),
    insert: db.prepare(`${INODE_COLUMNS_SQL} VALUES (${d.nextInoSql}, ${INODE_VALUES_SQL})${d.returningSql('ino')}`),
    addEntry: db.prepare('INSERT INTO dirents(parent, name, ino) VALUES (?, ?, ?)'),
    delEntry: db.prepare('DELETE FROM dirents WHERE parent = ? AND name = ?'),
    nlink: db.prepare('UPDATE inodes SET nlink = nlink + ?, ctime_ns = ? WHERE ino = ?'),
    touchDir: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
    setParent: db.prepare('UPDATE inodes SET parent = ? WHERE ino = ?'),
    delInode: db.prepare('DELETE FROM inodes WHERE ino = ?'),
    delXattrs: db.prepare('DELETE FROM xattrs WHERE ino = ?'),
    orphan: db.prepare('INSERT INTO orphans(ino) VALUES (?) ON CONFLICT DO NOTHING'),
    orphans: db.prepare('SELECT ino FROM orphans ORDER BY ino').raw(true),
    byPrefix: db.prepare(`SELECT d.parent, d.name FROM dirents d JOIN inodes i ON i.ino = d.ino
          WHERE ${d.nameStartsSql} AND i.type != 'dir' ORDER BY d.parent, d.name LIMIT ?`),
    // One statement for the whole walk up (not two per ancestor, on every create).
    layoutAbove: db.prepare(layoutAboveSql(d.walkStartSql)),
    setattr: db.prepare(`UPDATE inodes SET mode = ?, uid = ?, gid = ?, atime_ns = ?, atime_far = ?,
        mtime_ns = ?, mtime_far = ?, ctime_ns = ?, ctime_far = ? WHERE ino = ?`),
    setAtime: db.prepare('UPDATE inodes SET atime_ns = ?, atime_far = ? WHERE ino = ?'),
    xattr: db.prepare('SELECT value FROM xattrs WHERE ino = ? AND name = ?'),
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

/** The rows both SQL engines read and write alike; lookups, getxattr's inode part and caches are each engine's. */
export abstract class SqlNamespaceBase extends NamespaceBase {
  protected readonly q: Record<keyof ReturnType<typeof statements>, SqlStatement>;

  constructor(db: Db, opts: NamespaceOptions, dialect: SqlDialect) {
    super(db, opts);
    this.q = statements(db, dialect);
  }

  protected inodeAttr(ino: number): Attr | undefined {
    const v = this.q.attr.get(ino) as Values | undefined;
    return v === undefined ? undefined : attrOfValues(v);
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
    return Number(this.q.insert.run(v).lastInsertRowid);
  }
  protected addEntry(parent: number, name: string, ino: number): void {
    this.q.addEntry.run(parent, name, ino);
  }
  protected removeEntry(parent: number, name: string): void {
    this.q.delEntry.run(parent, name);
  }
  protected addLinks(ino: number, delta: number, t: bigint): void {
    this.q.nlink.run(delta, t, ino);
  }
  protected touchDir(ino: number, t: bigint): void {
    this.q.touchDir.run(t, t, ino);
  }
  protected setParent(ino: number, parent: number): void {
    this.q.setParent.run(parent, ino);
  }
  protected removeInode(ino: number): void {
    this.q.delXattrs.run(ino);
    this.q.delInode.run(ino);
  }
  protected hasEntries(dir: number): boolean {
    return this.q.hasEntries.get(dir) !== undefined;
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
    const r = this.q.layoutAbove.get({ ino: dir, name: LAYOUT_XATTR, depthMax: TREE_DEPTH_MAX }) as
      | { value: Buffer }
      | undefined;
    return r?.value.toString('utf8');
  }
  protected writeAttrs(ino: number, ...[mode, uid, gid, atimeNs, mtimeNs, ctimeNs]: WrittenAttrs): void {
    const at = toColumns(atimeNs);
    const mt = toColumns(mtimeNs);
    const ct = toColumns(ctimeNs);
    this.q.setattr.run(mode, uid, gid, at.ns, at.far, mt.ns, mt.far, ct.ns, ct.far, ino);
  }
  protected writeAtime(ino: number, atimeNs: bigint): void {
    const c = toColumns(atimeNs);
    this.q.setAtime.run(c.ns, c.far, ino);
  }
  protected xattrValue(ino: number, name: string): Buffer | undefined {
    return (this.q.xattr.get(ino, name) as { value: Buffer } | undefined)?.value;
  }
  protected xattrNames(ino: number): string[] {
    return (this.q.xattrNames.all(ino) as Values[]).map((v) => String(v[0]));
  }
  protected putXattr(ino: number, name: string, value: Buffer): void {
    this.q.putXattr.run(ino, name, value);
  }
  protected deleteXattr(ino: number, name: string): boolean {
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
