// `chunkfs inject` against a live mount (DESIGN §7): every fault kind, then a read through the mount
// returns the right bytes and `chunkfs status` counts what was served around; bad arguments get a
// clear error and change nothing.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, CLI_JS, healDrained, run, sh, shOk } from '../helpers/mount';

const shared = sharedMount(test, 'inject'); // replica:3 on 6 disks
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 });
const MB = 1 << 20;

async function ok(args: string[]): Promise<string> {
  const r = await cli(args);
  if (r.code !== 0) throw new Error(`chunkfs ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}
const injectJson = async (args: string[]): Promise<any> => JSON.parse(await ok(['inject', ...args, '--json']));
const status = async (): Promise<any> => JSON.parse(await ok(['status', shared.mount.mountpoint, '--json']));
const counters = async (): Promise<Record<string, number>> => (await status()).counters;
/** Every shard file with its size and mtime: any change to the store's shards shows here. */
const shardListing = async (): Promise<string> =>
  shOk(`find ${shared.dir}/store/disks -name '*.shard' -printf '%p %s %T@\\n' | sort`);
/**
 * Read the whole file through the mount and compare. Its pages are dropped from the kernel's cache
 * first (dd nocache: POSIX_FADV_DONTNEED), since the mount keeps an unchanged file's cache across opens.
 */
const readsBack = async (name: string): Promise<boolean> => {
  const file = path.join(shared.mount.mountpoint, name);
  await shOk(`dd if=${file} iflag=nocache count=0 status=none`);
  const r = await run('cmp', [path.join(shared.dir, 'ref'), file]);
  // What differed, and what the mount said, for the failure's report.
  if (r.code !== 0) console.error(`readsBack ${name}: ${r.stdout}${r.stderr}\n${shared.mount.output().slice(-3000)}`);
  return r.code === 0;
};

test.serial.before(async () => {
  // 4 chunks of 4 MiB: one chunk per damage kind, so the healer mending one never races the next.
  await shOk(`head -c ${16 * MB - 12345} /dev/urandom > ${shared.dir}/ref && cp ${shared.dir}/ref ${shared.dir}/mnt/f`);
});

test.serial('bad arguments get a clear error, exit non-zero, and change nothing', async (t) => {
  const before = await shardListing();
  const f = `${shared.dir}/mnt/f`;
  const cases: Array<[string[], RegExp]> = [
    [[], /name what to inject first/],
    [['frobnicate'], /name what to inject first/],
    [['corrupt'], /corrupt needs a FILE/],
    [['corrupt', f, '--what', 'bits'], /--what: 'bits' is not data, hash or header/],
    [['corrupt', f, '--chunk', 'x'], /--chunk: 'x' is not a whole number/],
    [['corrupt', f, '--what', 'header', '--block', '1'], /--block does not apply to --what header/],
    [['corrupt', f, '--chunk', '99'], /has no stored chunk 99/],
    [['corrupt', f, '--shard', '3'], /shard 3 is out of range: layout replica:3 has shards 0\.\.2/],
    [['corrupt', f, '--block', '256'], /block 256 is out of range: the shard has 256 block\(s\)/],
    [['corrupt', `${shared.dir}/mnt/nothing`], /\/nothing: no such file in the store/],
    [['drop', `${shared.dir}/mnt`], /name a regular file, not the root directory/],
    [['corrupt', 'relative/f'], /is not inside a chunkfs mount/],
    [['eio', '99', shared.mount.mountpoint], /no disk 99 in this store \(disks: 0, 1, 2, 3, 4, 5\)/],
    [['eio', '1', '--ops', 'sideways', shared.mount.mountpoint], /--ops: 'sideways' is not read, write or all/],
    [['eio', '1', '--for', '5x', shared.mount.mountpoint], /--for: '5x' is not a duration/],
    [['eio', '1', '--count', '0', shared.mount.mountpoint], /--count: 0 is out of range/],
    [['latency', '1', shared.mount.mountpoint], /latency needs --ms N/],
    [['offline', shared.mount.mountpoint], /DISK: '.*' is not a whole number/],
    [['online', '2', shared.mount.mountpoint], /disk 2 is not held offline by inject/],
    [['--clear', '--id', '42', shared.mount.mountpoint], /no fault #42/],
    [['--list', '--clear', shared.mount.mountpoint], /use either --list or --clear/],
    [['eio', '1', shared.mount.mountpoint, 'extra'], /unexpected argument 'extra'/],
    [['eio', '1', shared.dir + '/store/disks'], /is neither a chunkfs store nor a chunkfs mount point/],
  ];
  for (const [args, msg] of cases) {
    const r = await cli(['inject', ...args]);
    t.not(r.code, 0, args.join(' '));
    t.regex(r.stderr, msg, args.join(' '));
  }
  t.is(await shardListing(), before, 'no shard file changed');
  t.deepEqual((await injectJson(['--list', shared.mount.mountpoint])).faults, []);
  const help = await cli(['inject', '--help']);
  t.is(help.code, 0);
  t.regex(help.stdout, /usage: chunkfs inject corrupt FILE/);
});

test.serial(
  'corrupt a data block, a hash entry, the header; drop a shard: reads are right, each kind is counted',
  async (t) => {
    const kinds: Array<[string[], string]> = [
      [['corrupt', '--chunk', '0', '--block', '5'], 'bitrot_errors'],
      [['corrupt', '--chunk', '1', '--what', 'hash', '--block', '0'], 'bitrot_errors'],
      [['corrupt', '--chunk', '2', '--what', 'header'], 'header_mismatches'],
      [['drop', '--chunk', '3'], 'missing_shards'],
    ];
    for (const [args, counter] of kinds) {
      const before = await counters();
      const r = await injectJson([args[0], `${shared.dir}/mnt/f`, ...args.slice(1)]);
      t.is(r.damage.file, '/f');
      t.is(r.damage.shardIndex, r.damage.readOrder[0], 'without --shard: the shard a read tries first');
      t.true(r.damage.path.startsWith(`${shared.dir}/store/disks/`), r.damage.path);
      t.regex(r.message, /; a read tries this shard first$/);
      t.true(await readsBack('f'), `${args.join(' ')}: the file reads back right`);
      const after = await counters();
      t.true(after[counter] > before[counter], `${args.join(' ')} counted in ${counter}`);
      t.true(after.failovers > before.failovers, `${args.join(' ')} was served by a failover`);
    }
  },
);

test.serial(
  'a dropped shard is counted once however often it is read; the reads served around it are counted apart',
  async (t) => {
    t.is(await healDrained(shared.mount.mountpoint), 0);
    const before = await counters();
    await injectJson(['drop', `${shared.dir}/mnt/f`, '--chunk', '1']);
    // Each read of the file sends the chunk to the store in several requests: each one meets the lost shard.
    for (let i = 0; i < 4; i++) t.true(await readsBack('f'));
    const after = await counters();
    t.is(after.missing_shards - before.missing_shards, 1, 'one damaged shard');
    t.true(after.reads_served_around - before.reads_served_around >= 1, JSON.stringify(after));
  },
);

test.serial(
  'EIO on a disk for N operations: reads fail over and count io_errors; the fault ends after its count',
  async (t) => {
    // Shard 2 is read last; the EIO goes to the disk a read of chunk 0 tries first.
    const r = await injectJson(['corrupt', `${shared.dir}/mnt/f`, '--chunk', '0', '--shard', '2']);
    const disk = r.damage.diskIds[r.damage.readOrder[0]];
    t.is(
      await healDrained(shared.mount.mountpoint),
      0,
      'the earlier damage is healed: no healer read spends the fault',
    );
    const before = await counters();
    const set = await injectJson(['eio', String(disk), '--ops', 'read', '--count', '2', shared.mount.mountpoint]);
    t.regex(
      set.message,
      new RegExp(`fault #\\d+: disk ${disk} .* fails with EIO each read operation for the next 2 operation\\(s\\)`),
    );
    t.true(await readsBack('f'));
    t.true((await counters()).io_errors > before.io_errors);
    t.deepEqual((await injectJson(['--list', shared.mount.mountpoint])).faults, [], 'spent after 2 operations');
  },
);

