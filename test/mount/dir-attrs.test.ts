// Directory attributes answered in C (DESIGN §6, native/fuse3/attr_table.h): the kernel asks a
// directory's attributes again after every change in it, and the libfuse3 transport answers that
// GETATTR from a table JavaScript keeps current. Every change must still show at once in a stat,
// through the mount and through a second (bind) mount of it, also after `chunkfs inject` and heal:
// each step below makes the kernel drop the directory's attributes and ask again. The setxattr and
// the listing are changes no operation on the directory's entries puts back: without their
// revocations the table would answer the old ctime and atime. fuse-native has no table: it must
// show the same.
import test from 'ava';
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
const fixture = storeFixture(test, 'dir-attrs');
/** Changes in the directory, each followed by a stat of it: the GETATTRs the table should answer. */
const ROUNDS = 40;

let main = '';
let bind = '';
let port = 0;

const stat = async (p: string): Promise<St> => fsOk(['stat', p]) as Promise<St>;

/** Runs ops in a client of their own (the stats come from other processes), failing on any error. */
async function change(ops: ClientOp[]): Promise<void> {
  const results = await fsClient(ops);
  for (const [i, r] of results.entries()) if (r.err !== undefined) throw new Error(`${String(ops[i][0])}: ${r.err}`);
}

/** GETATTRs that reached JavaScript so far (the metrics count every op JavaScript answers). */
async function getattrsInJs(): Promise<number> {
  const r = await run('curl', ['-s', `http://127.0.0.1:${port}/metrics`]);
  const m = /chunkfs_fuse_op_duration_seconds_count\{op="getattr"\} (\d+)/.exec(r.stdout);
  return m === null ? 0 : Number(m[1]);
}

/** The same stat through the mount and through its bind. */
async function both(rel: string): Promise<St> {
  const a = await stat(path.join(main, rel));
  const b = await stat(path.join(bind, rel));
  if (JSON.stringify(a) !== JSON.stringify(b))
    throw new Error(`${rel}: the bind shows ${JSON.stringify(b)}, the mount ${JSON.stringify(a)}`);
  return a;
}

test.serial.before(async () => {
  const m = await fixture.mount(['-o', 'metrics=127.0.0.1:0']);
  port = Number(/metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(m.readyLine)![1]);
  main = m.mountpoint;
  bind = path.join(fixture.dir, 'bind');
  await fixture.mountAt(fixture.store, bind); // a second mount of a mounted store is a bind of it
  await change([
    ['mkdir', path.join(main, 'd')],
    ['mkdir', path.join(main, 'e')],
  ]);
});

