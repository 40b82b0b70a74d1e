// Proves the fuse-native patch (patches/fuse-native+2.2.6.patch) on a real mount served by a child
// process (test/helpers/tiny-fuse.ts): files created by uid 65534 belong to 65534, utimens keeps atime
// and mtime apart to the nanosecond and honours UTIME_NOW / UTIME_OMIT, fgetattr gets the real fh.
import test from 'ava';
import * as path from 'node:path';
import { storeFixture, startMount, run, sh, MountChild, NOBODY_UID, NOBODY_GID } from '../helpers/mount';
import { REPO_ROOT as REPO } from '../helpers/root';

const TINY = path.join(REPO, 'dist', 'test', 'helpers', 'tiny-fuse.js');
const fixture = storeFixture(test, 'fusepatch', { mkfs: false }); // no store: tiny-fuse serves the mount
let m: MountChild | undefined;

test.serial.before(async () => {
  await sh(`chmod 755 ${fixture.dir}`);
  m = fixture.track(
    await startMount({
      command: process.execPath,
      args: [TINY, fixture.mountpoint],
      mountpoint: fixture.mountpoint,
      readyPattern: /tiny-fuse mounted/,
    }),
  );
});

function events(op: string): Array<Record<string, unknown>> {
  return m!
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.op === op);
}

test.serial('a file created by uid 65534 belongs to 65534, with the creator pid', async (t) => {
  const f = path.join(m!.mountpoint, 'by-nobody');
  const r = await run('touch', [f], { asUid: NOBODY_UID, asGid: NOBODY_GID, timeoutMs: 10_000 });
  t.is(r.code, 0, r.stderr);
  const st = await run('stat', ['-c', '%u %g', f], { timeoutMs: 10_000 });
  t.is(st.stdout.trim(), `${NOBODY_UID} ${NOBODY_GID}`);
  const created = events('create').find((e) => e.path === '/by-nobody');
  t.truthy(created);
  t.is(created!.uid, NOBODY_UID);
  t.is(created!.gid, NOBODY_GID);
  t.true(Number(created!.pid) > 1);
  const dirR = await run('mkdir', [path.join(m!.mountpoint, 'dir-by-nobody')], {
    asUid: NOBODY_UID,
    timeoutMs: 10_000,
  });
  t.is(dirR.code, 0, dirR.stderr);
  const dst = await run('stat', ['-c', '%u %g', path.join(m!.mountpoint, 'dir-by-nobody')], { timeoutMs: 10_000 });
  t.is(dst.stdout.trim(), `${NOBODY_UID} ${NOBODY_GID}`);
});

test.serial('default_permissions: uid 65534 cannot write a root-owned 0644 file', async (t) => {
  const f = path.join(m!.mountpoint, 'by-root');
  t.is((await run('touch', [f], { timeoutMs: 10_000 })).code, 0);
  const r = await sh(`echo x > ${f}`, { asUid: NOBODY_UID, timeoutMs: 10_000 });
  t.not(r.code, 0);
  t.regex(r.stderr, /Permission denied/);
});

test.serial('utimens sets atime and mtime separately, to the nanosecond', async (t) => {
  const f = path.join(m!.mountpoint, 'times');
  t.is((await run('touch', [f], { timeoutMs: 10_000 })).code, 0);
  t.is((await run('touch', ['-m', '-d', '@1234567890.123456789', f], { timeoutMs: 10_000 })).code, 0);
  t.is((await run('touch', ['-a', '-d', '@1111111111.987654321', f], { timeoutMs: 10_000 })).code, 0);
  const st = await run('stat', ['-c', '%.9X %.9Y', f], { timeoutMs: 10_000 });
  t.is(st.stdout.trim(), '1111111111.987654321 1234567890.123456789');
  // touch -a leaves mtime alone: the kernel sends UTIME_OMIT for it
  const u = events('utimens').filter((e) => e.path === '/times');
  t.true(u.some((e) => e.mtime === 'omit' && e.atime === '1111111111987654321'));
  t.true(u.some((e) => e.atime === 'omit' && e.mtime === '1234567890123456789'));
});

test.serial('utimens with UTIME_NOW (touch without a date)', async (t) => {
  const f = path.join(m!.mountpoint, 'times');
  t.is((await run('touch', [f], { timeoutMs: 10_000 })).code, 0);
  const u = events('utimens').filter((e) => e.path === '/times');
  t.true(u.some((e) => e.atime === 'now' && e.mtime === 'now'));
  const st = await run('stat', ['-c', '%Y', f], { timeoutMs: 10_000 });
  t.true(Number(st.stdout.trim()) > 1_600_000_000);
});

test.serial('fgetattr gets the file handle of the open file', async (t) => {
  const f = path.join(m!.mountpoint, 'fstat-me');
  // create() is followed by fgetattr on the new handle in libfuse's high-level API
  const r = await run(
    'python3',
    [
      '-c',
      `import os; fd = os.open(${JSON.stringify(f)}, os.O_CREAT | os.O_WRONLY, 0o644); os.write(fd, b'hello'); print(os.fstat(fd).st_size); os.close(fd)`,
    ],
    { timeoutMs: 10_000 },
  );
  t.is(r.code, 0, r.stderr);
  t.is(r.stdout.trim(), '5');
  const fg = events('fgetattr').filter((e) => e.path === '/fstat-me');
  t.true(fg.length > 0);
  t.true(fg.every((e) => e.known === true));
});
