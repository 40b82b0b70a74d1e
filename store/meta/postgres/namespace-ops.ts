// The namespace's rows on PostgreSQL (DESIGN §9 "Operations", "Fewer round trips"): the statements
// behind store/meta/ops-base.ts, and what the lease holder keeps of them (row-cache.ts) so that an
// operation asks the server only for what it does not know. While the mount holds the lease it is
// the only writer, so each operation here keeps what it reads and says what it writes, by value:
// - inode rows, whole, by number: read once (a lookup's join, or the row prefetched with the COMMIT
//   that made the inode), answering getattr, parentOf, readlink and getxattr's inode part; patched
//   by the link counts, times, attributes, parent and layout these operations write;
// - names (name-cache.ts), by (directory, name): set by lookups, by the entries added and removed
//   here, by a directory listed whole along with a lookup that missed in it, and known empty for a
//   directory made here; a removed directory's names go with it;
// - xattrs by (inode, name), none for an inode made here;
// - the inherited layout of a directory: a new directory's is its parent's, all are dropped when a
//   user.chunkfs.layout changes or a directory moves, a removed one's with it.
// Each write runs inside PgDb.following, which refuses a write of these tables anywhere else.
// All of it is trusted only while rows are (the lease) and dropped with them (rollback, lost
// connection, crash of the metadata, lost lease).
import { Db } from '../meta';
import { POSTGRES_DIALECT } from './dialect';
import type { SqlStatement } from '../sql-engine';
import { ATTR_COLUMNS, Attr, LAYOUT_XATTR, Row, attrOf, attrOfValues } from '../attr';
import { toColumns } from '../far-times';
import { NamespaceOptions } from '../ops';
import { NewInode, WrittenAttrs, XattrFind } from '../ops-base';
import { INODE_COLUMNS_SQL, INODE_VALUES_SQL, SqlNamespaceBase } from '../sql/namespace-ops';
import { PgDb, PgStatement } from './engine';
import { LISTED_ENTRIES_MAX } from './name-cache';
import type { PgRowCache } from './row-cache';
import { rowValues } from './decode';
import { GONE, asText, changing } from './inode-change';
import { CachedResult } from './result';

const PARENT_COLUMNS = ['parent'] as const;
const SYMLINK_COLUMNS = ['type', 'symlink_target'] as const;
const TYPE_LAYOUT_COLUMNS = ['type', 'layout'] as const;

/** A directory's entries, read whole with a lookup in it that missed (name-cache.ts: one more is "large"). */
const LISTING_SQL = `SELECT name, ino FROM dirents WHERE parent = ? LIMIT ${LISTED_ENTRIES_MAX + 1}`;
/** An inode row and its xattrs in one statement (one execution on the server, not two). */
const DROP_INODE_SQL = 'WITH x AS (DELETE FROM xattrs WHERE ino = @ino) DELETE FROM inodes WHERE ino = @ino';

export class PgNamespaceOps extends SqlNamespaceBase {
  // A name not known: its inode's whole row comes with it (kept as the read of that inode).
  private readonly entryRow: SqlStatement;
  /** Made on first use (each prepare is a round trip): the INSERT of a number this side chose, the listing. */
  private insertNumbered: SqlStatement | null = null;
  private listing: SqlStatement | null = null;
  /** An inode row and its xattrs in one statement, prepared here: a prepare waits for every reply unread. */
  private readonly dropInodeRow: SqlStatement;

  constructor(
    private readonly pg: PgDb,
    opts: NamespaceOptions,
  ) {
    super(pg as Db, opts, POSTGRES_DIALECT);
    this.entryRow = pg.prepare(
      'SELECT i.* FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = ? AND d.name = ?',
    );
    this.dropInodeRow = pg.prepare(DROP_INODE_SQL);
  }

  private get cache(): PgRowCache {
    return this.pg.rowCache;
  }

  /** ino's whole row (kept, or read and kept), or null. */
  private row(ino: number): CachedResult | null {
    return this.pg.inodeRow(ino);
  }

