// Online scrub and heal through a live mount (DESIGN §7): progress lines on stderr (not a terminal),
// --json, --rate, --repair while the mount serves; the heal queue listed and drained; a shard the
// healer cannot rebuild is logged once however often it is retried; beyond redundancy a read fails
// with EIO and the mount logs one line naming the path, chunk and shards (no stack trace).
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, CLI_JS, chunkfsCli, chunkfsOk, run, shOk } from '../helpers/mount';

const shared = sharedMount(test, 'scrub-heal');
const cli = (args: string[]) => chunkfsCli(args);
const MB = 1 << 20;

const ok = (args: string[]) => chunkfsOk(args);
const injectJson = async (args: string[]): Promise<any> => JSON.parse(await ok(['inject', ...args, '--json']));
const readsBack = async (name: string): Promise<boolean> =>
  (await run('cmp', [path.join(shared.dir, 'ref'), path.join(shared.mount.mountpoint, name)])).code === 0;
const logLines = (re: RegExp): string[] =>
  shared.mount
    .output()
    .split('\n')
    .filter((l) => re.test(l));

test.serial.before(async () => {
  await shOk(
    `head -c ${12 * MB} /dev/urandom > ${shared.dir}/ref && cp ${shared.dir}/ref ${shared.dir}/mnt/f && cp ${shared.dir}/ref ${shared.dir}/mnt/g`,
  );
});

test.serial(
  'online scrub: progress lines, a clean report, then damage found (exit 1) and repaired with --repair while mounted',
  async (t) => {
    const clean = await cli(['scrub', shared.mount.mountpoint, '--rate', '200M/s']);
    t.is(clean.code, 0, clean.stderr);
    t.regex(
      clean.stdout,
      new RegExp(
        `^chunkfs scrub: ${shared.dir}/store \\(mounted\\): 18 shards checked, 0 bad or missing, 0 repaired, 0 unrecoverable`,
      ),
    );
    const progress = clean.stderr.split('\n').filter((l) => l.startsWith('chunkfs scrub: '));
    t.true(progress.length >= 2, clean.stderr);
    t.regex(progress[0], /^chunkfs scrub: 0% 0 B of 72\.0 MiB, .*\/s, ETA /);
    t.regex(progress[progress.length - 1], /^chunkfs scrub: 100% 72\.0 MiB of 72\.0 MiB, .*\/s, done$/);

    // Shard 2 is read last: only a scrub finds it.
    const d = await injectJson(['corrupt', `${shared.dir}/mnt/g`, '--chunk', '1', '--shard', '2', '--block', '7']);
    t.regex(d.message, /a read tries shard \d first, so only a scrub or a failover meets this one/);
    const found = await cli(['scrub', shared.dir + '/store', '--json']);
    t.is(found.code, 1);
    const r = JSON.parse(found.stdout);
    t.true(r.online);
    t.is(r.badFound, 1);
    t.deepEqual(r.bad, [{ ino: d.damage.ino, path: '/g', chunkIndex: 1, shardIndex: 2 }]);
    t.regex(found.stderr, /bad or missing \(queued for heal; run with --repair\): \/g \(file \d+\) chunk 1 shard 2/);
    const fixed = await cli(['scrub', shared.mount.mountpoint, '--repair']);
    t.is(fixed.code, 0, fixed.stderr);
    t.regex(fixed.stdout, /18 shards checked, (0|1) bad or missing, (0|1) repaired, 0 unrecoverable/); // the background healer may have been first
    t.regex(await ok(['scrub', shared.mount.mountpoint]), /18 shards checked, 0 bad or missing/);
    t.true(await readsBack('g'));
  },
);

test.serial('on a terminal the progress is a bar (cli-progress) with rate and ETA', async (t) => {
  // script(1) gives the command a pseudo-terminal.
  const r = await run(
    'script',
    ['-qec', `${process.execPath} ${CLI_JS} scrub ${shared.mount.mountpoint}`, '/dev/null'],
    { timeoutMs: 120_000 },
  );
  t.is(r.code, 0, r.stdout);
  t.regex(r.stdout, /chunkfs scrub \[=+\] 100% 72\.0 MiB of 72\.0 MiB, .*\/s, done/);
  t.regex(r.stdout, /18 shards checked, 0 bad or missing/);
});