test.serial('every change in a directory shows at once in its stat, through the mount and its bind', async (t) => {
  const d = (n: string) => path.join(main, 'd', n);
  const e = (n: string) => path.join(main, 'e', n);
  let before = await both('d');
  const moved = async (what: string, ops: ClientOp[], nlink: number): Promise<void> => {
    await change(ops);
    const after = await both('d');
    t.is(after.nlink, nlink, `nlink after ${what}`);
    t.true(after.mtime_ns > before.mtime_ns && after.ctime_ns > before.ctime_ns, `mtime and ctime move: ${what}`);
    before = after;
  };
  await moved('a create', [['writefile', d('f'), 'x']], 2);
  await moved('a mkdir', [['mkdir', d('s')]], 3);
  await moved('a rename in it', [['rename', d('f'), d('g')]], 3);
  await moved('a link into it', [['link', d('g'), d('h')]], 3);
  await moved('a symlink', [['symlink', 'g', d('l')]], 3);
  const sBefore = await both('d/s');
  const eBefore = await both('e');
  await moved('a directory moved out', [['rename', d('s'), e('s')]], 2);
  const eAfter = await both('e');
  t.is(eAfter.nlink, eBefore.nlink + 1, 'the new parent links the moved directory');
  t.true(eAfter.mtime_ns > eBefore.mtime_ns, 'the new parent changed');
  t.true((await both('e/s')).ctime_ns > sBefore.ctime_ns, 'the moved directory changed');
  await moved('an unlink', [['unlink', d('h')]], 2);
  await moved(
    'a rmdir elsewhere, then a mkdir',
    [
      ['rmdir', e('s')],
      ['mkdir', d('t')],
    ],
    3,
  );
  await moved('a rmdir', [['rmdir', d('t')]], 2);
  t.is((await both('e')).nlink, 2, 'the parent of a removed directory');

  // Changes of the directory itself, each after a change in it (the kernel asks its attributes anew).
  await change([['chmod', path.join(main, 'd'), 0o750]]);
  await change([['writefile', d('m'), 'm']]);
  t.is((await both('d')).mode & 0o7777, 0o750, 'mode after chmod');
  await change([['chown', path.join(main, 'd'), 4321, 8765]]);
  await change([['unlink', d('m')]]);
  const owned = await both('d');
  t.deepEqual([owned.uid, owned.gid], [4321, 8765], 'owner after chown');
  const when = 1_500_000_000_000_000_123;
  await change([['utime', path.join(main, 'd'), when, when]]);
  t.is((await both('d')).mtime_ns, when, 'mtime after utimensat');
  await change([['chmod', path.join(main, 'd'), 0o755]]);

  // A new ctime, with no entry added or removed: only the revocation makes it show.
  before = await both('d');
  await change([['setxattr', path.join(main, 'd'), 'user.k', 'v']]);
  t.true((await both('d')).ctime_ns > before.ctime_ns, 'ctime after setxattr');
  before = await both('d');
  await change([['removexattr', path.join(main, 'd'), 'user.k']]);
  t.true((await both('d')).ctime_ns > before.ctime_ns, 'ctime after removexattr');
  // relatime: a listing moves an atime not after mtime (fs/atime.ts).
  await change([['writefile', d('n'), 'n']]);
  before = await both('d');
  t.true(before.atime_ns <= before.mtime_ns);
  await change([['listdir', path.join(main, 'd')]]);
  t.true((await both('d')).atime_ns > before.atime_ns, 'atime after a listing');
});

test.serial('after inject and heal a directory shows what it is', async (t) => {
  const dir = path.join(main, 'd');
  await change([['writefile', path.join(dir, 'data'), 'y'.repeat(100_000)]]);
  const before = await both('d');
  const inject = await run(process.execPath, [CLI_JS, 'inject', 'eio', '1', '--count', '1', main]);
  t.is(inject.code, 0, inject.stderr);
  t.deepEqual(await both('d'), before, 'the same attributes after the kernel dropped its caches');
  await change([['truncate', path.join(bind, 'd', 'data'), 777]]);
  t.is((await both('d/data')).size, 777, 'a truncate through the bind shows in both');
  await change([['unlink', path.join(dir, 'data')]]);
  const after = await both('d');
  t.true(after.mtime_ns > before.mtime_ns, 'a change after inject shows');
  t.is((await run(process.execPath, [CLI_JS, 'inject', '--clear', main])).code, 0);
  const heal = await run(process.execPath, [CLI_JS, 'heal', main]);
  t.is(heal.code, 0, heal.stderr);
  t.is(await healDrained(main), 0);
  t.deepEqual(await both('d'), after, 'heal changes no attribute');
});

test.serial('the GETATTR after each change in a directory is answered without JavaScript (fuse3)', async (t) => {
  const dir = path.join(main, 'c');
  await change([['mkdir', dir]]);
  const before = await getattrsInJs();
  for (let i = 0; i < ROUNDS; i++) {
    // One client: the create makes the kernel drop the directory's attributes, the stat asks them.
    await change([
      ['writefile', path.join(dir, `f${i}`), 'z'],
      ['stat', dir],
    ]);
  }
  const inJs = (await getattrsInJs()) - before;
  if (FUSE3) t.true(inJs < ROUNDS / 4, `${inJs} of ${ROUNDS} GETATTRs reached JavaScript`);
  else t.true(inJs >= ROUNDS, `fuse-native answers each in JavaScript: ${inJs} of ${ROUNDS}`);
  t.is((await both('c')).mtime_ns, (await stat(dir)).mtime_ns);
});
