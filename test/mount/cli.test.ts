// The chunkfs CLI end to end: mkfs (and its errors), mount on the embedded default store, a live mount
// point refused, a stale one recovered, umount, status --json while mounted, and a clean flush +
// unmount on SIGINT; scrub finds a flipped byte, --repair rebuilds it, and is refused while mounted.
import test from 'ava';
import * as path from 'node:path';
import { promises as fsp } from 'node:fs';
import { storeFixture, startMount, mkfs, run, shOk, isMounted, childProcesses, CLI_JS } from '../helpers/mount';

const fixture = storeFixture(test, 'cli', { mkfs: false });
const cli = (args: string[], env?: NodeJS.ProcessEnv) =>
  run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000, env });

test.serial('--help on every verb; errors name the problem and exit non-zero', async (t) => {
  for (const verb of ['mkfs', 'mount', 'umount', 'status', 'scrub']) {
    const r = await cli([verb, '--help']);
    t.is(r.code, 0);
    t.regex(r.stdout, new RegExp(`usage: chunkfs ${verb}`));
  }
  const cases: Array<[string[], RegExp]> = [
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['mkfs'], /missing <store>/],
    [['mkfs', fixture.dir + '/x', '--disks', 'two'], /--disks: 'two' is not a whole number/],
    [['mkfs', fixture.dir + '/x', '--disks', '3', '--disk', '/tmp'], /either --disks N or --disk PATH/],
    [['mkfs', fixture.dir + '/x', '--layout', 'raid5'], /--layout: 'raid5'/],
    [['mkfs', fixture.dir + '/x', '--chunk-size', 'huge'], /--chunk-size: 'huge' is not a size/],
    [['mount', fixture.dir + '/x', fixture.dir + '/m', '-o', 'bogus'], /unknown mount option 'bogus'/],
    [
      ['mount', fixture.dir + '/x', fixture.dir + '/m', '-o', 'transport=fuse9'],
      /transport: 'fuse9' is not one of fuse3, fuse-native/,
    ],
    [['mount', fixture.dir + '/nostore', fixture.dir + '/m'], /is not a chunkfs store/],
    [['umount', fixture.dir], /is not mounted/],
    [['status', fixture.dir + '/nostore'], /is neither a chunkfs store nor a chunkfs mount point/],
    [['scrub', fixture.dir + '/a', fixture.dir + '/b'], /scrub: unexpected argument/],
    [['scrub', fixture.dir + '/a', '--fix'], /scrub: unknown option '--fix'/],
    [['scrub', fixture.dir + '/nostore'], /is neither a chunkfs store nor a chunkfs mount point/],
  ];
  for (const [args, msg] of cases) {
    const r = await cli(args);
    t.not(r.code, 0, args.join(' '));
    t.regex(r.stderr, msg, args.join(' '));
  }
  const tooFew = await cli(['mkfs', fixture.dir + '/few', '--disks', '4', '--layout', 'ec:4+2']);
  t.not(tooFew.code, 0);
  t.regex(tooFew.stderr, /ec:4\+2|disks/);
  t.false(isMounted(fixture.dir + '/m'));
});

test.serial('mkfs with --disk paths, --layout, sizes; a second mkfs is refused', async (t) => {
  const disks = [0, 1, 2, 3, 4, 5].flatMap((i) => ['--disk', `${fixture.dir}/disk${i}`]);
  const r = await cli([
    'mkfs',
    fixture.dir + '/own',
    ...disks,
    '--layout',
    'ec:4+2',
    '--chunk-size',
    '8M',
    '--bitrot-block',
    '32K',
  ]);
  t.is(r.code, 0, r.stderr);
  const conf = JSON.parse(await fsp.readFile(fixture.dir + '/own/chunkfs.json', 'utf8'));
  t.is(JSON.stringify(conf).includes(`${fixture.dir}/disk5`), true);
  t.regex(JSON.stringify(conf), /ec:4\+2/);
  const again = await cli(['mkfs', fixture.dir + '/own']);
  t.is(again.code, 1);
  t.regex(again.stderr, /already holds a chunkfs store/);
  const nonEmpty = await cli(['mount', fixture.dir + '/own', fixture.dir]);
  t.is(nonEmpty.code, 1);
  t.regex(nonEmpty.stderr, /is not empty/);
  t.false(isMounted(fixture.dir));
});

