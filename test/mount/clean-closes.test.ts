// Closes answered without JavaScript on the libfuse3 transport (DESIGN §6, native/fuse3/clean_closes.h):
// that of a new file nothing was written to, and that of a file whose last write left it nothing to
// report and its bytes bound for a close batch (its release joins the batch). A close after a
// truncate or with another descriptor open still reaches JavaScript, which stores and reports, and
// so does one after a flush of the open file started (it may fail: the close reports it). The FLUSH
// requests JavaScript answered are counted by the metrics. fuse-native answers every close in
// JavaScript.
import test from 'ava';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { CLI_JS, ClientOp, PYTHON, TRANSPORT, fsClient, fsOk, run, sharedMount } from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
const shared = sharedMount(test, 'clean-closes', { mountArgs: ['-o', 'metrics=127.0.0.1:0'] });
const FILES = 40;

async function change(ops: ClientOp[]): Promise<void> {
  const results = await fsClient(ops);
  for (const [i, r] of results.entries()) if (r.err !== undefined) throw new Error(`${String(ops[i][0])}: ${r.err}`);
}

/** FLUSH requests JavaScript answered so far. */
async function flushesInJs(): Promise<number> {
  const port = Number(/metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(shared.mount.readyLine)![1]);
  const r = await run('curl', ['-s', `http://127.0.0.1:${port}/metrics`]);
  const m = /chunkfs_fuse_op_duration_seconds_count\{op="flush"\} (\d+)/.exec(r.stdout);
  return m === null ? 0 : Number(m[1]);
}

/** Runs one client's ops per file and returns the FLUSHes JavaScript answered meanwhile. */
async function flushesDuring(opsOf: (p: string, i: number) => ClientOp[], dir: string): Promise<number> {
  await change([['mkdir', shared.path(dir)]]);
  const before = await flushesInJs();
  const ops: ClientOp[] = [];
  for (let i = 0; i < FILES; i++) ops.push(...opsOf(shared.path(`${dir}/f${i}`), i));
  await change(ops);
  return (await flushesInJs()) - before;
}

const made = (p: string, i: number): ClientOp[] => [
  ['open', `c${i}`, p, ['wronly', 'creat', 'excl']],
  ['close', `c${i}`],
];

test.serial('the close of a new file nothing was written to needs no JavaScript', async (t) => {
  const n = await flushesDuring(made, 'empty');
  if (FUSE3) t.true(n < FILES / 4, `${n} of ${FILES} closes reached JavaScript`);
  else t.true(n >= FILES, `fuse-native: ${n} of ${FILES}`);
  for (let i = 0; i < FILES; i += 13) t.is((await fsOk(['stat', shared.path(`empty/f${i}`)])).size, 0);
});

test.serial(
  'a close after a write (and setattrs) needs no JavaScript; after a truncate or another open it does; bytes kept',
  async (t) => {
    const written = await flushesDuring(
      (p, i) => [
        ['open', `w${i}`, p, ['wronly', 'creat', 'excl']],
        ['write', `w${i}`, `bytes of ${i}`],
        ['close', `w${i}`],
      ],
      'written',
    );
    if (FUSE3) t.true(written < FILES / 4, `${written} of ${FILES} closes after a write reached JavaScript`);
    else t.true(written >= FILES, `fuse-native: ${written} of ${FILES}`);
    // As tar -x does: times and mode set between the write and the close.
    const stamped = await flushesDuring(
      (p, i) => [
        ['open', `s${i}`, p, ['wronly', 'creat', 'excl']],
        ['write', `s${i}`, `stamped ${i}`],
        ['utime', p, 1e18, 1e18],
        ['chmod', p, 0o640],
        ['close', `s${i}`],
      ],
      'stamped',
    );
    if (FUSE3) t.true(stamped < FILES / 4, `${stamped} of ${FILES} closes after a setattr reached JavaScript`);
    else t.true(stamped >= FILES, `fuse-native: ${stamped} of ${FILES}`);
    const truncated = await flushesDuring(
      (p, i) => [
        ['open', `t${i}`, p, ['rdwr', 'creat', 'excl']],
        ['ftruncate', `t${i}`, 1000 + i],
        ['close', `t${i}`],
      ],
      'truncated',
    );
    t.true(truncated >= FILES, `every close after a truncate: ${truncated} of ${FILES}`);
    // Another descriptor of the new file writes and closes first; the creator's close comes last.
    const shared2 = await flushesDuring(
      (p, i) => [
        ['open', `a${i}`, p, ['wronly', 'creat', 'excl']],
        ['open', `b${i}`, p, ['wronly']],
        ['write', `b${i}`, `other ${i}`],
        ['close', `b${i}`],
        ['close', `a${i}`],
      ],
      'two',
    );
    t.true(shared2 >= 2 * FILES, `both closes of each file: ${shared2} of ${2 * FILES}`);
    for (let i = 0; i < FILES; i += 7) {
      t.is(await fsOk(['readtext', shared.path(`written/f${i}`)]), `bytes of ${i}`);
      t.is(await fsOk(['readtext', shared.path(`stamped/f${i}`)]), `stamped ${i}`);
      const st = await fsOk(['stat', shared.path(`stamped/f${i}`)]);
      t.is(st.mode & 0o7777, 0o640);
      t.is(st.mtime_ns, 1e18);
      t.is((await fsOk(['stat', shared.path(`truncated/f${i}`)])).size, 1000 + i);
      t.is(await fsOk(['readtext', path.join(shared.mount.mountpoint, `two/f${i}`)]), `other ${i}`);
    }
  },
);

// Writes a file, says so, and closes it when told (a line on stdin): the close's outcome.
const WRITE_THEN_CLOSE = `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b'x' * (256 << 10))  # past the small-file size: chunk writes to the disks
print('written', flush=True)
sys.stdin.readline()
try:
    os.close(fd); print('close ok')
except OSError as e:
    print('close', os.strerror(e.errno))
`;
/** How long the mount may take to log the failed flush (a bound, not a timing: it comes in milliseconds). */
const FLUSH_FAILED_WAIT_MS = 60_000;

test.serial('a flush of the open file that fails after its write is answered: its close reports EIO', async (t) => {
  // flush_ms=1: the write-back timer stores the file 1 ms after its write, while it is still open.
  await shared.remount(['-o', 'flush_ms=1']);
  const mnt = shared.mount.mountpoint;
  for (let disk = 0; disk < 6; disk++) {
    const r = await run(process.execPath, [CLI_JS, 'inject', 'eio', String(disk), '--ops', 'write', mnt]);
    t.is(r.code, 0, r.stderr);
  }
  const child = spawn(PYTHON, ['-c', WRITE_THEN_CLOSE, shared.path('failing')], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  try {
    child.stdout.on('data', (b: Buffer) => (out += String(b)));
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    const until = async (ok: () => boolean, what: string): Promise<void> => {
      for (let waited = 0; !ok(); waited += 50) {
        if (waited > FLUSH_FAILED_WAIT_MS)
          throw new Error(`no ${what}; writer said: ${out}; mount: ${shared.mount.output().slice(-1500)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await until(() => out.includes('written'), 'write');
    await until(() => /flush of \S*failing \(file \d+\) failed/.test(shared.mount.output()), 'failed flush in the log');
    child.stdin.end('\n');
    await exited;
    t.is(out.trim().split('\n').at(-1), 'close Input/output error');
  } finally {
    child.kill();
    const cleared = await run(process.execPath, [CLI_JS, 'inject', '--clear', mnt]);
    t.is(cleared.code, 0, cleared.stderr);
  }
});
