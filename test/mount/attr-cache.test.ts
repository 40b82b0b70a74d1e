// The kernel keeps attributes and names for 30 s (fs/fuse/fuse3.ts CACHE_TIMEOUT_S, DESIGN §6).
// Every change made through the mount must still show at once in a stat by another process that had
// the old attributes cached: each step stats in one client (caching), changes in a second, stats
// again in a third.
import test from 'ava';
import { ClientOp, ClientStat as St, fsClient, fsErr, fsOk, sharedMount } from '../helpers/mount';

const shared = sharedMount(test, 'attr-cache'); // libfuse3 (30 s) or fuse-native (no attribute cache)

const stat = async (rel: string): Promise<St> => fsOk(['stat', shared.path(rel)]) as Promise<St>;

/** Cache rel's attributes, run the change in its own client, and return the attributes before and after. */
async function changed(rel: string, ops: ClientOp[]): Promise<{ before: St; after: St }> {
  const before = await stat(rel);
  const results = await fsClient(ops);
  for (const [i, r] of results.entries()) if (r.err !== undefined) throw new Error(`${String(ops[i][0])}: ${r.err}`);
  return { before, after: await stat(rel) };
}

test.serial(
  'a stat right after a change by another process shows it: write, truncate, chmod, chown, times, links, rename, read',
  async (t) => {
    const f = shared.path('f');
    await fsOk(['writefile', f, 'x'.repeat(10)]);
    let r = await changed('f', [
      ['open', 'w', f, ['wronly']],
      ['pwrite', 'w', 100, 'y'.repeat(5000)],
      ['close', 'w'],
    ]);
    t.is(r.after.size, 5100, 'size after a write');
    t.true(r.after.mtime_ns > r.before.mtime_ns || r.after.mtime_ns === r.before.mtime_ns, 'mtime never goes back');
    t.true(r.after.blocks > 0, 'blocks after a write');

    r = await changed('f', [['truncate', f, 100]]);
    t.is(r.after.size, 100, 'size after truncate');

    r = await changed('f', [['chmod', f, 0o600]]);
    t.is(r.after.mode & 0o7777, 0o600, 'mode after chmod');
    t.true(r.after.ctime_ns >= r.before.ctime_ns);

    r = await changed('f', [['chown', f, 1234, 5678]]);
    t.deepEqual([r.after.uid, r.after.gid], [1234, 5678], 'owner after chown');

    const when = 1_600_000_000_123_456_789;
    r = await changed('f', [['utime', f, when, when]]);
    t.is(r.after.mtime_ns, when, 'mtime after utimensat');

    r = await changed('f', [['link', f, shared.path('g')]]);
    t.is(r.after.nlink, 2, 'nlink after link by another name');
    r = await changed('f', [['unlink', shared.path('g')]]);
    t.is(r.after.nlink, 1, 'nlink after that name is unlinked');

    // relatime: atime not after mtime moves on the next read (fs/atime.ts), and a cached stat must show it.
    r = await changed('f', [['readfile', f]]);
    t.true(r.after.atime_ns > r.before.atime_ns, 'atime after a read');

    const ino = (await stat('f')).ino;
    await fsOk(['writefile', shared.path('other'), 'o']);
    r = await changed('other', [['rename', f, shared.path('other')]]);
    t.is(r.after.ino, ino, 'a name renamed over shows the new inode');
    t.is(await fsErr(['stat', f]), 'ENOENT', 'the old name is gone');
    t.true(r.after.ctime_ns >= r.before.ctime_ns);
  },
);

test.serial('a name created or removed by another process shows at once', async (t) => {
  const n = shared.path('later');
  t.is(await fsErr(['stat', n]), 'ENOENT');
  await fsOk(['writefile', n, 'now']);
  t.is((await stat('later')).size, 3, 'created');
  await fsOk(['unlink', n]);
  t.is(await fsErr(['stat', n]), 'ENOENT', 'removed');
  t.false(((await fsOk(['listdir', shared.mount.mountpoint])) as string[]).includes('later'));
});
