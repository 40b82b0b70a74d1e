// inject on an ec:4+2 file through a live mount (DESIGN §7): a corrupted data shard and two dropped
// shards are rebuilt from parity on read (counted as reconstructions); a third lost shard is beyond
// redundancy: EIO, and one log line naming the file.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, CLI_JS, run, shOk } from '../helpers/mount';

const shared = sharedMount(test, 'inject-ec', { mkfs: ['--disks', '6', '--layout', 'ec:4+2'] });
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 });

async function json(args: string[]): Promise<any> {
  const r = await cli([...args, '--json']);
  if (r.code !== 0) throw new Error(`chunkfs ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}
const readsBack = async (): Promise<boolean> =>
  (await run('cmp', [path.join(shared.dir, 'ref'), path.join(shared.mount.mountpoint, 'f')])).code === 0;

test.serial.before(async () => {
  await shOk(`head -c 3000000 /dev/urandom > ${shared.dir}/ref && cp ${shared.dir}/ref ${shared.dir}/mnt/f`);
});

test.serial(
  'ec:4+2: a corrupted data shard, then two lost shards, are rebuilt from parity; a third is beyond redundancy',
  async (t) => {
    const before = (await json(['status', shared.mount.mountpoint])).counters;
    const c = await json(['inject', 'corrupt', `${shared.dir}/mnt/f`, '--shard', '0', '--block', '2']);
    t.is(c.damage.shards, 6);
    // Every disk refuses to allocate: the healer cannot mend what the reads meet (drops still work).
    for (const d of c.damage.diskIds) await json(['inject', 'enospc', String(d), shared.mount.mountpoint]);
    t.true(await readsBack());
    const mid = (await json(['status', shared.mount.mountpoint])).counters;
    t.true(mid.bitrot_errors > before.bitrot_errors);
    t.true(mid.reconstructions > before.reconstructions);
    await json(['inject', 'drop', `${shared.dir}/mnt/f`, '--shard', '1']);
    t.true(await readsBack(), 'two of six shards lost: still readable');
    await json(['inject', 'drop', `${shared.dir}/mnt/f`, '--shard', '2']);
    const r = await run('cat', [`${shared.dir}/mnt/f`]);
    t.regex(r.stderr, /Input\/output error/);
    const lines = shared.mount
      .output()
      .split('\n')
      .filter((l) => l.startsWith('chunkfs: read /f: '));
    t.is(lines.length, 1);
    t.regex(
      lines[0],
      /UnrecoverableError: only \d of the 4 shards needed verify; failed shards \[0, 1, 2\] \(file \d+, chunk 0, version 1\)/,
    );
  },
);