test.serial(
  'heal: a shard that cannot be rebuilt stays queued, is listed, and is logged once; once possible, chunkfs heal rebuilds it',
  async (t) => {
    const d = await injectJson(['corrupt', `${shared.dir}/mnt/f`, '--chunk', '2']);
    const disk = d.damage.diskId;
    // Its disk refuses writes: the rebuilt shard cannot be written back.
    await ok(['inject', 'enospc', String(disk), shared.mount.mountpoint]);
    t.true(await readsBack('f'), 'served around the damaged shard');
    for (let i = 0; i < 2; i++) {
      const h = await cli(['heal', shared.mount.mountpoint]);
      t.is(h.code, 1);
      t.regex(
        h.stderr,
        new RegExp(`cannot rebuild /f \\(file ${d.damage.ino}\\) chunk 2 shard ${d.damage.shardIndex}: .*ENOSPC`),
      );
    }
    const list = await ok(['heal', '--list', shared.mount.mountpoint]);
    t.regex(list, /: 1 shard\(s\)\n/);
    t.regex(
      list,
      new RegExp(
        `/f \\(file ${d.damage.ino}\\) chunk 2 shard ${d.damage.shardIndex}: [2-9] failed attempt\\(s\\), next try (in|now).*queued for: bitrot`,
      ),
    );
    const listed = JSON.parse(await ok(['heal', '--list', '--json', shared.dir + '/store']));
    t.is(listed.queueLength, 1);
    t.is(listed.entries[0].path, '/f');
    t.is(logLines(/heal: cannot rebuild .* chunk 2 shard/).length, 1, 'one line however many attempts');

    await ok(['inject', '--clear', shared.mount.mountpoint]);
    const healed = await cli(['heal', shared.mount.mountpoint, '--json']);
    t.is(healed.code, 0, healed.stderr);
    const h = JSON.parse(healed.stdout);
    t.is(h.failed.length, 0);
    t.is(h.queueLength, 0);
    t.is(h.healed + h.alreadyGood, h.tried);
    t.regex(await ok(['heal', '--list', shared.mount.mountpoint]), /: 0 shard\(s\)\n$/);
    t.is(logLines(/heal: rebuilt .* chunk 2 shard .* after \d+ failed attempt\(s\)/).length, 1);
    t.regex(await ok(['scrub', shared.mount.mountpoint]), /0 bad or missing/);
  },
);

test.serial(
  'beyond redundancy: EIO, one log line naming the path, chunk and shards, no stack; scrub names it unrecoverable',
  async (t) => {
    for (const shard of ['0', '1', '2'])
      await ok(['inject', 'corrupt', `${shared.dir}/mnt/g`, '--chunk', '0', '--shard', shard, '--block', '0']);
    for (let i = 0; i < 3; i++) {
      const r = await run('cat', [`${shared.dir}/mnt/g`]);
      t.not(r.code, 0);
      t.regex(r.stderr, /Input\/output error/);
    }
    const lines = logLines(/read \/g:/);
    t.is(lines.length, 1, shared.mount.output());
    t.regex(
      lines[0],
      /^chunkfs: read \/g: UnrecoverableError: no replica of .* verifies \(shard \d bitrot, \d bitrot, \d bitrot\); failed shards \[.*\] \(file \d+, chunk 0, version \d+\)$/,
    );
    t.false(shared.mount.output().includes('    at '), 'no stack trace');
    // Without --repair too: unrecoverable, naming the file and chunk, and not "queued for heal".
    const s = await cli(['scrub', shared.mount.mountpoint]);
    t.is(s.code, 1);
    t.regex(s.stdout, /3 bad or missing, 0 repaired, 3 unrecoverable/);
    t.regex(
      s.stderr,
      /unrecoverable: \/g \(file \d+\) chunk 0 shards 0,1,2: no replica verifies \(all 3 bad or missing\)/,
    );
    t.notRegex(s.stderr, /queued for heal/);
    const r = await cli(['scrub', shared.mount.mountpoint, '--repair']);
    t.is(r.code, 1);
    t.regex(r.stdout, /3 bad or missing, 0 repaired, 3 unrecoverable/);
    t.regex(r.stderr, /unrecoverable: \/g \(file \d+\) chunk 0 shards? 0[,:].*no other replica verifies/);
    const st = JSON.parse(await ok(['status', shared.mount.mountpoint, '--json']));
    t.true(st.counters.unrecoverable_reads >= 1);
  },
);

test.serial(
  'unmounting during an online scrub: the scrub is cancelled, the client told, the mount exits cleanly',
  async (t) => {
    const { spawn } = await import('node:child_process');
    // 1 MiB/s over 72 MiB of shards: still running when the mount is told to stop.
    const scrub = spawn(process.execPath, [CLI_JS, 'scrub', shared.mount.mountpoint, '--rate', '1M/s'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.teardown(() => {
      if (scrub.exitCode === null) scrub.kill('SIGKILL');
    });
    let err = '';
    scrub.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    const exited = new Promise<number | null>((resolve) => scrub.on('exit', (code) => resolve(code)));
    for (let i = 0; i < 100 && !err.includes('chunkfs scrub: 0%'); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    t.regex(err, /chunkfs scrub: 0%/, 'the scrub started');
    await shared.mount.stop();
    t.is(shared.mount.child.exitCode, 0, shared.mount.output());
    t.is(await exited, 1);
    t.regex(err, /the mount closed the control connection without an answer/);
  },
);
