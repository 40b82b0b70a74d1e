// Each engine's whole current schema is one file, store/meta/<engine>/schema.sql (DESIGN §9
// "Schema"): `chunkfs mkfs` makes a new store from it word for word, the package ships it (it is
// read at run time from beside the sources, not from dist/), and a store made by the first builds
// (schema v1) and upgraded by the engine's migrations ends with the same schema and rows, on SQLite
// and on PostgreSQL.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { SCHEMA_VERSION, createRoot } from '../../../store/meta/meta';
import { openDb } from '../../../store/meta/sqlite/database';
import { createMeta, upgradeStoreMeta } from '../../../store/meta/engine-open';
import type { Db } from '../../../store/meta/sql-engine';
import { SQLITE_SCHEMA } from '../../../store/meta/sqlite/schema';
import { POSTGRES_SCHEMA } from '../../../store/meta/postgres/schema';
import { connectPg } from '../../../store/meta/postgres/connect';
import { chunkfsOk, removeDir, tempDir } from '../../helpers/mount';
import { pgTestFile } from '../../helpers/pg-cluster';
import { REPO_ROOT } from '../../helpers/root';
import { schemaDump } from '../../helpers/schema-dump';

const { pgTest, freshDb } = pgTestFile(test, 'schema');

let dir = '';
test.before(async () => {
  dir = await tempDir('schema');
});
test.after.always(async () => {
  if (dir !== '') await removeDir(dir);
});

const SCHEMA_FILES = { sqlite: SQLITE_SCHEMA.file, postgres: POSTGRES_SCHEMA.file };

/** An empty meta.db, opened read-write. */
function emptySqlite(name: string): Db {
  const file = path.join(dir, name);
  fs.writeFileSync(file, '');
  return openDb(file, false);
}

/** The engine's own objects (lease, fencing, commit point, followers' triggers): made by opens, not by schema.sql. */
const ENGINE_OBJECT_RE = /"chunkfs_(?!schema)/;

/** The store schema of db word for word (raw), without the engine's own objects. */
function rawStoreSchema(db: Db): string[] {
  return schemaDump(db, { rows: false, raw: true }).filter((l) => !ENGINE_OBJECT_RE.test(l));
}

/** Metadata as the first builds made it: migration v1 (all there was), the root directory, version 1. */
function makeV1(db: Db): void {
  db.transaction(() => {
    db.schema.migrateStep(db, 0);
    createRoot(db);
    db.setSchemaVersion(1);
  })();
}

test('schema.sql is read from beside the engine sources, which the package ships (not from dist/)', (t) => {
  for (const [engine, file] of Object.entries(SCHEMA_FILES)) {
    t.is(file, path.join(REPO_ROOT, 'store', 'meta', engine, 'schema.sql'));
    t.true(fs.statSync(file).isFile(), file);
  }
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ) as Array<{ files: Array<{ path: string }> }>;
  const files = new Set(packed[0].files.map((f) => f.path));
  t.true(files.has('store/meta/sqlite/schema.sql'));
  t.true(files.has('store/meta/postgres/schema.sql'));
  t.true(files.has('store/meta/schema-file.ts'), 'the sources the build compiles ship beside it');
});

test.serial('SQLite: chunkfs mkfs makes meta.db from sqlite/schema.sql word for word', async (t) => {
  const store = path.join(dir, 'mkfs-sqlite');
  await chunkfsOk(['mkfs', store]);
  const made = openDb(path.join(store, 'meta.db'), true);
  const fromFile = new Database(path.join(dir, 'from-file.db'));
  fromFile.exec(fs.readFileSync(SCHEMA_FILES.sqlite, 'utf8'));
  fromFile.close();
  const expected = openDb(path.join(dir, 'from-file.db'), true);
  const v1 = emptySqlite('v1-raw.db');
  try {
    t.is(made.schemaVersion(), SCHEMA_VERSION);
    t.deepEqual(rawStoreSchema(made), rawStoreSchema(expected));
    makeV1(v1);
    upgradeStoreMeta(v1, crypto.randomUUID());
    // The check tells the two ways apart: SQLite keeps each statement's text as it ran.
    t.notDeepEqual(rawStoreSchema(v1), rawStoreSchema(expected));
  } finally {
    made.close();
    expected.close();
    v1.close();
  }
});

test.serial('SQLite: a v1 store upgraded by sqlite/migrations.ts ends with the schema and rows of a new one', (t) => {
  const fresh = path.join(dir, 'fresh.db');
  createMeta(fresh, undefined, crypto.randomUUID());
  const upgraded = emptySqlite('v1.db');
  const made = openDb(fresh, true);
  try {
    makeV1(upgraded);
    t.is(upgraded.schemaVersion(), 1);
    upgradeStoreMeta(upgraded, crypto.randomUUID());
    t.is(upgraded.schemaVersion(), SCHEMA_VERSION);
    const want = schemaDump(made, { rows: true });
    t.deepEqual(schemaDump(upgraded, { rows: true }), want);
    t.true(want.length > 100, `${want.length} lines compared`);
  } finally {
    upgraded.close();
    made.close();
  }
});

pgTest('PostgreSQL: chunkfs mkfs makes the schema from postgres/schema.sql word for word', async (t) => {
  const url = freshDb();
  await chunkfsOk(['mkfs', path.join(dir, 'mkfs-pg'), '--meta', url]);
  const fromFile = connectPg(freshDb());
  const made = connectPg(url);
  const v1 = connectPg(freshDb());
  try {
    fromFile.transaction(() => fromFile.exec(fs.readFileSync(SCHEMA_FILES.postgres, 'utf8')))();
    t.is(made.schemaVersion(), SCHEMA_VERSION);
    t.deepEqual(rawStoreSchema(made), rawStoreSchema(fromFile));
    makeV1(v1);
    upgradeStoreMeta(v1, crypto.randomUUID());
    // The check tells the two ways apart: PostgreSQL keeps function bodies as they ran.
    t.notDeepEqual(rawStoreSchema(v1), rawStoreSchema(fromFile));
  } finally {
    fromFile.close();
    made.close();
    v1.close();
  }
});

pgTest('PostgreSQL: a v1 store upgraded by postgres/migrations.ts ends with the schema and rows of a new one', (t) => {
  const url = freshDb();
  createMeta('', { engine: 'postgres', url }, crypto.randomUUID());
  const made = connectPg(url);
  const upgraded = connectPg(freshDb());
  try {
    makeV1(upgraded);
    t.is(upgraded.schemaVersion(), 1);
    upgradeStoreMeta(upgraded, crypto.randomUUID());
    t.is(upgraded.schemaVersion(), SCHEMA_VERSION);
    const want = schemaDump(made, { rows: true });
    t.deepEqual(schemaDump(upgraded, { rows: true }), want);
    t.true(want.length > 100, `${want.length} lines compared`);
  } finally {
    made.close();
    upgraded.close();
  }
});
