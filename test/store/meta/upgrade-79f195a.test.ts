// A store made by the build 79f195a (testdata/store-79f195a/, README there: schema v8, the
// config naming a store id its metadata does not, on PostgreSQL a lease without an epoch) opens
// with this build on SQLite and on PostgreSQL (its pg_dump loaded into a throwaway cluster): the
// mount upgrades it (DESIGN §9 "Engines": the engine's migrations), every file reads back byte for
// byte through the mount, with its xattrs, layout, symlink and hard link, and fsck finds it clean.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SCHEMA_VERSION, STORE_ID_VERSION } from '../../../store/meta/meta';
import { metaStoreId } from '../../../store/meta/store-identity';
import { openDb } from '../../../store/meta/sqlite/database';
import { connectPg } from '../../../store/meta/postgres/connect';
import { chunkfsOk, mountChunkfs, removeDir, tempDir } from '../../helpers/mount';
import { PG_BIN_DIR, pgTestFile } from '../../helpers/pg-cluster';
import { openStoreMetaOf, storeUuidOf } from '../../helpers/pg-meta';
import { TESTDATA } from '../../helpers/root';

const OLD_STORE = path.join(TESTDATA, 'store-79f195a');
/** The schema version 79f195a left. */
const OLD_SCHEMA_VERSION = 8;
/** How big a file may be read here (the largest is 20,000 bytes). */
const FILE_BYTES_MAX = 1 << 20;

/** sha256 of each file as 79f195a wrote it through its mount (sha256sum there; README). */
const EXPECTED: Record<'sqlite' | 'postgres', Record<string, string>> = {
  sqlite: {
    'replica.bin': 'e7160b4cd4cf464a642639b88775c135257081a0be783f7aedeac712027e08af',
    'hard.bin': 'e7160b4cd4cf464a642639b88775c135257081a0be783f7aedeac712027e08af',
    'ec/ec.bin': '6034c1b51315f086f9cea9d3023df29c7f7a0459793cc7890ad80f05eb9eaa91',
    'small.txt': '064b1fd1f352f7d7bb02995a358b0274b552e0126d6e24a04687343f2462a382',
    'ec/small-ec.bin': '61b2fc821ab5dd017cc21df81cd5128abcfdca6af55e62b3313a677026a980e3',
    'dir/sub/deep.txt': '483e70361967a64d9adc37249341a53f7a1bb88d24204e77bdf621b1927aa451',
  },
  postgres: {
    'replica.bin': '2630526ce3e336ac07a551828e55339d4e473e6a0953c668ac68770e0f0fa33e',
    'hard.bin': '2630526ce3e336ac07a551828e55339d4e473e6a0953c668ac68770e0f0fa33e',
    'ec/ec.bin': 'd4bbe4d819c46479bc1a70eeb291cfed49e9df3cfd515c10b709a426004cd56d',
    'small.txt': '064b1fd1f352f7d7bb02995a358b0274b552e0126d6e24a04687343f2462a382',
    'ec/small-ec.bin': '002ca16ac78dc93ea49f38dc179e08cfb250cdff41b6029b4d9008f40003a874',
    'dir/sub/deep.txt': '483e70361967a64d9adc37249341a53f7a1bb88d24204e77bdf621b1927aa451',
  },
};

const { pgTest, freshDb } = pgTestFile(test, 'upgrade79');

let dir = '';
test.before(async () => {
  dir = await tempDir('upgrade79');
});
test.after.always(async () => {
  if (dir !== '') await removeDir(dir);
});

function sha256(file: string): string {
  const bytes = fs.readFileSync(file);
  if (bytes.length > FILE_BYTES_MAX) throw new Error(`${file}: ${bytes.length} bytes, more than this store holds`);
  return crypto.createHash('sha256').update(bytes).digest('hex');
}

function xattr(file: string, name: string): string {
  return execFileSync('getfattr', ['--absolute-names', '--only-values', '-n', name, file], { encoding: 'utf8' });
}

/**
 * The metadata's schema version and the store id it names (null: none yet), read offline; old: as it
 * is, without the open's check of its version (which refuses an old schema read-only).
 */
