// Crash: kill -9 the mount process while a writer issues writes and fsyncs (appends on replica:3,
// unaligned overwrites on replica:3 and ec:4+2), remount on the stale mount point, and check that every
// fsync-acknowledged byte is there and that nothing reads as EIO (DESIGN §5).
import test from 'ava';
import * as path from 'node:path';
import * as fsp from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { storeFixture, mkfs, mountChunkfs, fsClient, shOk, run, PYTHON } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';
import { untilCommitted } from '../helpers/committed-size';
import { Store } from '../../store/store';
import { ROOT_INO } from '../../store/meta/meta';

const WRITER = path.join(REPO_ROOT, 'test', 'helpers', 'crash-writer.py');
const RANDOM_FILE_BYTES = 8 << 20;
const ACKS_BEFORE_KILL = 40;
const WRITER_WAIT_MS = 120_000;

const fixture = storeFixture(test, 'crash');

/** Start the writer; resolves with its acks once the mount is gone and it stopped. */
function startWriter(mnt: string, onAck: (n: number) => void): Promise<number[]> {
  const child = spawn(
    PYTHON,
    [WRITER, path.join(mnt, 'seq.bin'), '100000', path.join(mnt, 'r3.bin'), path.join(mnt, 'ec/ec.bin')],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const acks: number[] = [];
  let buf = '';
  child.stdout.on('data', (b: Buffer) => {
    buf += b.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines) {
      const mm = /^ack (\d+)$/.exec(l);
      if (mm !== null) {
        acks.push(Number(mm[1]));
        onAck(acks.length);
      }
    }
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('writer did not stop'));
    }, WRITER_WAIT_MS);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(acks);
    });
  });
}

test.serial('kill -9 during fsynced writes: every acknowledged byte survives, no EIO', async (t) => {
  let m = await fixture.mount();
  await shOk(`mkdir ${m.mountpoint}/ec && setfattr -n user.chunkfs.layout -v ec:4+2 ${m.mountpoint}/ec`);
  await shOk(
    `head -c ${RANDOM_FILE_BYTES} /dev/urandom > ${fixture.dir}/base.bin && cp ${fixture.dir}/base.bin ${m.mountpoint}/r3.bin && cp ${fixture.dir}/base.bin ${m.mountpoint}/ec/ec.bin && sync`,
  );
  const mounted = m;
  let killed: Promise<void> | null = null;
  const acks = await startWriter(m.mountpoint, (n) => {
    if (n >= ACKS_BEFORE_KILL && killed === null) killed = mounted.kill9();
  });
  await killed;
  t.true(acks.length >= ACKS_BEFORE_KILL, `acks ${acks.length}`);

  // Remount on the stale mount point (the CLI recovers it) and check.
  m = await fixture.mount();
  const mnt = m.mountpoint;
  for (const f of ['seq.bin', 'r3.bin', 'ec/ec.bin']) {
    const r = await run('cat', [path.join(mnt, f)], { timeoutMs: 60_000 });
    t.is(r.code, 0, `reading ${f}: ${r.stderr}`); // no EIO anywhere
  }
  const check = await run(
    PYTHON,
    [
      '-c',
      `
import os, random, sys
sys.path.insert(0, ${JSON.stringify(path.dirname(WRITER))})
mnt, base, acked = sys.argv[1], sys.argv[2], int(sys.argv[3])
SLOT, SHIFT, PIECE = 16384, 1000, 5000
seq = open(os.path.join(mnt, 'seq.bin'), 'rb').read()
bad = [i for i in range(acked) if seq[i*4096:(i+1)*4096] != (b'%08d' % i) * 512]
order = list(range(${RANDOM_FILE_BYTES} // SLOT)); random.Random(7).shuffle(order)
for k, f in enumerate(['r3.bin', 'ec/ec.bin']):
    data = open(os.path.join(mnt, f), 'rb').read()
    ref = open(base, 'rb').read()
    if len(data) != len(ref): bad.append((f, 'size', len(data)))
    for i in range(acked):
        slot = order[i % len(order)]
        want = random.Random(k * 1_000_003 + slot).randbytes(PIECE)
        if data[slot*SLOT+SHIFT:slot*SLOT+SHIFT+PIECE] != want: bad.append((f, i))
print(len(bad), bad[:5])
`,
      mnt,
      fixture.dir + '/base.bin',
      String(acks.length),
    ],
    { timeoutMs: 120_000 },
  );
  t.is(check.code, 0, check.stderr);
  t.is(check.stdout.trim(), '0 []');
  // The remounted filesystem is fully usable.
  const after = await fsClient([
    ['writefile', path.join(mnt, 'after'), 'ok'],
    ['readtext', path.join(mnt, 'after')],
  ]);
  t.is(after[1].ok, 'ok');
});

