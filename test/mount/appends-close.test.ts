// Through a real mount (fs/write-buffer.ts): a long run of tiny appends to one descriptor, with
// timer flushes in between (the file grows through the small-file threshold into chunks), and many
// open-append-close cycles of a log file, read back exactly after a remount.
// Files closed just before unmount (close stores them in a background batch) are all stored, and
// an mtime set by futimens before close (tar, cp -a) is the one kept (DESIGN §5).
import test from 'ava';
import * as path from 'node:path';
import { storeFixture, mkfs, run, PYTHON } from '../helpers/mount';

const fixture = storeFixture(test, 'appends', { mkfs: false });
test.afterEach.always(() => fixture.stopAll()); // a failed test's mount too, before the next test mounts

const APPENDS = `
import os, sys
d, n, cycles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(os.path.join(d, 'one.log'), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for i in range(n):
    os.write(fd, i.to_bytes(4, 'little'))
os.close(fd)
for i in range(cycles):
    fd = os.open(os.path.join(d, 'cycles.log'), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b'line %05d\\n' % i)
    os.close(fd)
`;
const CHECK_APPENDS = `
import os, sys
d, n, cycles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = []
if open(os.path.join(d, 'one.log'), 'rb').read() != b''.join(i.to_bytes(4, 'little') for i in range(n)): bad.append('one.log')
if open(os.path.join(d, 'cycles.log'), 'rb').read() != b''.join(b'line %05d\\n' % i for i in range(cycles)): bad.append('cycles.log')
print(' '.join(bad) or 'ok')
`;

test.serial(
  'a long run of 4-byte appends and of open-append-close cycles reads back exactly, before and after a remount',
  async (t) => {
    await mkfs(fixture.store);
    // A short flush timer: buffered appends are stored while the writer goes on, so the file crosses
    // small_file_max (a needle, then chunks) through many flushes.
    let m = await fixture.mount(['-o', 'flush_ms=50']);
    const n = 150_000; // 600 KB
    const cycles = 2_000;
    const wrote = await run(PYTHON, ['-c', APPENDS, m.mountpoint, String(n), String(cycles)], { timeoutMs: 600_000 });
    t.is(wrote.code, 0, wrote.stderr);
    const live = await run(PYTHON, ['-c', CHECK_APPENDS, m.mountpoint, String(n), String(cycles)], {
      timeoutMs: 120_000,
    });
    t.is(live.stdout.trim(), 'ok', `reads on the mount see every append ${live.stderr}`);
    await m.stop();
    m = await fixture.mount();
    const after = await run(PYTHON, ['-c', CHECK_APPENDS, m.mountpoint, String(n), String(cycles)], {
      timeoutMs: 120_000,
    });
    t.is(after.stdout.trim(), 'ok', `after a remount ${after.stderr}`);
    await m.stop();
  },
);

const TREE = `
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    sub = os.path.join(d, 'p%d' % (i % 7))
    os.makedirs(sub, exist_ok=True)
    fd = os.open(os.path.join(sub, 'f%d' % i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, random.Random(i).randbytes(random.Random(i).randrange(1, 9000)))
    os.utime(fd, ns=(1_600_000_000_000_000_000 + i, 1_500_000_000_000_000_000 + i))  # as tar does, before close
    os.fchmod(fd, 0o644)
    os.close(fd)
`;
const CHECK_TREE = `
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
bad = []
for i in range(n):
    p = os.path.join(d, 'p%d' % (i % 7), 'f%d' % i)
    if open(p, 'rb').read() != random.Random(i).randbytes(random.Random(i).randrange(1, 9000)): bad.append('bytes ' + p)
    if os.stat(p).st_mtime_ns != 1_500_000_000_000_000_000 + i: bad.append('mtime %s %d' % (p, os.stat(p).st_mtime_ns))
print(' '.join(bad[:5]) or 'ok')
`;

test.serial('small files closed just before unmount are all stored, with the mtime set before close', async (t) => {
  const store = fixture.dir + '/store2';
  await mkfs(store);
  let m = await fixture.mountAt(store, fixture.dir + '/mnt2');
  const tree = path.join(m.mountpoint, 'tree');
  const n = 600;
  const made = await run(PYTHON, ['-c', TREE, tree, String(n)], { timeoutMs: 300_000 });
  t.is(made.code, 0, made.stderr);
  const live = await run(PYTHON, ['-c', CHECK_TREE, tree, String(n)], { timeoutMs: 120_000 });
  t.is(live.stdout.trim(), 'ok', `on the mount ${live.stderr}`);
  await m.stop(); // at once: the last close batches may still be on their way to the store
  m = await fixture.mountAt(store, fixture.dir + '/mnt2');
  const after = await run(PYTHON, ['-c', CHECK_TREE, path.join(m.mountpoint, 'tree'), String(n)], {
    timeoutMs: 120_000,
  });
  t.is(after.stdout.trim(), 'ok', `after a remount ${after.stderr}`);
  await m.stop();
});
