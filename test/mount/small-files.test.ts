// Small files through a real mount (DESIGN §5 "Small files"): a tree of small files is
// packed into containers (far fewer shard files than files, no shards of their own), reads back
// after a remount, `status --json` reports the containers, and after `rm -rf` the needles are dead
// bytes and an offline scrub is clean (containers and needles verify, nothing leaks).
import Database from 'better-sqlite3';
import test from 'ava';
import * as path from 'node:path';
import { storeFixture, run, shOk, PYTHON, CLI_JS } from '../helpers/mount';

const fixture = storeFixture(test, 'smallfiles', { mkfs: ['--disks', '6', '--layout', 'ec:4+2'] });
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 120_000 });

const TREE = `
import os, random, sys
d = sys.argv[1]
for i in range(300):
    sub = os.path.join(d, 'p%d' % (i % 10))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, 'f%d.js' % i), 'wb') as f:
        f.write(random.Random(i).randbytes(1 + random.Random(i).randrange(20000)))
os.sync()
`;
const CHECK = `
import os, random, sys
d = sys.argv[1]; bad = 0
for i in range(300):
    p = os.path.join(d, 'p%d' % (i % 10), 'f%d.js' % i)
    if open(p, 'rb').read() != random.Random(i).randbytes(1 + random.Random(i).randrange(20000)): bad += 1
print(bad)
`;

test.serial(
  'a tree of small files is packed into containers, reads back after a remount, rm -rf leaves dead bytes, scrub is clean',
  async (t) => {
    const store = fixture.store;
    let m = await fixture.mount();
    const tree = path.join(m.mountpoint, 'tree');
    const made = await run(PYTHON, ['-c', TREE, tree], { timeoutMs: 120_000 });
    t.is(made.code, 0, made.stderr);
    await m.stop();
    m = await fixture.mount();
    const checked = await run(PYTHON, ['-c', CHECK, tree], { timeoutMs: 120_000 });
    t.is(checked.stdout.trim(), '0', `every small file reads back after a remount ${checked.stderr}`);
    const shards = Number((await shOk(`find ${store}/disks -name '*.shard' | wc -l`)).trim());
    t.true(
      shards > 0 && shards <= 3 * 4,
      `300 files in ${shards} shard files (open container: replica:3, a few chunks)`,
    );
    const st = await cli(['status', store, '--json']);
    t.is(st.code, 0, st.stderr);
    const containers = JSON.parse(st.stdout).containers;
    t.true(containers.open === 1 && containers.liveBytes > 300, JSON.stringify(containers));
    await shOk(`rm -rf ${tree}`);
    await m.stop();
    const db = new Database(path.join(store, 'meta.db'), { readonly: true });
    const row = db.prepare('SELECT sum(dead_bytes) AS dead, sum(used_bytes) AS used FROM containers').get() as {
      dead: number;
      used: number;
    };
    const named = db.prepare('SELECT count(*) AS n FROM inodes WHERE slice_container IS NOT NULL').get() as {
      n: number;
    };
    db.close();
    t.is(named.n, 0, 'no slice left');
    t.true(row.dead > 0.9 * row.used, `needles of removed files are dead bytes (${row.dead} of ${row.used})`);
    const scrub = await cli(['scrub', store, '--json']);
    t.is(scrub.code, 0, scrub.stderr);
    const report = JSON.parse(scrub.stdout);
    t.is(report.badFound, 0);
    t.is(report.leaks.leakedShards + report.leaks.leakedTemps, 0, JSON.stringify(report.leaks));
  },
);

// Close does not store a small file (DESIGN §5 "How data is written": its close batch does, up to
// 20 ms later): an unmount right after the writer's last close still stores every one of them.
test.serial('small files closed just before an unmount (no sync) all read back after a remount', async (t) => {
  let m = await fixture.mount();
  const tree = path.join(m.mountpoint, 'unsynced');
  const made = await run(PYTHON, ['-c', TREE.replace('os.sync()', ''), tree], { timeoutMs: 120_000 });
  t.is(made.code, 0, made.stderr);
  await m.stop();
  m = await fixture.mount();
  const checked = await run(PYTHON, ['-c', CHECK, tree], { timeoutMs: 120_000 });
  t.is(checked.stdout.trim(), '0', `every small file reads back after a remount ${checked.stderr}`);
  await m.stop();
});