test.serial('ENOSPC on every disk: writing a new file fails with ENOSPC; after --clear it works', async (t) => {
  for (let d = 0; d < 6; d++) await ok(['inject', 'enospc', String(d), shared.mount.mountpoint]);
  t.is((await injectJson(['--list', shared.mount.mountpoint])).faults.length, 6);
  const w = await sh(`cp ${shared.dir}/ref ${shared.dir}/mnt/g`);
  t.not(w.code, 0);
  t.regex(w.stderr, /No space left on device/);
  t.regex(await ok(['inject', '--clear', shared.mount.mountpoint]), /cleared 6 fault\(s\)/);
  await shOk(`cp ${shared.dir}/ref ${shared.dir}/mnt/g`);
  t.true(await readsBack('g'));
});

test.serial('latency: reads stay right and the fault counts its hits; --clear ends it', async (t) => {
  const r = await injectJson(['corrupt', `${shared.dir}/mnt/g`, '--chunk', '2', '--shard', '2']);
  const first = r.damage.diskIds[r.damage.readOrder[0]];
  const set = await injectJson(['latency', String(first), '--ms', '20', '--for', '10m', shared.mount.mountpoint]);
  t.regex(set.message, /adds 20 ms to every operation for 600000 ms/);
  t.true(await readsBack('g'));
  const listed = (await injectJson(['--list', shared.mount.mountpoint])).faults;
  t.is(listed.length, 1);
  t.is(listed[0].kind, 'latency');
  t.true(listed[0].hits > 0);
  t.true(listed[0].remainingMs > 0);
  const text = await ok(['status', shared.mount.mountpoint]);
  t.regex(
    text,
    new RegExp(
      `injected faults: 1\\n  #${listed[0].id} disk ${first}: latency \\+20 ms on all ops, \\d+ hits?, \\d+ s left`,
    ),
  );
  await ok(['inject', '--clear', '--id', String(listed[0].id), shared.mount.mountpoint]);
  t.deepEqual((await injectJson(['--list', shared.mount.mountpoint])).faults, []);
});

