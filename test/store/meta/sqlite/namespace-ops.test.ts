// The namespace's operations on SQLite (store/meta/sqlite/namespace-ops.ts): the shared spec.
// With CHUNKFS_TEST_META=postgres new stores go to PostgreSQL, whose own file runs the spec.
import * as path from 'node:path';
import { Store } from '../../../../store/store';
import { sqliteOnlyTest } from '../../../helpers/pg-meta';
import { SMALL, tmpDir } from '../../helpers';
import { namespaceOpsSpec } from '../namespace-ops-spec';
import { ROOT_INO } from '../../../../store/meta/meta';
import { LAYOUT_XATTR } from '../../../../store/meta/attr';

namespaceOpsSpec(
  sqliteOnlyTest,
  () => Store.create(path.join(tmpDir(), 'store'), { disks: 2, layout: 'replica:1', ...SMALL }),
  (dir) => Store.open(dir),
);

/** Counts the runs of the namespace's walk up the tree for an inherited layout (store/meta/sql/namespace-ops.ts). */
function countWalks(store: Store): () => number {
  const q = (store.ns as unknown as { q: { layoutAbove: { get: (...a: unknown[]) => unknown } } }).q.layoutAbove;
  const get = q.get.bind(q);
  let n = 0;
  q.get = (...a: unknown[]) => {
    n++;
    return get(...a);
  };
  return () => n;
}

sqliteOnlyTest(
  'creates in one directory walk up the tree for its inherited layout once, again after a change',
  async (t) => {
    const store = await Store.create(path.join(tmpDir(), 'store'), { disks: 2, layout: 'replica:1', ...SMALL });
    try {
      const ns = store.ns;
      const walks = countWalks(store);
      const a = ns.mkdir(ROOT_INO, 'a', 0o755, 0, 0);
      for (let i = 0; i < 5; i++) t.is(ns.create(a.ino, `f${i}`, 0o644, 0, 0).layout, 'replica:1');
      t.is(walks(), 1, 'one walk for five creates');
      const b = ns.mkdir(a.ino, 'b', 0o755, 0, 0);
      t.is(ns.create(b.ino, 'g', 0o644, 0, 0).layout, 'replica:1');
      t.is(walks(), 1, 'a new directory inherits what its parent keeps');
      ns.setxattr(ROOT_INO, LAYOUT_XATTR, Buffer.from('replica:2'));
      t.is(ns.create(b.ino, 'h', 0o644, 0, 0).layout, 'replica:2', 'a layout set above is seen at once');
      t.is(walks(), 2);
    } finally {
      await store.close();
    }
  },
);

sqliteOnlyTest('an inherited layout read inside a transaction that rolled back is not kept', async (t) => {
  const store = await Store.create(path.join(tmpDir(), 'store'), { disks: 2, layout: 'replica:1', ...SMALL });
  try {
    const ns = store.ns;
    const d = ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0);
    const rolledBack = new Error('rolled back');
    t.throws(
      ns.db.transaction(() => {
        ns.setxattr(d.ino, LAYOUT_XATTR, Buffer.from('replica:2'));
        t.is(ns.create(d.ino, 'f', 0o644, 0, 0).layout, 'replica:2', 'seen inside the transaction');
        throw rolledBack;
      }),
      { is: rolledBack },
    );
    t.is(ns.inheritedLayout(d.ino), 'replica:1');
    t.is(ns.create(d.ino, 'f', 0o644, 0, 0).layout, 'replica:1');
  } finally {
    await store.close();
  }
});