  protected override inodeAttr(ino: number): Attr | undefined {
    const r = this.row(ino);
    return r === null ? undefined : attrOfValues(rowValues(r, ATTR_COLUMNS) as Array<bigint | string | null>);
  }
  protected override inodeParent(ino: number): number | null | undefined {
    const r = this.row(ino);
    if (r === null) return undefined;
    const [parent] = rowValues(r, PARENT_COLUMNS);
    return parent === null ? null : Number(parent);
  }
  protected override symlinkOf(ino: number): { type: string; target: string | null } | undefined {
    const r = this.row(ino);
    if (r === null) return undefined;
    const [type, target] = rowValues(r, SYMLINK_COLUMNS);
    return { type: String(type), target: target as string | null };
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
    const row = (this.entryRow as PgStatement).getKeeping((pq) => c.keepInodeRow(pq), parent, name) as Row | undefined;
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

  protected override insertInode(v: NewInode): number {
    const ino = this.insertRow(v);
    // A new directory has no xattrs: it inherits what its parent does (a create in it asks nothing).
    const inherited = v.type === 'dir' && v.parent !== null ? this.cache.layouts.get(v.parent) : undefined;
    if (inherited !== undefined) this.cache.keepLayout(ino, inherited);
    return ino;
  }

  private insertRow(v: NewInode): number {
    // While the lease is held this side numbers it (no RETURNING to wait for: the INSERT goes with the COMMIT).
    const own = this.pg.newIno(v.type === 'dir');
    // Its row is read with the COMMIT (made), so nothing is kept of it until then.
    if (own === null) return this.pg.following(() => super.insertInode(v));
    this.insertNumbered ??= this.pg.prepare(`${INODE_COLUMNS_SQL} VALUES (@ino, ${INODE_VALUES_SQL})`);
    this.pg.following(() => this.insertNumbered!.run({ ...v, ino: own }));
    return own;
  }

  protected override addEntry(parent: number, name: string, ino: number): void {
    this.pg.following(() => super.addEntry(parent, name, ino));
    this.cache.entryWritten(parent, name, ino);
  }
  protected override removeEntry(parent: number, name: string): void {
    this.pg.following(() => super.removeEntry(parent, name));
    this.cache.entryWritten(parent, name, null);
  }
  protected override addLinks(ino: number, delta: number, t: bigint): void {
    this.pg.following(() => super.addLinks(ino, delta, t));
    this.cache.patchInode(ino, changing({ nlink: { add: BigInt(delta) }, ctime_ns: asText(t) }));
  }
  protected override touchDir(ino: number, t: bigint): void {
    this.pg.following(() => super.touchDir(ino, t));
    this.cache.patchInode(ino, changing({ mtime_ns: asText(t), ctime_ns: asText(t) }));
  }
  protected override setParent(ino: number, parent: number): void {
    this.pg.following(() => super.setParent(ino, parent));
    this.cache.patchInode(ino, changing({ parent: asText(parent) }));
    this.cache.layouts.clear(); // every directory beneath it inherits from elsewhere now
  }
  protected override removeInode(ino: number): void {
    this.pg.following(() => this.dropInodeRow.run({ ino }));
    this.cache.inodeGone(ino);
    // Only an empty directory goes: no walk of another directory passed it.
    this.cache.layouts.delete(ino);
    this.cache.names.forgetDirectory(String(ino));
  }
  protected override hasEntries(dir: number): boolean {
    const known = this.cache.trusted ? this.cache.names.hasEntries(String(dir)) : undefined;
    return known ?? super.hasEntries(dir);
  }
  protected override writeAttrs(ino: number, ...attrs: WrittenAttrs): void {
    this.pg.following(() => super.writeAttrs(ino, ...attrs));
    const [mode, uid, gid, atimeNs, mtimeNs, ctimeNs] = attrs;
    const at = toColumns(atimeNs);
    const mt = toColumns(mtimeNs);
    const ct = toColumns(ctimeNs);
    this.cache.patchInode(
      ino,
      changing({
        mode: asText(mode),
        uid: asText(uid),
        gid: asText(gid),
        atime_ns: asText(at.ns),
        atime_far: at.far,
        mtime_ns: asText(mt.ns),
        mtime_far: mt.far,
        ctime_ns: asText(ct.ns),
        ctime_far: ct.far,
      }),
    );
  }
  protected override writeAtime(ino: number, atimeNs: bigint): void {
    this.pg.following(() => super.writeAtime(ino, atimeNs));
    const c = toColumns(atimeNs);
    this.cache.patchInode(ino, changing({ atime_ns: asText(c.ns), atime_far: c.far }));
  }
  protected override setCtime(ino: number, t: bigint): void {
    this.pg.following(() => super.setCtime(ino, t));
    this.cache.patchInode(ino, changing({ ctime_ns: asText(t) }));
  }
  protected override setLayout(ino: number, text: string): void {
    this.pg.following(() => super.setLayout(ino, text));
    this.cache.patchInode(ino, changing({ layout: text }));
  }

  protected override layoutAbove(dir: number): string | undefined {
    const c = this.cache;
    const known = c.trusted ? c.layouts.get(dir) : undefined;
    if (known !== undefined) {
      c.hits++;
      return known ?? undefined;
    }
    const layout = super.layoutAbove(dir) ?? null;
    c.keepLayout(dir, layout);
    return layout ?? undefined;
  }

  /** The new inode's row comes with the operation's COMMIT: the lookup that follows is answered here. */
  protected made(ino: number): void {
    this.pg.prefetchInode(ino);
  }

  /** The inode's part from its row, the value from the xattrs kept: nothing to send for an inode the mount knows. */
  protected xattrFind(ino: number, name: string): XattrFind | undefined {
    const r = this.row(ino);
    if (r === null) return undefined;
    const [type, layout] = rowValues(r, TYPE_LAYOUT_COLUMNS);
    return { type: String(type), layout: layout as string | null, value: this.xattrValue(ino, name) ?? null };
  }
  protected override xattrValue(ino: number, name: string): Buffer | undefined {
    const kept = this.cache.xattr(ino, name);
    if (kept !== undefined) return kept === null ? undefined : Buffer.from(kept);
    const v = super.xattrValue(ino, name);
    if (this.cache.trusted) this.cache.keepXattr(ino, name, v === undefined ? null : Buffer.from(v), false);
    return v;
  }
  protected override xattrNames(ino: number): string[] {
    return this.cache.isNew(ino) ? [] : super.xattrNames(ino);
  }
  protected override putXattr(ino: number, name: string, value: Buffer): void {
    this.pg.following(() => super.putXattr(ino, name, value));
    this.cache.keepXattr(ino, name, Buffer.from(value), true);
    if (name === LAYOUT_XATTR) this.cache.layouts.clear();
  }
  protected override deleteXattr(ino: number, name: string): boolean {
    if (name === LAYOUT_XATTR) this.cache.layouts.clear();
    const gone = this.pg.following(() => super.deleteXattr(ino, name));
    this.cache.keepXattr(ino, name, null, true);
    return gone;
  }
}