function metaState(store: string, old = false): { version: number; id: string | null } {
  const url = (JSON.parse(fs.readFileSync(path.join(store, 'chunkfs.json'), 'utf8')) as { meta?: { url: string } }).meta
    ?.url;
  const db = !old
    ? openStoreMetaOf(store, true)
    : url === undefined
      ? openDb(path.join(store, 'meta.db'), true)
      : connectPg(url);
  try {
    return { version: db.schemaVersion(), id: metaStoreId(db, STORE_ID_VERSION) };
  } finally {
    db.close();
  }
}

/** Mount the copy with this build (the upgrade), read everything back, unmount, fsck. */
async function upgradeAndRead(t: import('ava').ExecutionContext, store: string, engine: 'sqlite' | 'postgres') {
  const mnt = path.join(path.dirname(store), 'mnt');
  fs.mkdirSync(mnt);
  const m = await mountChunkfs(store, mnt);
  try {
    for (const [name, sum] of Object.entries(EXPECTED[engine])) t.is(sha256(path.join(mnt, name)), sum, name);
    t.is(fs.readlinkSync(path.join(mnt, 'link')), 'replica.bin');
    const a = fs.statSync(path.join(mnt, 'replica.bin'));
    const b = fs.statSync(path.join(mnt, 'hard.bin'));
    t.is(a.ino, b.ino, 'hard.bin is replica.bin');
    t.is(a.nlink, 2);
    t.is(xattr(path.join(mnt, 'replica.bin'), 'user.note'), 'kept since 79f195a');
    t.is(xattr(path.join(mnt, 'ec/ec.bin'), 'user.chunkfs.layout'), 'ec:4+2');
    t.is(xattr(path.join(mnt, 'replica.bin'), 'user.chunkfs.layout'), 'replica:3');
    t.deepEqual(fs.readdirSync(mnt).sort(), ['dir', 'ec', 'hard.bin', 'link', 'replica.bin', 'small.txt']);
  } finally {
    await m.stop();
  }
  t.deepEqual(metaState(store), { version: SCHEMA_VERSION, id: storeUuidOf(store) }, 'upgraded, naming the store');
  const out = await chunkfsOk(['fsck', store]);
  t.regex(out, / 0 missing, 0 bad headers, 0 unreadable, 0 leaked shard file\(s\)/);
  t.regex(out, / 0 unlinked inode\(s\), 0 unaccounted inode\(s\), 0 container row\(s\) without an inode/);
}

test.serial('SQLite: a store made by 79f195a opens, upgrades, reads back byte for byte, fsck clean', async (t) => {
  const store = path.join(dir, 'sqlite', 'store');
  fs.cpSync(path.join(OLD_STORE, 'sqlite'), store, { recursive: true });
  t.deepEqual(metaState(store, true), { version: OLD_SCHEMA_VERSION, id: null }, 'as 79f195a left it');
  await upgradeAndRead(t, store, 'sqlite');
});

pgTest(
  'PostgreSQL: a store made by 79f195a (its pg_dump loaded) opens, upgrades, reads back, fsck clean',
  async (t) => {
    const store = path.join(dir, 'postgres', 'store');
    fs.cpSync(path.join(OLD_STORE, 'postgres'), store, {
      recursive: true,
      filter: (src) => path.basename(src) !== 'meta.sql',
    });
    const url = freshDb();
    const dump = fs.readFileSync(path.join(OLD_STORE, 'postgres', 'meta.sql'), 'utf8');
    execFileSync(
      'runuser',
      ['-u', 'postgres', '--', path.join(PG_BIN_DIR, 'psql'), '-q', '-v', 'ON_ERROR_STOP=1', url],
      {
        input: dump,
        stdio: ['pipe', 'ignore', 'pipe'],
      },
    );
    // The recorded connection string named 79f195a's own throwaway cluster: this one's database now.
    const configFile = path.join(store, 'chunkfs.json');
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as { meta: { engine: string; url: string } };
    t.is(config.meta.engine, 'postgres');
    config.meta.url = url;
    fs.writeFileSync(configFile, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
    t.deepEqual(metaState(store, true), { version: OLD_SCHEMA_VERSION, id: null }, 'as 79f195a left it');
    await upgradeAndRead(t, store, 'postgres');
  },
);
