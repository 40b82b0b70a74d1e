// The namespace's operations on PostgreSQL (store/meta/postgres/namespace-ops.ts): the shared spec,
// on a store holding the lease, so that names, inherited layouts and rows are kept by the mount.
import test from 'ava';
import * as path from 'node:path';
import { Store } from '../../../../store/store';
import { pgTestFile } from '../../../helpers/pg-cluster';
import { SMALL, tmpDir } from '../../helpers';
import { namespaceOpsSpec } from '../namespace-ops-spec';

const { pgTest, freshDb } = pgTestFile(test, 'nsops');

namespaceOpsSpec(
  pgTest,
  () => Store.create(path.join(tmpDir(), 'store'), { disks: 2, layout: 'replica:1', ...SMALL, meta: freshDb() }),
  (dir) => Store.open(dir),
);
