// The libfuse3 transport's own guarantees, on a real mount served by a child process: teardown with
// requests in flight (SIGTERM while a client keeps a file open and busy), cleanup of a crash by
// auto_unmount, and the kernel's lookup references (an unlinked inode the kernel still holds keeps
// its data until the kernel forgets it). These mount with -o transport=fuse3 whatever the pass.
import test from 'ava';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import {
  storeFixture,
  ChunkfsMount,
  fsClient,
  fsOk,
  shOk,
  isMounted,
  childProcesses,
  PYTHON,
  TRANSPORT,
} from '../helpers/mount';

const FUSE3 = ['-o', 'transport=fuse3'];
// Once per npm test: not again in the pass that runs the mounted suite on fuse-native.
const serial = TRANSPORT === 'fuse-native' ? test.serial.skip : test.serial;
const EXIT_WAIT_MS = 30_000;
/** Bounds of states awaited (the write-back's 5 s flush timer, a forget): far past a loaded machine's time. */
const FORGET_WAIT_MS = 120_000;
const POLL_MS = 100;

const fixture = storeFixture(test, 'fuse3');
const mount = (extraArgs: string[] = []): Promise<ChunkfsMount> => fixture.mount([...FUSE3, ...extraArgs]);

async function until(cond: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += POLL_MS) {
    if (await cond()) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return cond();
}

async function shardCount(ino: number): Promise<number> {
  const fileId = ino.toString(16).padStart(16, '0');
  // The live mount's reclaimer may remove another file's version directory during the walk: find
  // then fails on it, which says nothing of this file's shards (the caller polls the count).
  const walk = `find ${fixture.store} -ignore_readdir_race -path '*/${fileId}.v*' -name '*.shard' -type f 2>/dev/null`;
  const out = await shOk(`(${walk} || true) | wc -l`);
  return Number(out.trim());
}

