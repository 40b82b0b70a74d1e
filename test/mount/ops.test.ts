// Operation suite on a real chunkfs mount (served by a child process, driven by client children):
// every POSIX op the mount offers, the errno cases, and permissions as uid 65534.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, fsClient, fsOk, fsErr, sh, shOk, NOBODY_UID } from '../helpers/mount';

const shared = sharedMount(test, 'ops');
const P = (rel: string): string => path.join(shared.mount.mountpoint, rel);

test.serial('files: create, write, read, getattr, fstat', async (t) => {
  const r = await fsClient([
    ['open', 'f', P('a'), ['creat', 'wronly', 'excl'], 0o640],
    ['pwrite', 'f', 0, { seed: 1, len: 300_000 }],
    ['fstat', 'f'],
    ['close', 'f'],
    ['readfile', P('a')],
    ['stat', P('a')],
  ]);
  t.is(r[2].ok.size, 300_000);
  const st = r[5].ok;
  t.is(st.mode & 0o7777, 0o640);
  t.is(st.mode & 0o170000, 0o100000);
  t.is(st.size, 300_000);
  t.is(st.nlink, 1);
  const local = await fsClient([
    ['open', 'f', shared.dir + '/ref', ['creat', 'wronly'], 0o644],
    ['pwrite', 'f', 0, { seed: 1, len: 300_000 }],
    ['close', 'f'],
    ['readfile', shared.dir + '/ref'],
  ]);
  t.deepEqual(r[4].ok, local[3].ok);
});

test.serial('open flags: O_EXCL, O_TRUNC, O_APPEND; ENOENT, EISDIR', async (t) => {
  await fsOk(['writefile', P('flags'), 'hello world']);
  t.is(await fsErr(['open', 'f', P('flags'), ['creat', 'excl', 'wronly']]), 'EEXIST');
  const r = await fsClient([
    ['open', 'f', P('flags'), ['wronly', 'append']],
    ['write', 'f', '!!'],
    ['close', 'f'],
    ['readtext', P('flags')],
    ['open', 'g', P('flags'), ['wronly', 'trunc']],
    ['write', 'g', 'new'],
    ['close', 'g'],
    ['readtext', P('flags')],
  ]);
  t.is(r[3].ok, 'hello world!!');
  t.is(r[7].ok, 'new');
  t.is(await fsErr(['open', 'f', P('missing'), ['rdonly']]), 'ENOENT');
  await fsOk(['mkdir', P('adir')]);
  t.is(await fsErr(['open', 'f', P('adir'), ['wronly']]), 'EISDIR');
  t.is(await fsErr(['open', 'f', P('flags/x'), ['creat', 'wronly']]), 'ENOTDIR');
});

test.serial('truncate and ftruncate: shrink, grow with zeros, across chunks', async (t) => {
  const r = await fsClient([
    ['open', 'f', P('trunc'), ['creat', 'rdwr']],
    ['pwrite', 'f', 0, { seed: 2, len: 5 << 20 }],
    ['ftruncate', 'f', 4_200_000],
    ['fstat', 'f'],
    ['ftruncate', 'f', 4_300_000],
    ['preadhex', 'f', 4_199_990, 20],
    ['fsync', 'f'],
    ['close', 'f'],
    ['truncate', P('trunc'), 10],
    ['stat', P('trunc')],
  ]);
  t.is(r[3].ok.size, 4_200_000);
  const expected = (
    await fsClient([
      ['open', 'f', shared.dir + '/t', ['creat', 'rdwr']],
      ['pwrite', 'f', 0, { seed: 2, len: 5 << 20 }],
      ['preadhex', 'f', 4_199_990, 10],
    ])
  )[2].ok;
  t.is(r[5].ok, expected + '00'.repeat(10));
  t.is(r[9].ok.size, 10);
  t.is(await fsErr(['truncate', P('adir'), 0]), 'EISDIR');
});