test.serial(
  'offline and online: status names the offline disk and why; reads are served around; online brings it back',
  async (t) => {
    const r = await injectJson(['corrupt', `${shared.dir}/mnt/g`, '--chunk', '3', '--shard', '2']);
    const disk = r.damage.diskIds[r.damage.readOrder[0]];
    // No heal of earlier damage in flight while the disk goes: the reads below meet one failure each.
    t.is(await healDrained(shared.mount.mountpoint), 0, 'the earlier damage is healed');
    const set = await injectJson(['offline', String(disk), shared.mount.mountpoint]);
    t.regex(set.message, /is offline: every operation on it fails with ENODEV/);
    const again = await cli(['inject', 'offline', String(disk), shared.mount.mountpoint]);
    t.regex(again.stderr, /already held offline/);
    const s = await status();
    const d = s.disks.find((x: any) => x.id === disk);
    t.is(d.state, 'offline');
    t.regex(d.lastError, new RegExp(`disk ${disk} at .* is offline: its directory cannot be examined \\(ENODEV\\)`));
    const before = await counters();
    t.true(await readsBack('g'));
    t.true(await readsBack('f'));
    t.true(
      (await counters()).reads_served_around > before.reads_served_around,
      'reads around the offline disk are counted',
    );
    const back = await injectJson(['online', String(disk), shared.mount.mountpoint]);
    t.regex(back.message, new RegExp(`disk ${disk} is back \\(state ok\\)`));
    t.is((await status()).disks.find((x: any) => x.id === disk).state, 'ok');
  },
);
