// `chunkfs mkfs` leaves nothing behind when it fails (docs/design.md §4 "mkfs"): a key file in a
// missing directory, a disk it cannot make, a PostgreSQL database that is not empty; each a one-line
// error naming the thing, no store directory, no disk directory or key file it made, and the rerun
// works. And `--meta` takes the connection strings libpq takes (store/meta/postgres/conninfo.ts).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NOBODY_UID, chunkfsCli, chunkfsOk, removeDir, tempDir } from '../helpers/mount';
import { pgTestFile } from '../helpers/pg-cluster';

let dir = '';
test.before(async () => {
  dir = await tempDir('mkfs');
});
test.after.always(async () => {
  if (dir !== '') await removeDir(dir);
});
const { pgTest, freshDb, cluster } = pgTestFile(test, 'mkfs');

/** Every path under root (relative, sorted): what a failed mkfs must not have changed. */
function tree(root: string): string[] {
  return fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).sort();
}

/** One line on stderr, no stack, no raw error class. */
function oneLine(t: import('ava').ExecutionContext, stderr: string): void {
  t.is(stderr.trim().split('\n').length, 1, stderr);
  t.notRegex(stderr, /\n\s+at |PgError|Error:/, stderr);
}

test.serial('--keyfile in a missing directory: one line naming it, nothing made, the rerun works', async (t) => {
  const base = path.join(dir, 'key');
  fs.mkdirSync(base);
  const r = await chunkfsCli(['mkfs', `${base}/store`, '--keyfile', `${base}/nodir/store.key`]);
  t.is(r.code, 1);
  t.regex(r.stderr, new RegExp(`${base}/nodir/store.key: directory ${base}/nodir does not exist`));
  oneLine(t, r.stderr);
  t.deepEqual(tree(base), []);
  fs.mkdirSync(`${base}/nodir`);
  await chunkfsOk(['mkfs', `${base}/store`, '--keyfile', `${base}/nodir/store.key`]);
  t.true(fs.existsSync(`${base}/store/chunkfs.json`));
  t.is(fs.statSync(`${base}/nodir/store.key`).size, 32);
  await chunkfsOk(['fsck', `${base}/store`], { env: { ...process.env, CHUNKFS_KEYFILE: `${base}/nodir/store.key` } });
});

test.serial(
  'a disk it cannot make: the store, the disks and the key file it made are gone; a disk that existed stays',
  async (t) => {
    // As nobody, so that a directory of root's refuses the last disk after the others were made.
    const base = path.join(dir, 'disk');
    fs.mkdirSync(`${base}/own/empty`, { recursive: true });
    fs.mkdirSync(`${base}/rootonly`);
    fs.chmodSync(`${base}/own/empty`, 0o700);
    for (const p of ['own', 'own/empty']) fs.chownSync(`${base}/${p}`, NOBODY_UID, NOBODY_UID);
    const args = [
      'mkfs',
      `${base}/own/store`,
      '--disk',
      `${base}/own/new/a/d0`,
      '--disk',
      `${base}/own/empty`,
      '--disk',
      'd2',
      '--disk',
      `${base}/rootonly/d3`,
      '--keyfile',
      `${base}/own/store.key`,
    ];
    const before = tree(base);
    const r = await chunkfsCli(args, { asUid: NOBODY_UID });
    t.is(r.code, 1);
    t.regex(r.stderr, new RegExp(`${base}/rootonly/d3: cannot make it a private disk directory \\(EACCES\\)`));
    oneLine(t, r.stderr);
    t.deepEqual(tree(base), before, 'nothing left: no store, no staging directory, no d0, no key file, no marker');
    fs.chownSync(`${base}/rootonly`, NOBODY_UID, NOBODY_UID);
    await chunkfsOk(args, { asUid: NOBODY_UID });
    t.true(fs.existsSync(`${base}/own/store/chunkfs.json`));
    t.deepEqual(
      fs.readdirSync(`${base}/own/store`).filter((n) => n.startsWith('.')),
      [],
      'no staging directory inside',
    );
    t.deepEqual(
      fs.readdirSync(`${base}/own`).filter((n) => n.includes('mkfs')),
      [],
      'none beside it',
    );
    t.true(fs.existsSync(`${base}/own/store/d2/chunkfs-disk.json`), 'a disk inside the store moved with it');
    t.true(fs.existsSync(`${base}/own/empty/chunkfs-disk.json`));
  },
);

