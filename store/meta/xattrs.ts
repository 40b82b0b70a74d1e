// Extended attributes (store-api.md). user.chunkfs.layout is special: on a
// directory it is stored and inherited by files created beneath (validated, EINVAL
// if this store cannot hold it); on a file it shows the file's own Layout and may
// be changed only while the file holds no data. listxattr names it only where it was
// set explicitly (a row here: cp --preserve=xattr, rsync -X and xattr
// comparisons must not see an attribute nobody set); getxattr answers it on every file.
import { Db, nowNs } from './meta';
import { FsError } from '../fs-error';
import { Attr, LAYOUT_XATTR } from './attr';

export const XATTR_CREATE = 1; // Linux <sys/xattr.h>
export const XATTR_REPLACE = 2;
const XATTR_NAME_BYTES_MAX = 255;
const XATTR_VALUE_BYTES_MAX = 64 * 1024;

interface FindRow {
  type: string;
  layout: string | null;
  value: Buffer | null;
}

export class Xattrs {
  private readonly q;
  constructor(
    private readonly db: Db,
    private readonly attr: (ino: number) => Attr,
    private readonly checkLayout: (text: string) => void,
    private readonly layoutChanged: (ino: number) => void = () => undefined,
  ) {
    this.q = {
      get: db.prepare('SELECT value FROM xattrs WHERE ino = ? AND name = ?'),
      // The inode (ENOENT, a file's layout) and the value in one statement (ACL reads on chmod, create).
      find: db.prepare(
        'SELECT i.type, i.layout, x.value FROM inodes i LEFT JOIN xattrs x ON x.ino = i.ino AND x.name = @name WHERE i.ino = @ino',
      ),
      // PostgreSQL: the same in two keyed reads, each answered from the lease holder's row cache.
      typeLayout: db.prepare('SELECT type, layout FROM inodes WHERE ino = ?'),
      list: db.prepare('SELECT name FROM xattrs WHERE ino = ? ORDER BY name'),
      put: db.prepare(
        'INSERT INTO xattrs(ino, name, value) VALUES (?, ?, ?) ON CONFLICT(ino, name) DO UPDATE SET value = excluded.value',
      ),
      del: db.prepare('DELETE FROM xattrs WHERE ino = ? AND name = ?'),
      ctime: db.prepare('UPDATE inodes SET ctime_ns = ? WHERE ino = ?'),
      hasData: db.prepare(
        'SELECT 1 FROM chunks WHERE ino = @ino AND version > 0 UNION ALL SELECT 1 FROM inodes WHERE ino = @ino AND slice_container IS NOT NULL LIMIT 1',
      ), // chunks or a needle (spec §11)
      setLayout: db.prepare('UPDATE inodes SET layout = ? WHERE ino = ?'),
    };
  }

  private checkXattrName(name: string): void {
    if (name.length === 0) throw new FsError('EINVAL', 'empty xattr name');
    if (Buffer.byteLength(name) > XATTR_NAME_BYTES_MAX) throw new FsError('ERANGE', 'xattr name too long');
  }

  get(ino: number, name: string): Buffer {
    const v = this.find(ino, name);
    if (v === null) throw new FsError('ENODATA', `no xattr '${name}' on inode ${ino}`);
    return v;
  }

  /** get, with null for a name the inode does not have. */
  find(ino: number, name: string): Buffer | null {
    this.checkXattrName(name);
    const r =
      this.db.engine === 'postgres'
        ? this.findApart(ino, name)
        : (this.q.find.get({ ino, name }) as FindRow | undefined);
    if (r === undefined) throw new FsError('ENOENT', `no inode ${ino}`);
    if (name === LAYOUT_XATTR && r.type === 'file') return Buffer.from(r.layout ?? '', 'utf8');
    return r.value === null ? null : Buffer.from(r.value);
  }

  /** find's row from two cached reads (PostgreSQL: no round trip for an inode the mount knows). */
  private findApart(ino: number, name: string): FindRow | undefined {
    const i = this.q.typeLayout.get(ino) as { type: string; layout: string | null } | undefined;
    if (i === undefined) return undefined;
    const x = this.q.get.get(ino, name) as { value: Buffer } | undefined;
    return { type: i.type, layout: i.layout, value: x === undefined ? null : x.value };
  }

  set(ino: number, name: string, value: Uint8Array, flags = 0): void {
    this.checkXattrName(name);
    if (value.length > XATTR_VALUE_BYTES_MAX) throw new FsError('ERANGE', 'xattr value too large');
    this.db.transaction(() => {
      const a = this.attr(ino);
      const exists = (name === LAYOUT_XATTR && a.type === 'file') || this.q.get.get(ino, name) !== undefined;
      if ((flags & XATTR_CREATE) !== 0 && exists) throw new FsError('EEXIST', `xattr '${name}' exists`);
      if ((flags & XATTR_REPLACE) !== 0 && !exists) throw new FsError('ENODATA', `no xattr '${name}'`);
      if (name === LAYOUT_XATTR) {
        const text = Buffer.from(value).toString('utf8').trim();
        this.checkLayout(text);
        if (a.type === 'file') {
          const explicit = this.q.get.get(ino, name) !== undefined;
          if (text === a.layout && explicit) return;
          if (text !== a.layout) {
            if (this.q.hasData.get({ ino }) !== undefined)
              throw new FsError('EBUSY', 'the layout of a file that holds data cannot change');
            this.q.setLayout.run(text, ino);
            this.layoutChanged(ino);
          }
          // The row marks the layout as set explicitly (listed); the inode's column stays its truth.
          this.q.put.run(ino, name, Buffer.from(text, 'utf8'));
          this.q.ctime.run(nowNs(), ino);
          return;
        }
        if (a.type !== 'dir') throw new FsError('EINVAL', `${LAYOUT_XATTR} applies to files and directories only`);
        value = Buffer.from(text, 'utf8');
      }
      this.q.put.run(ino, name, Buffer.from(value));
      this.q.ctime.run(nowNs(), ino);
    })();
  }

  list(ino: number): string[] {
    this.attr(ino); // ENOENT for a missing inode
    return (this.q.list.all(ino) as Array<{ name: string }>).map((r) => r.name);
  }

  remove(ino: number, name: string): void {
    this.checkXattrName(name);
    const a = this.attr(ino);
    if (name === LAYOUT_XATTR && a.type === 'file') throw new FsError('EPERM', 'a file always has a layout');
    if (this.q.del.run(ino, name).changes === 0) throw new FsError('ENODATA', `no xattr '${name}' on inode ${ino}`);
    this.q.ctime.run(nowNs(), ino);
  }
}
