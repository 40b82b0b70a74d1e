// The namespace's rows on SQLite (DESIGN §9 "Operations"): the statements both SQL engines share
// (store/meta/sql/namespace-ops.ts) with SQLite's spellings, and the reads SQLite answers in one
// statement (a lookup's joined row, getxattr's inode with its value). Nothing is cached here:
// better-sqlite3 reads pages the process holds already, so a read costs less than keeping a copy
// correct would.
import { Db } from '../meta';
import { SQLITE_DIALECT } from './dialect';
import type { SqlStatement } from '../sql-engine';
import { ATTR_COLUMNS, Attr, attrOfValues } from '../attr';
import { NamespaceOptions } from '../ops';
import { XattrFind } from '../ops-base';
import { SqlNamespaceBase } from '../sql/namespace-ops';

export class SqliteNamespaceOps extends SqlNamespaceBase {
  private readonly entryRow: SqlStatement;
  private readonly find: SqlStatement;

  constructor(db: Db, opts: NamespaceOptions) {
    super(db, opts, SQLITE_DIALECT);
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
}