test.serial('readdir lists . and .. and every entry; mkdir/rmdir errno cases', async (t) => {
  await fsOk(['mkdir', P('d1')]);
  await fsOk(['writefile', P('d1/x'), 'x']);
  const ls = await shOk(`ls -a ${P('d1')}`);
  t.deepEqual(ls.trim().split('\n'), ['.', '..', 'x']);
  t.is(await fsErr(['mkdir', P('d1')]), 'EEXIST');
  t.is(await fsErr(['rmdir', P('d1')]), 'ENOTEMPTY');
  t.is(await fsErr(['rmdir', P('d1/x')]), 'ENOTDIR');
  t.is(await fsErr(['rmdir', P('nope')]), 'ENOENT');
  t.is(await fsErr(['unlink', P('d1')]), 'EISDIR');
  await fsOk(['unlink', P('d1/x')]);
  await fsOk(['rmdir', P('d1')]);
  t.is(await fsErr(['stat', P('d1')]), 'ENOENT');
  const st = await fsOk(['stat', P('.')]);
  t.true(st.nlink >= 2);
});

test.serial('rename: replace, directories, ENOTEMPTY, EISDIR, ENOTDIR, EINVAL', async (t) => {
  await fsOk(['writefile', P('r1'), 'one']);
  await fsOk(['writefile', P('r2'), 'two']);
  await fsOk(['rename', P('r1'), P('r2')]);
  t.is(await fsOk(['readtext', P('r2')]), 'one');
  t.is(await fsErr(['stat', P('r1')]), 'ENOENT');
  await fsOk(['mkdir', P('rd1')]);
  await fsOk(['mkdir', P('rd2')]);
  await fsOk(['writefile', P('rd2/f'), 'f']);
  t.is(await fsErr(['rename', P('rd1'), P('rd2')]), 'ENOTEMPTY');
  t.is(await fsErr(['rename', P('r2'), P('rd1')]), 'EISDIR');
  t.is(await fsErr(['rename', P('rd1'), P('r2')]), 'ENOTDIR');
  t.is(await fsErr(['rename', P('rd2'), P('rd2/sub')]), 'EINVAL');
  await fsOk(['rename', P('rd2'), P('rd1')]); // empty directory target is replaced
  t.is(await fsOk(['readtext', P('rd1/f')]), 'f');
  await fsOk(['mkdir', P('rd3')]);
  await fsOk(['rename', P('rd1'), P('rd3/moved')]);
  t.is(await fsOk(['readtext', P('rd3/moved/f')]), 'f');
});

test.serial('hard links keep nlink right; symlinks read back', async (t) => {
  await fsOk(['writefile', P('l1'), 'linked']);
  await fsOk(['link', P('l1'), P('l2')]);
  const a = await fsOk(['stat', P('l1')]);
  const b = await fsOk(['stat', P('l2')]);
  t.is(a.nlink, 2);
  t.is(b.nlink, 2);
  t.is(a.ino, b.ino);
  await fsOk(['unlink', P('l1')]);
  t.is((await fsOk(['stat', P('l2')])).nlink, 1);
  t.is(await fsOk(['readtext', P('l2')]), 'linked');
  t.is(await fsErr(['link', P('l2'), P('l2')]), 'EEXIST');
  await fsOk(['symlink', 'l2', P('s1')]);
  t.is(await fsOk(['readlink', P('s1')]), 'l2');
  t.is(await fsOk(['readtext', P('s1')]), 'linked');
  t.is((await fsOk(['lstat', P('s1')])).mode & 0o170000, 0o120000);
  t.is(await fsErr(['readlink', P('l2')]), 'EINVAL');
});

test.serial('an open, unlinked file stays readable and writable until its last release', async (t) => {
  const r = await fsClient([
    ['open', 'f', P('ghost'), ['creat', 'rdwr']],
    ['pwrite', 'f', 0, 'still here'],
    ['fsync', 'f'],
    ['unlink', P('ghost')],
    ['stat', P('ghost')],
    ['pwrite', 'f', 10, ' and more'],
    ['preadhex', 'f', 0, 19],
    ['fstat', 'f'],
    ['close', 'f'],
  ]);
  t.is(r[4].err, 'ENOENT');
  t.is(Buffer.from(r[6].ok, 'hex').toString(), 'still here and more');
  t.is(r[7].ok.nlink, 0);
  t.is(await fsErr(['stat', P('ghost')]), 'ENOENT');
});

