// The namespace's rows on SQLite (DESIGN §9 "Operations"): the statements both SQL engines share
// (store/meta/sql/namespace-ops.ts) with SQLite's spellings, and the reads SQLite answers in one
// statement (a lookup's joined row, getxattr's inode with its value). Rows are not cached here:
// better-sqlite3 reads pages the process holds already, so a read costs less than keeping a copy
// correct would. Only the inherited layout is kept (inherited-layouts.ts): its walk up the tree was
// a recursive statement on every create.
import { SQLITE_DIALECT } from './dialect';
import type { SqlStatement } from '../sql-engine';
import { ATTR_COLUMNS, Attr, attrOfValues } from '../attr';
import { NamespaceOptions } from '../ops';
import { NewInode, XattrFind } from '../ops-base';
import { SqlNamespaceBase } from '../sql/namespace-ops';
import type { SqliteDb } from './engine';
import { InheritedLayouts } from './inherited-layouts';

export class SqliteNamespaceOps extends SqlNamespaceBase {
  private readonly entryRow: SqlStatement;
  private readonly find: SqlStatement;
  private readonly layouts: InheritedLayouts;

  constructor(db: SqliteDb, opts: NamespaceOptions) {
    super(db, opts, SQLITE_DIALECT);
    this.layouts = new InheritedLayouts(() => db.rollbacks);
    // lookup, as frequent as getattr: the entry's inode as a raw row of ATTR_COLUMNS (store/meta/attr.ts).
    this.entryRow = db
      .prepare(
        `SELECT ${ATTR_COLUMNS.map((c) => `i.${c}`).join(', ')} FROM dirents d JOIN inodes i ON i.ino = d.ino
        WHERE d.parent = ? AND d.name = ?`,
      )
      .raw(true);
    // The inode (ENOENT, a file's layout) and the value in one statement (ACL reads on chmod, create).
    this.find = db.prepare(
      `SELECT i.type, i.layout, x.value FROM inodes i
        LEFT JOIN xattrs x ON x.ino = i.ino AND x.name = @name WHERE i.ino = @ino`,
    );
  }

  protected entryAttr(parent: number, name: string): Attr | undefined {
    const v = this.entryRow.get(parent, name) as Array<bigint | string | null> | undefined;
    return v === undefined ? undefined : attrOfValues(v);
  }
  protected made(): void {
    /* nothing cached: the lookup that follows reads the row */
  }
  protected xattrFind(ino: number, name: string): XattrFind | undefined {
    return this.find.get({ ino, name }) as XattrFind | undefined;
  }

  protected override layoutAbove(dir: number): string | undefined {
    const kept = this.layouts.get(dir);
    if (kept !== undefined) return kept ?? undefined;
    const layout = super.layoutAbove(dir);
    this.layouts.keep(dir, layout ?? null);
    return layout;
  }
  protected override insertInode(v: NewInode): number {
    const ino = super.insertInode(v);
    if (v.type === 'dir' && v.parent !== null) this.layouts.madeDir(ino, v.parent);
    return ino;
  }
  protected override setParent(ino: number, parent: number): void {
    super.setParent(ino, parent);
    this.layouts.moved();
  }
  protected override removeInode(ino: number): void {
    super.removeInode(ino);
    this.layouts.gone(ino);
  }
  protected override putXattr(ino: number, name: string, value: Buffer): void {
    super.putXattr(ino, name, value);
    this.layouts.xattrChanged(name);
  }
  protected override deleteXattr(ino: number, name: string): boolean {
    const gone = super.deleteXattr(ino, name);
    this.layouts.xattrChanged(name);
    return gone;
  }
}
