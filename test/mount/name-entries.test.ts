// Names answered in C (DESIGN §6, native/fuse3/entry_table.h): when the kernel dropped a name's
// dentry it asks the name again (LOOKUP), and the libfuse3 transport answers from a table of names
// and entries JavaScript keeps current. Each step below fills the table (a LOOKUP answered by
// JavaScript), changes the name or its inode, makes the kernel drop its dentries (drop_caches), and
// looks again through the mount and through a second (bind) mount of it: without the table's
// revocations the old name, inode or attributes would be answered. Also: a lookup answered in C
// keeps an unlinked file's data while the kernel holds it (the lookup counts), and `chunkfs inject`
// and heal leave nothing stale. fuse-native has no table and must show the same (but for the
// unlinked file: it is path-based and counts no lookups).
import test from 'ava';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import {
  CLI_JS,
  ClientOp,
  ClientStat as St,
  TRANSPORT,
  fsClient,
  fsOk,
  healDrained,
  run,
  storeFixture,
} from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
/** The table answers: libfuse3, not on PostgreSQL (operations answered once sent: fs/fuse/entry-table.ts). */
const TABLE = FUSE3 && process.env.CHUNKFS_TEST_META !== 'postgres';
/** fuse-native is path-based: an unlinked file has no path to stat through (no lookup counts there). */
const fuse3Only = FUSE3 ? test.serial : test.serial.skip;
const fixture = storeFixture(test, 'name-entries');
/** Names looked up again after the kernel dropped them, for the count of LOOKUPs reaching JavaScript. */
const ROUNDS = 40;

let main = '';
let bind = '';
let port = 0;

async function change(ops: ClientOp[]): Promise<void> {
  const results = await fsClient(ops);
  for (const [i, r] of results.entries()) if (r.err !== undefined) throw new Error(`${String(ops[i][0])}: ${r.err}`);
}

/** The kernel drops every unused dentry and inode: the next walk of a name asks it again. */
async function dropDentries(): Promise<void> {
  await fsp.writeFile('/proc/sys/vm/drop_caches', '2');
}

/** LOOKUPs that reached JavaScript so far (the metrics count every op JavaScript answers). */
async function lookupsInJs(): Promise<number> {
  const r = await run('curl', ['-s', `http://127.0.0.1:${port}/metrics`]);
  const m = /chunkfs_fuse_op_duration_seconds_count\{op="lookup"\} (\d+)/.exec(r.stdout);
  return m === null ? 0 : Number(m[1]);
}

/** The stat of rel through the mount and through its bind (the same), or the errno name of both. */
async function both(rel: string): Promise<St | string> {
  const [a] = await fsClient([['stat', path.join(main, rel)]]);
  const [b] = await fsClient([['stat', path.join(bind, rel)]]);
  const ja = JSON.stringify(a.ok ?? a.err);
  if (ja !== JSON.stringify(b.ok ?? b.err))
    throw new Error(`${rel}: the bind shows ${JSON.stringify(b)}, the mount ${ja}`);
  return (a.ok as St | undefined) ?? a.err!;
}

/** Fills the table with rel (a cold LOOKUP), runs ops, drops the dentries, then looks again. */
async function afterChange(rel: string, ops: ClientOp[]): Promise<St | string> {
  await dropDentries();
  await both(rel);
  await change(ops);
  await dropDentries();
  return both(rel);
}

const st = (v: St | string): St => {
  if (typeof v === 'string') throw new Error(`expected a stat, got ${v}`);
  return v;
};

test.serial.before(async () => {
  const m = await fixture.mount(['-o', 'metrics=127.0.0.1:0']);
  port = Number(/metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(m.readyLine)![1]);
  main = m.mountpoint;
  bind = path.join(fixture.dir, 'bind');
  await fixture.mountAt(fixture.store, bind); // a second mount of a mounted store is a bind of it
  await change([['mkdir', path.join(main, 'd')]]);
});

test.serial('a name the kernel dropped is answered without JavaScript (fuse3)', async (t) => {
  const ops: ClientOp[] = [['mkdir', path.join(main, 'n')]];
  for (let i = 0; i < ROUNDS; i++) ops.push(['writefile', path.join(main, 'n', `f${i}`), `v${i}`]);
  await change(ops);
  const stats: ClientOp[] = [];
  for (let i = 0; i < ROUNDS; i++) stats.push(['stat', path.join(main, 'n', `f${i}`)]);
  await dropDentries();
  await change(stats); // answered by JavaScript: fills the table
  await dropDentries();
  const before = await lookupsInJs();
  const again = await fsClient(stats);
  const inJs = (await lookupsInJs()) - before;
  for (const [i, r] of again.entries()) t.is((r.ok as St).size, `v${i}`.length);
  if (TABLE) t.true(inJs < ROUNDS / 4, `${inJs} of ${ROUNDS} LOOKUPs reached JavaScript`);
  else if (FUSE3) t.true(inJs >= ROUNDS, `no table on PostgreSQL: ${inJs} of ${ROUNDS} in JavaScript`);
  else t.pass('fuse-native: path-based, no LOOKUP');
});