test.serial('mount without <store> creates the embedded default store (6 disks, replica:3)', async (t) => {
  const env = { ...process.env, XDG_DATA_HOME: fixture.dir + '/xdg' };
  const m = fixture.track(
    await startMount({
      command: process.execPath,
      args: [CLI_JS, 'mount', fixture.dir + '/dm'],
      mountpoint: fixture.dir + '/dm',
      env,
      readyPattern: /^chunkfs: mounted /,
    }),
  );
  t.regex(m.readyLine, new RegExp(`mounted ${fixture.dir}/xdg/chunkfs/default on ${fixture.dir}/dm`));
  await shOk(`echo hi > ${fixture.dir}/dm/f && cat ${fixture.dir}/dm/f`);
  const st = await cli(['status', fixture.dir + '/xdg/chunkfs/default', '--json']);
  t.is(st.code, 0, st.stderr);
  const report = JSON.parse(st.stdout);
  t.is(report.disks.length, 6);
  t.deepEqual(report.layoutsInUse, [{ layout: 'replica:3', files: 1 }]);
  for (const p of ['xdg/chunkfs', 'xdg/chunkfs/default', 'xdg/chunkfs/default/disks/d0']) {
    t.is((await fsp.stat(`${fixture.dir}/${p}`)).mode & 0o777, 0o700, `${p} is private (DESIGN §4)`);
  }
  const human = await cli(['status', fixture.dir + '/xdg/chunkfs/default']);
  t.regex(human.stdout, /disks: 6/);
  t.regex(human.stdout, /heal queue: 0 shards/);
  await m.stop();
});

