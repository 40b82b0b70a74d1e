// Commit model v2 through a real mount (DESIGN §5): kill -9 of the mount during an fsync'ing
// writer and during `rm -rf` of a big tree. After the remount every fsync'd write reads back, whatever
// survived of the tree reads back whole, the reclaim queue drains, and an offline scrub finds no bad,
// missing or leaked shard.
import Database from 'better-sqlite3';
import test from 'ava';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { storeFixture, ChunkfsMount, mkfs, run, shOk, PYTHON, CLI_JS, reclaimDrained } from '../helpers/mount';

const fixture = storeFixture(test, 'commit', { mkfs: false });
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 120_000 });

const drained = reclaimDrained;

/** Unmount, then an offline scrub: nothing bad, missing or leaked. */
async function scrubClean(t: import('ava').ExecutionContext, store: string, m: ChunkfsMount): Promise<void> {
  await m.stop();
  const scrub = await cli(['scrub', store, '--json']);
  t.is(scrub.code, 0, scrub.stderr);
  const report = JSON.parse(scrub.stdout);
  t.is(report.badFound, 0);
  t.is(report.leaks.leakedShards + report.leaks.leakedTemps, 0, JSON.stringify(report.leaks));
}

const WRITER = `
import os, random, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644)
slots = list(range(256)); random.Random(3).shuffle(slots)
for n, s in enumerate(slots):
    os.pwrite(fd, random.Random(s).randbytes(65536), s * 65536)
    os.fsync(fd)
    print('ack', n, flush=True)
`;

test.serial(
  "kill -9 during fsync'd writes: every acknowledged write reads back; reclaim drains; scrub is clean",
  async (t) => {
    const store = fixture.dir + '/w-store';
    await mkfs(store);
    let m = await fixture.mountAt(store, fixture.dir + '/w-mnt');
    const mounted = m;
    const child = spawn(PYTHON, ['-c', WRITER, path.join(m.mountpoint, 'f.bin')], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let acked = -1;
    let killed: Promise<void> | null = null;
    child.stdout.on('data', (b: Buffer) => {
      for (const mm of b.toString().matchAll(/ack (\d+)/g)) acked = Number(mm[1]);
      if (acked >= 60 && killed === null) killed = mounted.kill9();
    });
    await new Promise<void>((resolve) => child.on('exit', () => resolve()));
    await killed;
    t.true(acked >= 60, `acks ${acked}`);
    m = await fixture.mountAt(store, fixture.dir + '/w-mnt');
    const check = await run(
      PYTHON,
      [
        '-c',
        `
import random, sys
data = open(sys.argv[1], 'rb').read()
slots = list(range(256)); random.Random(3).shuffle(slots)
print(sum(1 for s in slots[:int(sys.argv[2]) + 1] if data[s*65536:(s+1)*65536] != random.Random(s).randbytes(65536)))
`,
        path.join(m.mountpoint, 'f.bin'),
        String(acked),
      ],
      { timeoutMs: 60_000 },
    );
    t.is(check.stdout.trim(), '0', `acknowledged writes lost: ${check.stdout}${check.stderr}`);
    t.is(await drained(store), 0, 'the reclaim queue drains');
    await scrubClean(t, store, m);
  },
);

const TREE = `
import os, random, sys
root = sys.argv[1]
for i in range(240):
    d = os.path.join(root, 'd%02d' % (i % 12))
    os.makedirs(d, exist_ok=True)
    size = 9 << 20 if i % 80 == 0 else 1 + random.Random(i).randrange(200_000)
    with open(os.path.join(d, 'f%03d' % i), 'wb') as f:
        f.write(random.Random(i).randbytes(size))
        # Durable before the rm starts: close is not fsync (DESIGN §5; small files are stored in
        # background batches after close), and syncfs never reaches a FUSE server.
        f.flush(); os.fsync(f.fileno())
`;
const TREE_CHECK = `
import os, random, sys
root, bad, seen = sys.argv[1], [], 0
for d, _, names in os.walk(root):
    for n in names:
        i = int(n[1:]); seen += 1
        size = 9 << 20 if i % 80 == 0 else 1 + random.Random(i).randrange(200_000)
        if open(os.path.join(d, n), 'rb').read() != random.Random(i).randbytes(size): bad.append(n)
print(seen, len(bad), bad[:5])
`;

test.serial(
  'kill -9 during rm -rf of a big tree: what is left reads back whole; rm finishes; reclaim drains; scrub is clean',
  async (t) => {
    const store = fixture.dir + '/t-store';
    await mkfs(store);
    let m = await fixture.mountAt(store, fixture.dir + '/t-mnt');
    const tree = path.join(m.mountpoint, 'tree');
    const made = await run(PYTHON, ['-c', TREE, tree], { timeoutMs: 120_000 });
    t.is(made.code, 0, made.stderr);
    const mounted = m;
    const rm = spawn('rm', ['-rf', tree], { stdio: 'ignore' });
    const rmDone = new Promise<void>((resolve) => rm.on('exit', () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 150)); // somewhere in the middle of the rm, or after it
    await mounted.kill9();
    await rmDone;
    m = await fixture.mountAt(store, fixture.dir + '/t-mnt');
    const left = await run(PYTHON, ['-c', TREE_CHECK, tree], { timeoutMs: 120_000 });
    const [seen, badCount] = left.stdout.trim().split(' ');
    t.is(badCount, '0', `files left after the crash that do not read back: ${left.stdout}${left.stderr}`);
    t.log(`${seen} of 240 files left after the crash`);
    await shOk(`rm -rf ${tree}`);
    t.is(await drained(store), 0, 'the reclaim queue drains');
    await scrubClean(t, store, m);
    // What is left is the open small-file container (spec §11: needles die, their container stays
    // until it is sealed and compacted); no shard of the tree's own files.
    const db = new Database(path.join(store, 'meta.db'), { readonly: true });
    const containers = new Set(
      (db.prepare('SELECT id FROM containers').all() as Array<{ id: number }>).map((r) =>
        r.id.toString(16).padStart(16, '0'),
      ),
    );
    db.close();
    const shards = (await shOk(`find ${store}/disks -name '*.shard'`)).split('\n').filter((l) => l !== '');
    t.deepEqual(
      shards.filter((p) => !containers.has(path.basename(path.dirname(path.dirname(p))).split('.')[0])),
      [],
      'every shard of the tree is gone',
    );
  },
);