serial(
  'SIGTERM with requests in flight and a file held open: every request answered, clean exit, nothing left behind',
  async (t) => {
    const m = await mount();
    t.regex(m.readyLine, /transport fuse3/);
    await shOk(
      `head -c 3000000 /dev/urandom > ${fixture.dir}/ref.bin && cp ${fixture.dir}/ref.bin ${m.mountpoint}/kept.bin`,
    );
    // A client that keeps one descriptor open and writes and reads through it until the mount goes.
    const busy = spawn(
      PYTHON,
      [
        '-c',
        `
import os, sys
fd = os.open(${JSON.stringify(path.join(m.mountpoint, 'busy.bin'))}, os.O_CREAT | os.O_RDWR, 0o644)
print('open', flush=True)
i = 0
try:
    while True:
        os.pwrite(fd, os.urandom(65536), (i % 64) * 65536)
        os.pread(fd, 65536, ((i * 7) % 64) * 65536)
        i += 1
except OSError as e:
    print('stopped', e.errno, i, flush=True)
`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    busy.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    const busyExit = new Promise<number | null>((resolve) => busy.on('exit', (code) => resolve(code)));
    t.true(await until(() => out.includes('open'), EXIT_WAIT_MS), 'the client opened its file');
    await new Promise((resolve) => setTimeout(resolve, 500));
    m.child.kill('SIGTERM');
    t.true(await until(() => m.exited(), EXIT_WAIT_MS), 'the mount process exits');
    t.is(m.child.exitCode, 0, m.output());
    t.regex(m.output(), /aborting FUSE connection/, 'the open file kept the connection until the abort');
    t.false(isMounted(m.mountpoint));
    const code = await Promise.race([
      busyExit,
      new Promise<string>((resolve) => setTimeout(() => resolve('hung'), EXIT_WAIT_MS)),
    ]);
    if (code === 'hung') busy.kill('SIGKILL');
    t.not(code, 'hung', 'the client is not left waiting for an answer');
    t.regex(out, /stopped/);
    t.deepEqual(childProcesses(m.child.pid!), [], 'no helper left');
    const again = await mount();
    t.is((await shOk(`cmp ${fixture.dir}/ref.bin ${again.mountpoint}/kept.bin && echo same`)).trim(), 'same');
    await again.stop();
  },
);

serial('kill -9: auto_unmount frees the mount point, and the next mount serves the data', async (t) => {
  const m = await mount();
  // sync FILE fsyncs it: close is not durable (DESIGN §5), and syncfs does not reach a FUSE server
  await shOk(`echo crash-safe > ${m.mountpoint}/note && sync ${m.mountpoint}/note`);
  const helpers = childProcesses(m.child.pid!);
  t.is(helpers.filter(([, comm]) => comm === 'fusermount3').length, 1, 'the auto_unmount helper runs beside the mount');
  // comm is cut at 15 bytes: chunkfs_unmount_guard (fs/fuse/unmount-guard.ts)
  t.is(
    helpers.filter(([, comm]) => comm === 'chunkfs_unmount').length,
    1,
    'the guard holding its socket runs beside it',
  );
  await m.kill9();
  t.true(await until(() => !isMounted(m.mountpoint), EXIT_WAIT_MS), 'the helper unmounted the dead mount');
  const again = await mount();
  t.is((await shOk(`cat ${again.mountpoint}/note`)).trim(), 'crash-safe');
  await again.stop();
});

serial('an unlinked inode the kernel still holds (O_PATH) keeps its data; the forget frees it', async (t) => {
  const m = await mount();
  const f = path.join(m.mountpoint, 'held.bin');
  await fsOk(['writefile', f, { seed: 7, len: 200_000 }]);
  const ino = (await fsOk(['stat', f])).ino as number;
  // The close hands the bytes to the write-back, which stores them on its own time (DESIGN §5).
  t.true(await until(async () => (await shardCount(ino)) > 0, FORGET_WAIT_MS), 'the data is stored');
  // One client holds an O_PATH descriptor (no FUSE open: only the kernel's lookup reference)
  // across the unlink, fstats it, and keeps it until told to close.
  const holder = spawn(
    PYTHON,
    [
      '-c',
      `
import os, sys, json
fd = os.open(${JSON.stringify(f)}, os.O_PATH)
os.unlink(${JSON.stringify(f)})
st = os.fstat(fd)
print(json.dumps({'nlink': st.st_nlink, 'size': st.st_size}), flush=True)
sys.stdin.readline()
os.close(fd)
`,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let out = '';
  holder.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const holderExit = new Promise<void>((resolve) => holder.on('exit', () => resolve()));
  t.true(await until(() => out.includes('}'), EXIT_WAIT_MS), 'the holder reported');
  t.deepEqual(JSON.parse(out), { nlink: 0, size: 200_000 });
  t.true((await shardCount(ino)) > 0, 'still stored while the kernel holds the inode');
  holder.stdin.end('\n');
  await holderExit;
  t.true(await until(async () => (await shardCount(ino)) === 0, FORGET_WAIT_MS), 'deleted once the kernel forgot it');
  t.deepEqual((await fsClient([['stat', f]]))[0], { err: 'ENOENT' });
  await m.stop();
});

serial(
  "writeback cache: write, mmap and O_APPEND data fsync'd survive kill -9; O_DIRECT reads and stat see cached writes",
  async (t) => {
    const m = await fixture.mount([...FUSE3, '-o', 'writeback_cache']);
    const f = path.join(m.mountpoint, 'wb.bin');
    const out = await shOk(`${PYTHON} - ${f} <<'PY'
import json, mmap, os, sys, time
f = sys.argv[1]
fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
before = os.fstat(fd).st_mtime_ns
time.sleep(0.01)
os.pwrite(fd, b'a' * 10000, 0)
st = os.fstat(fd)
os.ftruncate(fd, 20000)
m = mmap.mmap(fd, 20000)
m[12000:12005] = b'mmap!'
m.flush()
m.close()
a = os.open(f, os.O_WRONLY | os.O_APPEND)
os.write(a, b'tail')
os.close(a)
d = os.open(f, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
n = os.preadv(d, [buf], 8192)
direct = bytes(buf[12000 - 8192:12005 - 8192]).decode()
os.close(d)
os.fsync(fd)
print(json.dumps({'size': st.st_size, 'mtime_moved': st.st_mtime_ns > before, 'direct': direct, 'n': n, 'final': os.fstat(fd).st_size}))
PY`);
    t.deepEqual(JSON.parse(out), { size: 10000, mtime_moved: true, direct: 'mmap!', n: 4096, final: 20004 });
    await m.kill9();
    t.true(await until(() => !isMounted(m.mountpoint), EXIT_WAIT_MS));
    const again = await mount();
    const r = await fsClient([
      ['open', 'f', path.join(again.mountpoint, 'wb.bin'), ['rdonly']],
      ['fstat', 'f'],
      ['preadhex', 'f', 9998, 4],
      ['preadhex', 'f', 12000, 5],
      ['preadhex', 'f', 20000, 4],
    ]);
    t.is(r[1].ok.size, 20004);
    t.is(Buffer.from(r[2].ok, 'hex').toString('latin1'), 'aa\0\0');
    t.is(Buffer.from(r[3].ok, 'hex').toString(), 'mmap!');
    t.is(Buffer.from(r[4].ok, 'hex').toString(), 'tail');
    await again.stop();
  },
);
