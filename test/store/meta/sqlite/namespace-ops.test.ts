// The namespace's operations on SQLite (store/meta/sqlite/namespace-ops.ts): the shared spec.
// With CHUNKFS_TEST_META=postgres new stores go to PostgreSQL, whose own file runs the spec.
import * as path from 'node:path';
import { Store } from '../../../../store/store';
import { sqliteOnlyTest } from '../../../helpers/pg-meta';
import { SMALL, tmpDir } from '../../helpers';
import { namespaceOpsSpec } from '../namespace-ops-spec';

namespaceOpsSpec(
  sqliteOnlyTest,
  () => Store.create(path.join(tmpDir(), 'store'), { disks: 2, layout: 'replica:1', ...SMALL }),
  (dir) => Store.open(dir),
);