test.serial('chmod, chown, utimens with UTIME_NOW and UTIME_OMIT', async (t) => {
  await fsOk(['writefile', P('meta'), 'm']);
  await fsOk(['chmod', P('meta'), 0o600]);
  await fsOk(['chown', P('meta'), 1234, 5678]);
  await fsOk(['utime', P('meta'), 1_000_000_000_123_456_789, 1_200_000_000_987_654_321]);
  let st = await fsOk(['stat', P('meta')]);
  t.is(st.mode & 0o7777, 0o600);
  t.is(st.uid, 1234);
  t.is(st.gid, 5678);
  t.is(st.atime_ns, 1_000_000_000_123_456_789);
  t.is(st.mtime_ns, 1_200_000_000_987_654_321);
  await shOk(`touch -a -d @1300000000.5 ${P('meta')}`); // mtime: UTIME_OMIT
  st = await fsOk(['stat', P('meta')]);
  t.is(st.atime_ns, 1_300_000_000_500_000_000);
  t.is(st.mtime_ns, 1_200_000_000_987_654_321);
  await shOk(`touch -m ${P('meta')}`); // mtime: UTIME_NOW, atime: UTIME_OMIT
  st = await fsOk(['stat', P('meta')]);
  t.is(st.atime_ns, 1_300_000_000_500_000_000);
  t.true(st.mtime_ns > 1_600_000_000_000_000_000);
});

test.serial('writes update mtime; statfs reports usable capacity', async (t) => {
  await fsOk(['writefile', P('mt'), 'a']);
  await fsOk(['utime', P('mt'), 1e18, 1e18]);
  await fsOk(['writefile', P('mt'), 'b']);
  t.true((await fsOk(['stat', P('mt')])).mtime_ns > 1.6e18);
  const vfs = await fsOk(['statvfs', shared.mount.mountpoint]);
  const disk = await fsOk(['statvfs', shared.dir]);
  t.true(vfs.blocks > 0);
  // 6 disks on one filesystem, replica:3: about a third of the raw space
  const ratio = (vfs.blocks * vfs.bsize) / (disk.blocks * disk.bsize);
  t.true(ratio > 0.3 && ratio < 0.37, `ratio ${ratio}`);
});

test.serial('user.* xattrs: set, get, list, remove, create/replace flags', async (t) => {
  await fsOk(['writefile', P('xa'), 'x']);
  await fsOk(['setxattr', P('xa'), 'user.color', 'blue']);
  t.is(await fsOk(['getxattr', P('xa'), 'user.color']), 'blue');
  t.deepEqual(await fsOk(['listxattr', P('xa')]), ['user.color']); // the layout is listed only where set
  t.is(await fsErr(['setxattr', P('xa'), 'user.color', 'red', 1]), 'EEXIST'); // XATTR_CREATE
  t.is(await fsErr(['setxattr', P('xa'), 'user.size', 'big', 2]), 'ENODATA'); // XATTR_REPLACE
  await fsOk(['removexattr', P('xa'), 'user.color']);
  t.is(await fsErr(['getxattr', P('xa'), 'user.color']), 'ENODATA');
  t.is(await fsErr(['setxattr', P('xa'), 'trusted.x', 'v']), 'ENOTSUP'); // = EOPNOTSUPP on Linux
});

test.serial('user.chunkfs.layout: per directory, inherited, shown on files, EINVAL when bad', async (t) => {
  await fsOk(['mkdir', P('ecdir')]);
  await fsOk(['setxattr', P('ecdir'), 'user.chunkfs.layout', 'ec:4+2']);
  await fsOk(['mkdir', P('ecdir/sub')]);
  await fsOk(['writefile', P('ecdir/sub/f'), { seed: 3, len: 100_000 }]);
  t.is(await fsOk(['getxattr', P('ecdir/sub/f'), 'user.chunkfs.layout']), 'ec:4+2');
  t.is(await fsOk(['getxattr', P('a'), 'user.chunkfs.layout']), 'replica:3');
  t.is(await fsErr(['setxattr', P('ecdir'), 'user.chunkfs.layout', 'raid5']), 'EINVAL');
  t.is(await fsErr(['setxattr', P('ecdir'), 'user.chunkfs.layout', 'ec:8+4']), 'EINVAL'); // needs 12 disks
  const ref = await fsOk(['writefile', shared.dir + '/ecref', { seed: 3, len: 100_000 }]);
  t.is(ref, null);
  t.deepEqual(await fsOk(['readfile', P('ecdir/sub/f')]), await fsOk(['readfile', shared.dir + '/ecref']));
});