test.serial('owner, mode and times set while the file is open (as tar does) show after its close', async (t) => {
  const f = path.join(main, 'd', 'tarred');
  const mtimeNs = 1_600_000_000_123_456_789;
  await change([
    ['open', 'h', f, ['creat', 'wronly', 'excl'], 0o644],
    ['write', 'h', 'bytes'],
    ['chown', f, 1234, 5678],
    ['chmod', f, 0o600],
    ['utime', f, mtimeNs, mtimeNs],
    ['close', 'h'],
  ]);
  for (let round = 0; round < 2; round++) {
    // Its release (after close returned) puts its entry: the second look may be answered from it.
    await dropDentries();
    const s = st(await both('d/tarred'));
    t.like(s, { mode: 0o100600, uid: 1234, gid: 5678, size: 5, mtime_ns: mtimeNs }, `look ${round}`);
    t.true(s.blocks > 0, 'its bytes count in st_blocks');
  }
});

test.serial('every change of a name or its inode shows after the kernel dropped it', async (t) => {
  const d = (n: string) => path.join(main, 'd', n);
  await change([['writefile', d('f'), 'abc']]);
  t.is(st(await afterChange('d/f', [['chmod', d('f'), 0o600]])).mode & 0o7777, 0o600, 'chmod');
  const owned = st(await afterChange('d/f', [['chown', d('f'), 4321, 8765]]));
  t.deepEqual([owned.uid, owned.gid], [4321, 8765], 'chown');
  const when = 1_500_000_000_000_000_123;
  t.is(st(await afterChange('d/f', [['utime', d('f'), when, when]])).mtime_ns, when, 'utimensat');
  const grown = st(
    await afterChange('d/f', [
      ['open', 'w', d('f'), ['wronly', 'append']],
      ['write', 'w', 'defg'],
      ['close', 'w'],
    ]),
  );
  t.is(grown.size, 7, 'an append');
  t.true(grown.mtime_ns > when, 'mtime after the append');
  t.is(st(await afterChange('d/f', [['truncate', d('f'), 2]])).size, 2, 'truncate');
  const before = st(await both('d/f'));
  t.true(st(await afterChange('d/f', [['setxattr', d('f'), 'user.k', 'v']])).ctime_ns > before.ctime_ns, 'setxattr');
  t.is(st(await afterChange('d/f', [['link', d('f'), d('l')]])).nlink, 2, 'a link');
  // relatime: a read moves an atime not after mtime (fs/atime.ts).
  await change([['writefile', d('r'), 'r']]);
  const unread = st(await both('d/r'));
  t.true(st(await afterChange('d/r', [['readfile', d('r')]])).atime_ns > unread.atime_ns, 'atime after a read');

  t.is(await afterChange('d/f', [['rename', d('f'), d('g')]]), 'ENOENT', 'the old name after a rename');
  t.is(st(await both('d/g')).ino, before.ino, 'the new name');
  t.is(await afterChange('d/g', [['unlink', d('g')]]), 'ENOENT', 'an unlinked name');
  t.is(st(await both('d/l')).nlink, 1, 'the other link of an unlinked name');
  await change([['writefile', d('x'), 'xx']]);
  const x = st(await both('d/x'));
  t.is(st(await afterChange('d/l', [['rename', d('x'), d('l')]])).ino, x.ino, 'a name renamed over');
  t.is(await both('d/x'), 'ENOENT');
  const dir = st(
    await afterChange('d/l', [
      ['unlink', d('l')],
      ['mkdir', d('l')],
    ]),
  );
  t.is(dir.mode & 0o170000, 0o040000, 'a name made again as a directory');
  t.is(await afterChange('d/l', [['rmdir', d('l')]]), 'ENOENT', 'a removed directory');
});