test.serial('a disk under /proc (mkdir says ENOENT below a directory that exists): one line, no spin', async (t) => {
  const base = path.join(dir, 'proc');
  fs.mkdirSync(base);
  const args = [
    'mkfs',
    `${base}/store`,
    '--disk',
    '/proc/chunkfs-no-such/d0',
    '--disk',
    `${base}/d1`,
    '--disk',
    `${base}/d2`,
  ];
  const r = await chunkfsCli(args);
  t.is(r.code, 1);
  t.regex(r.stderr, /\/proc\/chunkfs-no-such\/d0: cannot make it a private disk directory \(ENOENT\)/);
  oneLine(t, r.stderr);
  t.deepEqual(tree(base), []);
});

test.serial('mkfs into an existing empty directory fills it; a failed one leaves it empty', async (t) => {
  const target = path.join(dir, 'existing');
  fs.mkdirSync(target, { mode: 0o755 });
  const bad = await chunkfsCli(['mkfs', target, '--keyfile', `${dir}/none/k`]);
  t.is(bad.code, 1);
  t.deepEqual(fs.readdirSync(target), []);
  await chunkfsOk(['mkfs', target, '--disks', '3']);
  t.is(fs.statSync(target).mode & 0o777, 0o700);
  t.deepEqual(fs.readdirSync(target).sort(), [
    'bitrot.key',
    'chunkfs.json',
    'data.key',
    'disks',
    'intent.log',
    'meta.db',
  ]);
  await chunkfsOk(['fsck', target]);
});

pgTest(
  'a database that is not empty is refused, naming what it holds; nothing is made; an empty one works',
  async (t) => {
    const url = freshDb();
    const name = new URL(url).pathname.slice(1);
    for (const [sql, found] of [
      ['CREATE TABLE foo(x int)', 'foo'],
      ['CREATE TABLE inodes(x text)', 'foo, inodes'],
    ] as const) {
      cluster().query(name, sql);
      const r = await chunkfsCli(['mkfs', `${dir}/pgstore`, '--meta', url]);
      t.is(r.code, 1);
      t.regex(
        r.stderr,
        new RegExp(`database ${name} holds tables ${found} \\(schema public\\): make a new store on an empty database`),
      );
      oneLine(t, r.stderr);
      t.false(fs.existsSync(`${dir}/pgstore`));
      t.deepEqual(
        fs.readdirSync(dir).filter((n) => n.includes('pgstore')),
        [],
      );
    }
    t.is(cluster().query(name, 'SELECT count(*) FROM inodes').trim(), '0', 'the unrelated table is untouched');
    const empty = freshDb();
    await chunkfsOk(['mkfs', `${dir}/pgstore`, '--disks', '3', '--meta', empty]);
    const again = await chunkfsCli(['mkfs', `${dir}/pgstore2`, '--disks', '3', '--meta', empty]);
    t.is(again.code, 1);
    t.regex(
      again.stderr,
      /already holds chunkfs metadata \(schema version \d+\); make a new store on an empty database/,
    );
    t.false(fs.existsSync(`${dir}/pgstore2`));
  },
);

pgTest('a failed mkfs on PostgreSQL leaves the database empty: the rerun on it works', async (t) => {
  const url = freshDb();
  const r = await chunkfsCli(['mkfs', `${dir}/pgfail`, '--disks', '3', '--keyfile', `${dir}/none/k`, '--meta', url]);
  t.is(r.code, 1);
  await chunkfsOk(['mkfs', `${dir}/pgfail`, '--disks', '3', '--meta', url]);
  await chunkfsOk(['fsck', `${dir}/pgfail`]);
});

