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
import { Db } from '../meta';
import { POSTGRES_DIALECT } from './dialect';
import type { SqlStatement } from '../sql-engine';
import { Attr, LAYOUT_XATTR, Row, attrOf } from '../attr';
import { NamespaceOptions } from '../ops';
import { NewInode, XattrFind } from '../ops-base';
import { INODE_COLUMNS_SQL, INODE_VALUES_SQL, SqlNamespaceBase } from '../sql/namespace-ops';
import { PgDb, PgStatement } from './engine';
import { LISTED_ENTRIES_MAX } from './name-cache';
import type { PgRowCache } from './row-cache';

/** A directory's entries, read whole with a lookup in it that missed (name-cache.ts: one more is "large"). */
const LISTING_SQL = `SELECT name, ino FROM dirents WHERE parent = ? LIMIT ${LISTED_ENTRIES_MAX + 1}`;

export class PgNamespaceOps extends SqlNamespaceBase {
  // A name not known: its inode's whole row comes with it (kept as the read of that inode).
  private readonly entryRow: SqlStatement;
  private readonly wholeInode: SqlStatement;
  // getxattr's inode part (ENOENT, a file's layout): a keyed read, as the row cache answers it.
  private readonly typeLayout: SqlStatement;
  /** Made on first use (each prepare is a round trip): the INSERT of a number this side chose, the listing. */
  private insertNumbered: SqlStatement | null = null;
  private listing: SqlStatement | null = null;

  constructor(
    private readonly pg: PgDb,
    opts: NamespaceOptions,
  ) {
    super(pg as Db, opts, POSTGRES_DIALECT);
    this.entryRow = pg.prepare(
      'SELECT i.* FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = ? AND d.name = ?',
    );
    this.wholeInode = pg.prepare('SELECT * FROM inodes WHERE ino = ?');
    this.typeLayout = pg.prepare('SELECT type, layout FROM inodes WHERE ino = ?');
  }

  private get cache(): PgRowCache {
    return this.pg.rowCache;
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
    if (own === null) return super.insertInode(v);
    this.insertNumbered ??= this.pg.prepare(`${INODE_COLUMNS_SQL} VALUES (@ino, ${INODE_VALUES_SQL})`);
    this.insertNumbered.run({ ...v, ino: own });
    return own;
  }

  protected override addEntry(parent: number, name: string, ino: number): void {
    super.addEntry(parent, name, ino);
    if (this.cache.trusted) this.cache.names.set(String(parent), name, String(ino));
  }
  protected override removeEntry(parent: number, name: string): void {
    super.removeEntry(parent, name);
    if (this.cache.trusted) this.cache.names.set(String(parent), name, null);
  }
  protected override setParent(ino: number, parent: number): void {
    super.setParent(ino, parent);
    this.cache.layouts.clear(); // every directory beneath it inherits from elsewhere now
  }
  protected override removeInode(ino: number): void {
    super.removeInode(ino);
    // Only an empty directory goes: no walk of another directory passed it.
    this.cache.layouts.delete(ino);
    this.cache.names.forgetDirectory(String(ino));
  }
  protected override hasEntries(dir: number): boolean {
    const known = this.cache.trusted ? this.cache.names.hasEntries(String(dir)) : undefined;
    return known ?? super.hasEntries(dir);
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
    this.pg.prefetch(this.wholeInode, ino);
  }

  /** Two keyed reads, each answered from the row cache for an inode the mount knows (no join to send). */
  protected xattrFind(ino: number, name: string): XattrFind | undefined {
    const i = this.typeLayout.get(ino) as { type: string; layout: string | null } | undefined;
    if (i === undefined) return undefined;
    return { type: i.type, layout: i.layout, value: this.xattrValue(ino, name) ?? null };
  }
  protected override putXattr(ino: number, name: string, value: Buffer): void {
    super.putXattr(ino, name, value);
    if (name === LAYOUT_XATTR) this.cache.layouts.clear();
  }
  protected override deleteXattr(ino: number, name: string): boolean {
    if (name === LAYOUT_XATTR) this.cache.layouts.clear();
    return super.deleteXattr(ino, name);
  }
}
