// Removing small files through a real mount (DESIGN §5 "Small files"): a kill -9 of the mount in the
// middle of an unlink loop leaves a state that existed (the names removed are a prefix of the loop's
// order) in which every file still named reads back its exact bytes (no needle reclaimed early);
// after the rest is removed the background compactor gives the dead needles' space back once the
// removals stop, the kept files read back, removed names never show again, and an offline scrub is clean.
import test from 'ava';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { storeFixture, run, shOk, PYTHON, chunkfsOk } from '../helpers/mount';
import { until } from '../helpers/until';

const fixture = storeFixture(test, 'rmsmall', { mkfs: ['--disks', '6', '--layout', 'replica:3'] });

/** Files in the tree, one in KEEP_EVERY kept, each SIZE bytes: 300 removed x 16 KiB is past the 4 MiB compaction floor. */
const FILES = 400;
const KEEP_EVERY = 4;
const FILE_BYTES = 16 * 1024;
/** Unlinks the loop reports before the mount is killed. */
const UNLINKS_BEFORE_KILL = 100;

// Interleaved in write order, so the kept and the removed files share containers.
const MAKE = `
import os, random, sys
d = sys.argv[1]
for sub in ('keep', 'gone'): os.makedirs(os.path.join(d, sub), exist_ok=True)
for i in range(${FILES}):
    sub = 'keep' if i % ${KEEP_EVERY} == 0 else 'gone'
    with open(os.path.join(d, sub, 'f%03d' % i), 'wb') as f: f.write(random.Random(i).randbytes(${FILE_BYTES}))
os.sync()
`;
// Unlinks gone/ in name order, one line per unlink answered.
const UNLINK = `
import os, sys
d = os.path.join(sys.argv[1], 'gone')
for n in sorted(os.listdir(d)):
    os.unlink(os.path.join(d, n)); print(n, flush=True)
`;
// Per file of the tree: its name and whether it reads back its exact bytes, or is absent.
const CHECK = `
import json, os, random, sys
d = sys.argv[1]; out = {}
for i in range(${FILES}):
    sub = 'keep' if i % ${KEEP_EVERY} == 0 else 'gone'
    p = os.path.join(d, sub, 'f%03d' % i)
    if not os.path.exists(p): out[sub + '/f%03d' % i] = 'absent'; continue
    out[sub + '/f%03d' % i] = 'exact' if open(p, 'rb').read() == random.Random(i).randbytes(${FILE_BYTES}) else 'wrong'
print(json.dumps(out))
`;

async function check(root: string): Promise<Record<string, string>> {
  const r = await run(PYTHON, ['-c', CHECK, root], { timeoutMs: 120_000 });
  if (r.code !== 0) throw new Error(`check of ${root}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, string>;
}

/** Runs the unlink loop and kills the mount once it reported UNLINKS_BEFORE_KILL unlinks. */
function unlinkUntilKilled(root: string, kill: () => Promise<void>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-c', UNLINK, root], { stdio: ['ignore', 'pipe', 'ignore'] });
    let lines = 0;
    let killed: Promise<void> | null = null;
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      lines += s.split('\n').length - 1;
      if (lines >= UNLINKS_BEFORE_KILL && killed === null) killed = kill();
    });
    child.on('error', reject);
    child.on('close', () => {
      if (killed === null) reject(new Error(`the unlink loop ended after ${lines} unlinks, before the kill`));
      else killed.then(() => resolve(lines), reject);
    });
  });
}

interface Containers {
  liveBytes: number;
  deadBytes: number;
}

async function containers(): Promise<Containers> {
  return (JSON.parse(await chunkfsOk(['status', fixture.store, '--json'])) as { containers: Containers }).containers;
}

test.serial(
  'small files removed under a kill -9: a state that existed, exact bytes, space back, scrub clean',
  async (t) => {
    let m = await fixture.mount();
    const root = path.join(m.mountpoint, 'tree');
    const made = await run(PYTHON, ['-c', MAKE, root], { timeoutMs: 120_000 });
    t.is(made.code, 0, made.stderr);
    const mounted = m;
    const reported = await unlinkUntilKilled(root, () => mounted.kill9());
    t.true(reported >= UNLINKS_BEFORE_KILL);

    m = await fixture.mount(); // on the stale mount point: the CLI recovers it
    const after = await check(root);
    const wrong = Object.entries(after).filter(([, v]) => v === 'wrong');
    t.deepEqual(wrong, [], 'every file still named reads back its exact bytes');
    const keep = Object.entries(after).filter(([k]) => k.startsWith('keep/'));
    t.true(
      keep.every(([, v]) => v === 'exact'),
      'no kept file lost',
    );
    const gone = Object.entries(after)
      .filter(([k]) => k.startsWith('gone/'))
      .sort(([a], [b]) => a.localeCompare(b));
    const removed = gone.findIndex(([, v]) => v !== 'absent');
    const prefix = removed === -1 ? gone.length : removed;
    t.log(`${reported} unlinks answered before the kill, ${prefix} names removed after the remount`);
    t.true(
      gone.slice(prefix).every(([, v]) => v === 'exact'),
      `the removed names are a prefix of the loop's order (${prefix} removed, then ${JSON.stringify(gone.slice(prefix, prefix + 5))})`,
    );

    await shOk(`rm -rf ${root}/gone`);
    const keptBytes = keep.length * FILE_BYTES;
    let last: Containers = { liveBytes: -1, deadBytes: -1 };
    await until(
      async () => {
        last = await containers();
        return last.deadBytes === 0 && last.liveBytes === keptBytes;
      },
      'compaction of the removed needles once the removals stopped',
      () => JSON.stringify(last),
    );
    const final = await check(root);
    t.deepEqual(
      Object.entries(final).filter(([k, v]) => (k.startsWith('keep/') ? v !== 'exact' : v !== 'absent')),
      [],
      'kept files exact, removed names absent',
    );
    t.is((await shOk(`ls -A ${root}`)).trim(), 'keep', 'gone/ is gone');
    await m.stop();
    const scrub = JSON.parse(await chunkfsOk(['scrub', fixture.store, '--json'])) as {
      badFound: number;
      leaks: { leakedShards: number; leakedTemps: number };
    };
    t.is(scrub.badFound, 0);
    t.is(scrub.leaks.leakedShards + scrub.leaks.leakedTemps, 0, JSON.stringify(scrub.leaks));
  },
);