/** Write with a client that keeps the file open (no close, no fsync), then sleeps; returns when written. */
async function writeAndHold(
  file: string,
  script: string,
  holdMs: number,
): Promise<{ done: Promise<void>; kill: () => void }> {
  const child = spawn(
    PYTHON,
    [
      '-c',
      `
import os, random, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
${script}
print('written', flush=True)
time.sleep(${holdMs / 1000})
`,
      file,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const done = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      if (b.toString().includes('written')) resolve();
    });
    child.on('exit', () => reject(new Error('writer exited before writing')));
  });
  return { done, kill: () => child.kill('SIGKILL') };
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

test.serial('the flush timer stores buffered writes of a file that stays open', async (t) => {
  await mkfs(fixture.dir + '/timer-store');
  const mt = await mountChunkfs(fixture.dir + '/timer-store', fixture.dir + '/timer-mnt', ['-o', 'flush_ms=300']);
  try {
    // Held open far past the wait for the commit: the timer, not a close, stores the bytes.
    const w = await writeAndHold(path.join(mt.mountpoint, 't.bin'), "os.pwrite(fd, b'timer!' * 1000, 12345)", 600_000);
    try {
      await untilCommitted(fixture.dir + '/timer-store', ['t.bin'], 12345 + 6000);
      // The size shows in the mount's open metadata group; a directory fsync commits that group and
      // flushes no file's buffered bytes (DESIGN §5 "Group commit"), so the kill meets them durable.
      await fsyncDir(mt.mountpoint);
      await mt.kill9();
    } finally {
      w.kill();
    }
    await w.done;
  } finally {
    await mt.stop();
  }
  const again = await mountChunkfs(fixture.dir + '/timer-store', fixture.dir + '/timer-mnt');
  try {
    const r = await fsClient([
      ['open', 'f', path.join(again.mountpoint, 't.bin'), ['rdonly']],
      ['preadhex', 'f', 12345, 6000],
      ['fstat', 'f'],
    ]);
    t.is(Buffer.from(r[1].ok, 'hex').toString(), 'timer!'.repeat(1000));
    t.is(r[2].ok.size, 12345 + 6000);
  } finally {
    await again.stop();
  }
});

test.serial('memory pressure stores writes beyond the buffer limit before close', async (t) => {
  await mkfs(fixture.dir + '/pressure-store');
  const mp = await mountChunkfs(fixture.dir + '/pressure-store', fixture.dir + '/pressure-mnt', [
    '-o',
    'buffer_mb=1,flush_ms=3600000',
  ]);
  const blocks = 2048; // 8 MiB of scattered 4 KiB writes: no chunk is ever complete, no timer fires
  try {
    const w = await writeAndHold(
      path.join(mp.mountpoint, 'p.bin'),
      `
order = list(range(${blocks})); random.Random(5).shuffle(order)
for i in order: os.pwrite(fd, (b'%07d ' % i) * 512, i * 8192)
# fsync of the directory closes the transaction group (DESIGN §5): what memory pressure stored is
# committed, while the write-back buffer (not flushed by a directory fsync) may still be lost.
d = os.open(${JSON.stringify(mp.mountpoint)}, os.O_RDONLY); os.fsync(d); os.close(d)`,
      2000,
    );
    await mp.kill9();
    await w.done;
  } finally {
    await mp.stop();
  }
  const again = await mountChunkfs(fixture.dir + '/pressure-store', fixture.dir + '/pressure-mnt');
  try {
    const r = await run(
      PYTHON,
      [
        '-c',
        `
import sys
data = open(sys.argv[1], 'rb').read()
print(sum(1 for i in range(${blocks}) if data[i*8192:i*8192+4096] == (b'%07d ' % i) * 512))
`,
        path.join(again.mountpoint, 'p.bin'),
      ],
      { timeoutMs: 60_000 },
    );
    // at most the 1 MiB buffer (256 blocks) may be lost
    t.true(Number(r.stdout.trim()) >= blocks - 256, `stored blocks: ${r.stdout.trim()} ${r.stderr}`);
  } finally {
    await again.stop();
  }
});

test.serial('a .fuse_hidden file left by a crash is unlinked and its data deleted at mount', async (t) => {
  const store = fixture.dir + '/hidden-store';
  await mkfs(store);
  const s = await Store.open(store); // not mounted now: the test process may own it
  const hidden = s.ns.create(ROOT_INO, '.fuse_hidden00000001', 0o644, 0, 0);
  await s.write(hidden.ino, 0, Buffer.alloc(5000, 3));
  const keep = s.ns.create(ROOT_INO, 'keep', 0o644, 0, 0);
  await s.close();
  const mh = await mountChunkfs(store, fixture.dir + '/hidden-mnt');
  await mh.stop();
  const again = await Store.open(store);
  try {
    t.is(again.ns.lookup(ROOT_INO, '.fuse_hidden00000001'), null);
    t.is(again.ns.getattr(hidden.ino), null, 'inode and data deleted');
    t.deepEqual(again.ns.orphans(), []);
    t.is(again.ns.lookup(ROOT_INO, 'keep')?.ino, keep.ino);
  } finally {
    await again.close();
  }
});