pgTest('--meta takes the connection strings libpq takes; never a password', async (t) => {
  const socket = cluster().socketDir;
  const forms: Array<(db: string) => string> = [
    (db) => `postgres://postgres@/${db}?host=${socket}`, // empty host, socket directory in the query
    (db) => `postgresql://postgres@${encodeURIComponent(socket)}/${db}`, // percent-encoded socket as the host
    (db) =>
      `postgresql://postgres@${encodeURIComponent(socket)}:5432,${encodeURIComponent(socket)}:5432/${db}?target_session_attrs=any`,
    (db) => `host=${socket} dbname=${db} user=postgres`, // keyword=value pairs
    (db) => `host='${socket}' port = 5432 dbname='${db}' user=postgres application_name='chunkfs test'`,
  ];
  for (const [i, form] of forms.entries()) {
    const db = new URL(freshDb()).pathname.slice(1);
    const store = `${dir}/forms${i}`;
    await chunkfsOk(['mkfs', store, '--disks', '3', '--meta', form(db)]);
    t.is(JSON.parse(fs.readFileSync(`${store}/chunkfs.json`, 'utf8')).meta.url, form(db), 'recorded as given');
    t.regex(await chunkfsOk(['status', store]), /metadata: postgres /);
  }
  for (const bad of [`postgres://postgres:secret@/x?host=${socket}`, `host=${socket} dbname=x password='se cret'`]) {
    const r = await chunkfsCli(['mkfs', `${dir}/pw`, '--meta', bad]);
    t.is(r.code, 1);
    t.regex(r.stderr, /holds a password/);
    t.notRegex(r.stderr, /secret|se cret/);
    t.false(fs.existsSync(`${dir}/pw`));
  }
});

test.serial('a bad --meta is one line naming it (no password shown); no store, no disk directory made', async (t) => {
  const base = path.join(dir, 'badmeta');
  fs.mkdirSync(base);
  const cases: Array<[string, RegExp]> = [
    ['postgress://u@localhost/db', /'postgress:\/\/u@localhost\/db': scheme 'postgress:' is not postgres:/],
    ['mysql://u@localhost/db', /'mysql:\/\/u@localhost\/db': scheme 'mysql:' is not postgres:/],
    ['sqlite:/x', /'sqlite:\/x': SQLite takes no location: 'sqlite' alone names it/],
    ['sqlite:///srv/meta.db', /'sqlite:\/\/\/srv\/meta.db': SQLite takes no location/],
    ['SQLite', /'SQLite': SQLite takes no location/],
    ['postgres://u:secret@localhost/db', /'postgres:\/\/u:\*\*\*@localhost\/db': holds a password/],
    ['postgres://u@localhost/db?password=secret', /'postgres:\/\/u@localhost\/db\?password=\*\*\*': holds a password/],
    ['host=/tmp dbname=db password=secret', /'host=\/tmp dbname=db password=\*\*\*': holds a password/],
    ['postgres://u@localhost', /'postgres:\/\/u@localhost': names no database/],
    ['postgres://u@[::1/db', /'postgres:\/\/u@\[::1\/db': invalid host/],
    ['localhost/db', /'localhost\/db': not a PostgreSQL connection string/],
    ['', /'': expected 1\.\.2048 characters/],
    // Port 1 on the loopback: nothing listens (a host that does not answer waits for libpq's connect_timeout).
    [
      'postgres://u@127.0.0.1:1/db',
      /postgres:\/\/u@127\.0\.0\.1:1\/db: cannot connect to the PostgreSQL metadata database: .*Connection refused/,
    ],
    [
      'postgres://u@no-such-host.invalid/db',
      /postgres:\/\/u@no-such-host\.invalid\/db: cannot connect to the PostgreSQL metadata/,
    ],
  ];
  for (const [meta, said] of cases) {
    const r = await chunkfsCli([
      'mkfs',
      `${base}/store`,
      '--disk',
      `${base}/d/0`,
      '--disk',
      `${base}/d/1`,
      '--meta',
      meta,
    ]);
    t.is(r.code, 1, meta);
    t.regex(r.stderr, new RegExp(`^chunkfs mkfs: (metadata connection string )?${said.source}`), meta);
    oneLine(t, r.stderr);
    t.notRegex(r.stderr + r.stdout, /secret/, meta);
    t.deepEqual(tree(base), [], `${meta}: nothing made`);
  }
});