test.serial('a live mount point is refused; umount ends the mount process', async (t) => {
  await mkfs(fixture.dir + '/s1');
  await fsp.chmod(fixture.dir + '/s1', 0o755); // made owner-only at the mount, which logs it
  const m = await fixture.mountAt(fixture.dir + '/s1', fixture.dir + '/m1');
  t.regex(
    m.output(),
    /^chunkfs: store \S+\/s1 was readable or writable by other users; made 1 path\(s\) owner-only/m,
    'one prefix',
  );
  t.notRegex(m.output(), /chunkfs: chunkfs:/);
  const second = await cli(['mount', fixture.dir + '/s1', fixture.dir + '/m1']);
  t.is(second.code, 1);
  t.regex(second.stderr, /already mounted \(a live mount\)/);
  await shOk(`echo data > ${fixture.dir}/m1/kept`);
  const u = await cli(['umount', fixture.dir + '/m1']);
  t.is(u.code, 0, u.stderr);
  for (let i = 0; i < 100 && !m.exited(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  t.true(m.exited(), 'mount process exits after umount');
  t.false(isMounted(fixture.dir + '/m1'));
});

test.serial('a stale mount point (server and auto-unmount helper killed) is recovered', async (t) => {
  const m = await fixture.mountAt(fixture.dir + '/s1', fixture.dir + '/m1');
  // kill the auto_unmount helper and the bind watchdog (cli/bind-watchdog.ts, bash) first, then
  // the server: the kernel mount stays, disconnected, as after a kill of the whole process group
  const children = childProcesses(m.child.pid!);
  const helpers = children.filter(([, comm]) => comm === 'fusermount' || comm === 'fusermount3');
  t.true(helpers.length > 0, 'auto_unmount helper found');
  const watchdogs = children.filter(([, comm]) => comm === 'bash');
  t.is(watchdogs.length, 1, 'the bind watchdog runs beside the mount');
  for (const [pid] of [...helpers, ...watchdogs]) process.kill(pid, 'SIGKILL');
  await m.kill9();
  t.true(isMounted(fixture.dir + '/m1'));
  const probe = await run('stat', [fixture.dir + '/m1']);
  t.regex(probe.stderr, /Transport endpoint is not connected/);
  const again = await fixture.mountAt(fixture.dir + '/s1', fixture.dir + '/m1');
  t.regex(again.output(), /stale mount/);
  t.is((await shOk(`cat ${fixture.dir}/m1/kept`)).trim(), 'data');
});

test.serial('SIGINT flushes buffered writes and unmounts cleanly', async (t) => {
  const m = fixture.mounts[fixture.mounts.length - 1];
  await shOk(
    `head -c 3000000 /dev/urandom > ${fixture.dir}/ref.bin && cp ${fixture.dir}/ref.bin ${fixture.dir}/m1/late.bin`,
  );
  m.child.kill('SIGINT');
  for (let i = 0; i < 150 && !m.exited(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  t.true(m.exited());
  t.is(m.child.exitCode, 0);
  t.false(isMounted(fixture.dir + '/m1'));
  const again = await fixture.mountAt(fixture.dir + '/s1', fixture.dir + '/m1');
  t.is((await run('cmp', [fixture.dir + '/ref.bin', path.join(fixture.dir, 'm1/late.bin')])).code, 0);
});

test.serial(
  'scrub: runs through a live mount; clean exits 0; a flipped byte is reported, repaired by --repair',
  async (t) => {
    const top = await cli(['--help']);
    t.regex(top.stdout, /scrub \[TARGET\] \[--repair \[--force\]\] \[--rate SIZE\/s\] \[--json\]/);
    await mkfs(fixture.dir + '/sc'); // replica:3
    const m = await fixture.mountAt(fixture.dir + '/sc', fixture.dir + '/msc');
    await shOk(
      `head -c 300000 /dev/urandom > ${fixture.dir}/sc.bin && cp ${fixture.dir}/sc.bin ${fixture.dir}/msc/f.bin && sync`,
    );
    const ino = Number((await shOk(`stat -c %i ${fixture.dir}/msc/f.bin`)).trim());
    const online = await cli(['scrub', fixture.dir + '/sc']);
    t.is(online.code, 0, online.stderr);
    t.regex(
      online.stdout,
      new RegExp(`chunkfs scrub: ${fixture.dir}/sc \\(mounted\\): 3 shards checked, 0 bad or missing`),
    );
    await m.stop();

    const clean = await cli(['scrub', fixture.dir + '/sc', '--json']);
    t.is(clean.code, 0, clean.stderr);
    const c = JSON.parse(clean.stdout);
    t.is(c.shardsChecked, 3);
    t.is(c.badFound, 0);

    const fileId = ino.toString(16).padStart(16, '0');
    const shard = (await shOk(`find ${fixture.dir}/sc -path '*/${fileId}.v*/c0/1.shard' -type f`)).trim();
    t.true(shard.length > 0 && !shard.includes('\n'), shard);
    const before = await fsp.readFile(shard);
    const flipped = Buffer.from(before);
    flipped[flipped.length - 5000] ^= 0x5a; // in the data, not the zero pad to 4 KiB (spec §2)
    await fsp.writeFile(shard, flipped);
    await fsp.chmod(path.dirname(shard), 0o755); // DESIGN §4: scrub reports what others could read

    const found = await cli(['scrub', fixture.dir + '/sc']);
    t.is(found.code, 1);
    t.regex(
      found.stdout,
      /3 shards checked, 1 bad or missing, 0 repaired, 0 unrecoverable, 1 path\(s\) with loose modes/,
    );
    t.regex(found.stderr, new RegExp(`/f.bin \\(file ${ino}\\) chunk 0 shard 1`));
    t.true(
      found.stderr.includes(
        `accessible to other users (run with --repair to make them owner-only): ${path.dirname(shard)} (0755)`,
      ),
      found.stderr,
    );
    const repaired = await cli(['scrub', fixture.dir + '/sc', '--repair']);
    t.is(repaired.code, 0, repaired.stderr);
    t.regex(repaired.stdout, /3 shards checked, 1 bad or missing, 1 repaired, 0 unrecoverable/);
    t.regex(repaired.stderr, /made 1 path\(s\) owner-only/);
    t.is((await fsp.stat(path.dirname(shard))).mode & 0o777, 0o700);
    // The rebuilt shard's header may differ (it is rewritten, spec §8.1); its data is the original's.
    const after = await fsp.readFile(shard);
    t.is(after.length, before.length);
    t.true(after.subarray(4096).equals(before.subarray(4096)), 'the shard data is rebuilt as it was');
    const again = await cli(['scrub', fixture.dir + '/sc']);
    t.is(again.code, 0, again.stdout + again.stderr);
    t.regex(again.stdout, /0 bad or missing/);
  },
);
