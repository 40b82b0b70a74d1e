// A full disk on a bad day, seen by a writer (DESIGN §5 "Space for buffered bytes"): a copy into
// a mounted store whose disks have less free space than the file needs fails with ENOSPC at a
// write or at close, never a close that succeeds and a file the background flush loses. Once
// space is freed the same copy works, and a file that fit reads back whole after a remount.
// Real small disks: a 48 MiB tmpfs holding the store and its three disks (root only; skipped otherwise):
// once the filler is gone it holds both copies (2 x 12 MiB) even while the refused attempts' partial
// files still wait for the reclaimer (freed space counts once reclaimed, DESIGN §5 "Free last").
import test from 'ava';
import * as fs from 'node:fs';
import { PYTHON, mkfs, mountChunkfs, removeDir, run, tempDir, ChunkfsMount } from '../helpers/mount';

const isRoot = process.getuid?.() === 0;
const rootTest = isRoot ? test.serial : test.skip;
const FILE_BYTES = 4 << 20;
/** Free space left on the tmpfs: a replica:3 copy of FILE_BYTES needs three times it, and more than this. */
const LEFT_FREE_BYTES = 8 << 20;
let dir = '';
let mounted = false;
let m: ChunkfsMount | null = null;
test.before(async () => {
  dir = await tempDir('full-disk-writes');
});
test.after.always(async () => {
  await m?.stop();
  if (mounted) await run('umount', ['-l', `${dir}/disk`]);
  if (dir !== '') await removeDir(dir);
});

/** open, one write of the whole file, close: the step that failed and its error, or 'ok'. */
async function writeAndClose(target: string, src: string): Promise<string> {
  const script = `import os,sys
data=open(sys.argv[2],'rb').read()
step='open'
try:
    fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644)
    step='write'
    n=0
    while n < len(data): n+=os.write(fd, data[n:])
    step='close'
    os.close(fd)
    print('ok')
except OSError as e:
    print(step, e.strerror)`;
  const r = await run(PYTHON, ['-c', script, target, src]);
  return r.stdout.trim();
}

rootTest(
  'a copy larger than the free space fails with ENOSPC; after space is freed it works and reads back after remount',
  async (t) => {
    fs.mkdirSync(`${dir}/disk`);
    const mt = await run('mount', ['-t', 'tmpfs', '-o', 'size=48m,mode=0755', 'tmpfs', `${dir}/disk`]);
    t.is(mt.code, 0, mt.stderr);
    mounted = mt.code === 0;
    const store = `${dir}/disk/store`;
    await mkfs(store, ['--disks', '3', '--layout', 'replica:3']);
    const src = `${dir}/src`;
    fs.writeFileSync(src, Buffer.from(Array.from({ length: FILE_BYTES }, (_, i) => (i * 131 + 7) & 0xff)));
    const mnt = `${dir}/mnt`;
    fs.mkdirSync(mnt);
    m = await mountChunkfs(store, mnt);
    // Leave LEFT_FREE_BYTES free on the disks' file system: enough for the metadata, not for 3 x 4 MiB.
    const filler = `${dir}/disk/filler`;
    const availBytes = fs.statfsSync(`${dir}/disk`).bavail * fs.statfsSync(`${dir}/disk`).bsize;
    const fill = await run('fallocate', ['-l', String(availBytes - LEFT_FREE_BYTES), filler]);
    t.is(fill.code, 0, fill.stderr);

    const cp = await run('cp', [src, `${mnt}/a`]);
    t.not(cp.code, 0, 'cp reports the failure');
    t.regex(cp.stderr, /No space left on device/);
    const refused = await writeAndClose(`${mnt}/b`, src);
    t.regex(refused, /^(write|close) No space left on device$/);
    t.log(`cp: ${cp.stderr.trim()}; write+close: ${refused}`);
    t.notRegex(m.output(), /flush of .* failed/, 'no background flush was left to fail');

    fs.rmSync(filler);
    const again = await run('cp', [src, `${mnt}/a`]);
    t.is(again.code, 0, again.stderr);
    t.is(await writeAndClose(`${mnt}/b`, src), 'ok');
    t.true(fs.readFileSync(`${mnt}/a`).equals(fs.readFileSync(src)), 'the copy reads back');
    await m.stop();
    m = await mountChunkfs(store, mnt);
    t.true(fs.readFileSync(`${mnt}/a`).equals(fs.readFileSync(src)), 'the copy reads back whole after a remount');
    t.true(fs.readFileSync(`${mnt}/b`).equals(fs.readFileSync(src)), 'the written file too');
    await m.stop();
    m = null;
  },
);

/** Free bytes df shows for the mount before a file is opened, while 3 MiB are buffered in it, and after close. */
async function availWhileBuffered(mnt: string): Promise<number[]> {
  const script = `import os,sys
def avail(): s=os.statvfs(sys.argv[1]); return s.f_bavail*s.f_frsize
before=avail()
fd=os.open(sys.argv[1]+'/held', os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644)
os.write(fd, b'x'*(3<<20))
during=avail()
os.close(fd)
print(before, during)`;
  const r = await run(PYTHON, ['-c', script, mnt]);
  return r.stdout.trim().split(' ').map(Number);
}

rootTest('df on the mount counts the space reserved for buffered bytes as used', async (t) => {
  const mnt = `${dir}/mnt`;
  // A store of its own on the same small disk: the first test's store frees the refused copies'
  // shards in the background (its reclaimer), which would show in df between the two samples.
  const store = `${dir}/disk/df-store`;
  await mkfs(store, ['--disks', '3', '--layout', 'replica:3']);
  // No timer flush for the test's length: the bytes stay buffered until close.
  m = await mountChunkfs(store, mnt, ['-o', 'flush_ms=600000']);
  const [before, during] = await availWhileBuffered(mnt);
  t.log(`avail ${before} -> ${during} bytes with 3 MiB buffered`);
  t.true(before - during >= 3 << 20, `${before - during} bytes less while 3 MiB are buffered`);
  await m.stop();
  m = null;
});