fuse3Only('a name answered in C keeps an unlinked file alive while the kernel holds it', async (t) => {
  const f = path.join(main, 'd', 'held');
  await change([['writefile', f, 'held bytes']]);
  await dropDentries();
  await both('d/held'); // fills the table
  await dropDentries(); // the kernel forgets the inode: its only reference will be the next lookup's
  const r = await fsClient([
    ['opath', 'p', f], // a LOOKUP answered in C on the libfuse3 transport
    ['unlink', f],
    ['fstat', 'p'],
  ]);
  t.is(r[1].err, undefined);
  t.is(r[2].err, undefined, 'fstat of the O_PATH descriptor after the unlink');
  t.is((r[2].ok as St).nlink, 0);
  t.is((r[2].ok as St).size, 'held bytes'.length);
});

test.serial('after inject and heal a name shows what it is', async (t) => {
  const f = path.join(main, 'd', 'data');
  await change([['writefile', f, 'y'.repeat(100_000)]]);
  await dropDentries();
  const before = st(await both('d/data'));
  const inject = await run(process.execPath, [CLI_JS, 'inject', 'eio', '1', '--count', '1', main]);
  t.is(inject.code, 0, inject.stderr);
  await change([['truncate', path.join(bind, 'd', 'data'), 777]]);
  await dropDentries();
  t.is(st(await both('d/data')).size, 777, 'a truncate through the bind after inject');
  t.is((await run(process.execPath, [CLI_JS, 'inject', '--clear', main])).code, 0);
  const heal = await run(process.execPath, [CLI_JS, 'heal', main]);
  t.is(heal.code, 0, heal.stderr);
  t.is(await healDrained(main), 0);
  await dropDentries();
  const after = st(await both('d/data'));
  t.is(after.ino, before.ino);
  t.is(after.size, 777, 'heal changes no attribute');
  t.is((await fsOk(['readfile', f])).len, 777);
});

test.serial('in a directory this mount made, a missing name is answered without JavaScript (fuse3)', async (t) => {
  const dir = path.join(main, 'made');
  await change([['mkdir', dir]]);
  const looks: ClientOp[] = [];
  for (let i = 0; i < ROUNDS; i++) looks.push(['stat', path.join(dir, `absent${i}`)]);
  const before = await lookupsInJs();
  const r = await fsClient(looks);
  const inJs = (await lookupsInJs()) - before;
  for (const x of r) t.is(x.err, 'ENOENT');
  if (TABLE) t.true(inJs < ROUNDS / 4, `${inJs} of ${ROUNDS} LOOKUPs reached JavaScript`);
  else if (FUSE3) t.true(inJs >= ROUNDS, `no table on PostgreSQL: ${inJs} of ${ROUNDS} in JavaScript`);
  else t.pass('fuse-native: path-based, no LOOKUP');
});

test.serial('in a directory this mount made, every change of a name shows, missing or there', async (t) => {
  const m = (n: string) => path.join(main, 'm2', n);
  await change([['mkdir', path.join(main, 'm2')]]);
  const there = async (rel: string, ops: ClientOp[]): Promise<St | string> => {
    await change(ops);
    await dropDentries();
    return both(`m2/${rel}`);
  };
  t.is(await both('m2/a'), 'ENOENT');
  t.is(st(await there('a', [['writefile', m('a'), 'a']])).size, 1, 'a created name');
  t.is(await there('a', [['rename', m('a'), m('b')]]), 'ENOENT', 'the old name of a rename');
  t.is(st(await both('m2/b')).size, 1, 'its new name');
  t.is(st(await there('c', [['symlink', 'b', m('c')]])).size, 1, 'a symlink (stat follows it)');
  t.is(st(await there('l', [['link', m('b'), m('l')]])).nlink, 2, 'a link');
  t.is(st(await there('n', [['mknod', m('n'), 0o010644]])).mode & 0o170000, 0o010000, 'a FIFO');
  t.is(st(await there('s', [['mkdir', m('s')]])).mode & 0o170000, 0o040000, 'a directory');
  await change([['writefile', m('x'), 'xyz']]);
  if (FUSE3) {
    // libfuse 2 (fuse-native) passes no rename flags.
    const exchanged = st(await there('x', [['renameat2', m('x'), m('b'), ['exchange']]]));
    t.is(exchanged.size, 1, 'an exchanged name');
    t.is(st(await both('m2/b')).size, 3, 'the other exchanged name');
  }
  t.is(await there('x', [['unlink', m('x')]]), 'ENOENT', 'an unlinked name');
  t.is(await there('s', [['rmdir', m('s')]]), 'ENOENT', 'a removed directory');
  t.is(st(await there('b', [['rename', m('b'), m('b')]])).size, FUSE3 ? 3 : 1, 'a name renamed onto itself');
  t.is(st(await both('m2/l')).nlink, FUSE3 ? 1 : 2, 'the link of the inode the exchange moved to x');
});