test.serial('a store or disk path that is a file, or under one: one line naming the file; nothing made', async (t) => {
  const base = path.join(dir, 'afile');
  fs.mkdirSync(base);
  fs.writeFileSync(`${base}/f`, 'x');
  const disks = ['--disk', `${base}/d1`, '--disk', `${base}/d2`];
  const cases: Array<[string[], RegExp]> = [
    [[`${base}/f`], new RegExp(`^chunkfs mkfs: ${base}/f: is a file, not a store directory\\n$`)],
    [
      [`${base}/f/a/store`],
      new RegExp(`^chunkfs mkfs: ${base}/f/a/store: cannot be a store directory: ${base}/f is a file, not a dir`),
    ],
    [
      [`${base}/store`, '--disk', `${base}/f`, ...disks],
      new RegExp(`^chunkfs mkfs: ${base}/f: is a file, not a disk directory\\n$`),
    ],
    [
      [`${base}/store`, '--disk', `${base}/f/d0`, ...disks],
      new RegExp(`^chunkfs mkfs: ${base}/f/d0: cannot be a disk directory: ${base}/f is a file, not a directory\\n$`),
    ],
  ];
  for (const [args, said] of cases) {
    const r = await chunkfsCli(['mkfs', ...args]);
    t.is(r.code, 1, args.join(' '));
    t.regex(r.stderr, said);
    oneLine(t, r.stderr);
    t.deepEqual(tree(base), ['f'], `${args.join(' ')}: nothing made`);
  }
});

test.serial(
  'a command line that cannot run: one line naming what is wrong and where the usage is, exit 2',
  async (t) => {
    const cases: Array<[string[], string]> = [
      [['mkfs', `${dir}/u`, '--frob'], "chunkfs mkfs: unknown option '--frob'; 'chunkfs mkfs --help' shows the usage"],
      [['mount'], "chunkfs mount: missing <mountpoint>; 'chunkfs mount --help' shows the usage"],
      [['fsck', '--repiar'], "chunkfs fsck: unknown option '--repiar'; 'chunkfs fsck --help' shows the usage"],
      [['meta', 'move'], "chunkfs meta: unknown action 'move' (expected copy); 'chunkfs meta --help' shows the usage"],
      [['mkfz'], "chunkfs: unknown command 'mkfz' (expected one of: "],
    ];
    for (const [args, said] of cases) {
      const r = await chunkfsCli(args);
      t.is(r.code, 2, args.join(' '));
      t.true(r.stderr.startsWith(said), r.stderr);
      oneLine(t, r.stderr);
      t.is(r.stdout, '');
    }
    t.false(fs.existsSync(`${dir}/u`));
  },
);

test.serial(
  'a key file outside the store that others may read is refused at mkfs and at open; 0600 works',
  async (t) => {
    const base = path.join(dir, 'loosekey');
    fs.mkdirSync(base);
    const key = `${base}/store.key`;
    fs.writeFileSync(key, Buffer.alloc(32, 7), { mode: 0o644 });
    fs.chmodSync(key, 0o644);
    const said = (mode: string): RegExp =>
      new RegExp(
        `store key file ${key} is open to others \\(mode ${mode}\\); make it owner-only \\(chmod 600 ${key}\\)`,
      );
    const args = ['mkfs', `${base}/store`, '--disks', '3', '--layout', 'replica:3,aes256gcm', '--keyfile', key];
    const r = await chunkfsCli(args);
    t.is(r.code, 1);
    t.regex(r.stderr, said('0644'));
    oneLine(t, r.stderr);
    t.deepEqual(tree(base), ['store.key'], 'nothing made');
    fs.chmodSync(key, 0o600);
    await chunkfsOk(args);
    fs.chmodSync(key, 0o620);
    const env = { env: { ...process.env, CHUNKFS_KEYFILE: key } };
    const open = await chunkfsCli(['fsck', `${base}/store`], env);
    t.is(open.code, 1);
    t.regex(open.stderr, said('0620'));
    oneLine(t, open.stderr);
    fs.chmodSync(key, 0o600);
    await chunkfsOk(['fsck', `${base}/store`], env);
  },
);

test.serial(
  'a layout the disks cannot hold names the store mkfs would make, not a chunkfs.json that is not there',
  async (t) => {
    const base = path.join(dir, 'layout');
    fs.mkdirSync(base);
    for (const [layout, said] of [
      ['ec:4+2', 'layout ec:4+2 needs 6 disks, only 3 exist'],
      ['replica:0', "invalid layout 'replica:0'"],
    ]) {
      const r = await chunkfsCli(['mkfs', `${base}/store`, '--disks', '3', '--layout', layout]);
      t.is(r.code, 1);
      t.true(r.stderr.startsWith(`chunkfs mkfs: ${base}/store: ${said}`), r.stderr);
      oneLine(t, r.stderr);
      t.deepEqual(tree(base), []);
    }
  },
);