test.serial(
  'a file made after each layout change inherits the layout as it is now: set above, moved, removed',
  async (t) => {
    const layoutOf = (rel: string): Promise<unknown> => fsOk(['getxattr', P(rel), 'user.chunkfs.layout']);
    await fsOk(['mkdir', P('lt')]);
    await fsOk(['mkdir', P('lt/d')]);
    await fsOk(['mkdir', P('lt2')]);
    await fsOk(['writefile', P('lt/d/f1'), { seed: 1, len: 100 }]);
    t.is(await layoutOf('lt/d/f1'), 'replica:3');
    await fsOk(['setxattr', P('lt'), 'user.chunkfs.layout', 'ec:4+2']);
    await fsOk(['writefile', P('lt/d/f2'), { seed: 2, len: 100 }]);
    t.is(await layoutOf('lt/d/f2'), 'ec:4+2', 'a layout set above');
    await fsOk(['rename', P('lt/d'), P('lt2/d')]);
    await fsOk(['writefile', P('lt2/d/f3'), { seed: 3, len: 100 }]);
    t.is(await layoutOf('lt2/d/f3'), 'replica:3', 'moved out from under it');
    await fsOk(['setxattr', P('lt2'), 'user.chunkfs.layout', 'replica:2']);
    await fsOk(['writefile', P('lt2/d/f4'), { seed: 4, len: 100 }]);
    t.is(await layoutOf('lt2/d/f4'), 'replica:2');
    await fsOk(['removexattr', P('lt2'), 'user.chunkfs.layout']);
    await fsOk(['writefile', P('lt2/d/f5'), { seed: 5, len: 100 }]);
    t.is(await layoutOf('lt2/d/f5'), 'replica:3', 'and removed');
    t.is(await layoutOf('lt2/d/f2'), 'ec:4+2', 'a file keeps the layout it was made with');
  },
);

test.serial('ownership and permissions as uid 65534 (default_permissions, allow_other)', async (t) => {
  const nobody = { asUid: NOBODY_UID };
  await fsOk(['mkdir', P('pub'), 0o777]);
  await fsOk(['chmod', P('pub'), 0o777]);
  await fsOk(['writefile', P('pub/rootfile'), 'root']);
  await fsOk(['chmod', P('pub/rootfile'), 0o644]);
  await fsOk(['writefile', P('pub/secret'), 'secret']);
  await fsOk(['chmod', P('pub/secret'), 0o600]);
  // created by nobody -> owned by nobody
  await fsOk(['writefile', P('pub/mine'), 'mine'], nobody);
  await fsOk(['mkdir', P('pub/mydir')], nobody);
  await fsOk(['symlink', 'mine', P('pub/mylink')], nobody);
  await fsOk(['mknod', P('pub/mynod'), 0o100644], nobody); // S_IFREG through mknod(2)
  await fsOk(['mknod', P('pub/fifo'), 0o010644], nobody); // a FIFO needs no privilege
  t.is(await fsErr(['mknod', P('pub/dev'), 0o020644, 1, 3], nobody), 'EPERM'); // a device needs CAP_MKNOD
  for (const f of ['pub/mine', 'pub/mydir', 'pub/mynod', 'pub/fifo']) {
    const st = await fsOk(['stat', P(f)]);
    t.is(st.uid, NOBODY_UID, f);
    t.is(st.gid, NOBODY_UID, f);
  }
  t.is((await fsOk(['lstat', P('pub/mylink')])).uid, NOBODY_UID);
  // what nobody may not do
  t.is(await fsErr(['open', 'f', P('pub/rootfile'), ['wronly']], nobody), 'EACCES');
  t.is(await fsErr(['readfile', P('pub/secret')], nobody), 'EACCES');
  t.is(await fsErr(['chmod', P('pub/rootfile'), 0o777], nobody), 'EPERM');
  t.is(await fsErr(['chown', P('pub/mine'), 0, 0], nobody), 'EPERM');
  t.is(await fsErr(['utime', P('pub/rootfile'), 1, 1], nobody), 'EPERM');
  t.is(await fsErr(['mkdir', P('nobody-at-root')], nobody), 'EACCES'); // root dir is 0755 root
  // what nobody may do
  t.is(await fsOk(['readtext', P('pub/rootfile')], nobody), 'root');
  await fsOk(['chmod', P('pub/mine'), 0o600], nobody);
  t.is(await fsErr(['readfile', P('pub/mine')], nobody), 'OK');
  const r = await sh(`cat ${P('pub/secret')}`, nobody);
  t.not(r.code, 0);
});
