// A mounted store with its metadata on PostgreSQL (DESIGN §9), through the same path users
// take: `chunkfs mkfs --meta`, the mount, cp and tar; then kill -9 of the mount during fsync'd writes
// and a remount: every fsync-acknowledged record is there (DESIGN §5 on PostgreSQL: the commit point
// at fsync, store/meta/postgres/commit-point.ts); and fail-over to a second mount process of the same
// store with its own mount point (DESIGN §9 lease). The cluster is a throwaway one (test/helpers/pg-cluster.ts).
import test, { ExecutionContext } from 'ava';
import * as path from 'node:path';
import { storeFixture, mkfs, run, sh, shOk, chunkfsOk, CLI_JS, PYTHON, ChunkfsMount } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';
import { RECORD_BYTES, badRecords, writeRecordsUntilKilled } from '../helpers/acked-writer';
import { PgCluster, pgUnavailableReason, privateCluster } from '../helpers/pg-cluster';
import { otherMachineStoreDir } from '../helpers/other-machine';

const ACKS_BEFORE_KILL = 60;
const unavailable = pgUnavailableReason();

let cluster: PgCluster | null = null;
const fixture = storeFixture(test, 'pgmeta', { mkfs: false });
test.after.always(() => cluster?.stop());
// A test that fails halfway leaves no mount for the next one to trip over (each mounts afresh).
test.serial.afterEach.always(() => fixture.stopAll());

if (unavailable !== null) {
  test('PostgreSQL mount tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial('cp and tar round trip on a store whose metadata is on PostgreSQL', async (t) => {
    cluster = privateCluster(); // paused and resumed below: not the run's shared cluster
    await mkfs(fixture.store, ['--disks', '4', '--layout', 'replica:2', '--meta', cluster.createDatabase('mounted')]);
    const m = await fixture.mount();
    // chunkfs status (through the mount's control socket): the engine, and the mount holding the lease.
    const status = await chunkfsOk(['status', fixture.store]);
    t.regex(
      status,
      new RegExp(`metadata: postgres postgresql:///mounted\\?host=.*; lease: \\S+ pid ${m.child.pid} \\(mount `),
    );
    const src = path.join(REPO_ROOT, 'store');
    await shOk(
      `cp -a ${src} ${m.mountpoint}/cp && mkdir ${m.mountpoint}/tar && tar -C ${src} -cf - . | tar -C ${m.mountpoint}/tar -xf -`,
    );
    await shOk(`diff -r ${src} ${m.mountpoint}/cp && diff -r ${src} ${m.mountpoint}/tar`);
    const names = await shOk(`cd ${m.mountpoint}/tar && find . | sort | md5sum && cd ${src} && find . | sort | md5sum`);
    const [a, b] = names.trim().split('\n');
    t.is(a, b, 'the same names');
    await m.stop();
    const again = await fixture.mount();
    await shOk(`diff -r ${src} ${again.mountpoint}/cp`);
    await again.stop();
    t.pass();
  });

  test.serial("kill -9 during fsync'd writes, remount: every acknowledged record is there", async (t) => {
    const m = await fixture.mount();
    const acked = await writeUntilKilled(m, path.join(m.mountpoint, 'log.bin'));
    t.true(acked >= ACKS_BEFORE_KILL, `acks ${acked}`);
    const again = await fixture.mount();
    t.is(await badRecords(path.join(again.mountpoint, 'log.bin'), acked), '0 []');
    await again.stop();
  });

  test.serial(
    "the PostgreSQL server stopped under a live mount: operations fail with EIO (or are answered from what the kernel caches), nothing fsync'd is lost, and the mount carries on once it is back",
    async (t) => {
      const m = await fixture.mount();
      const mp = m.mountpoint;
      const src = path.join(REPO_ROOT, 'package-lock.json');
      await shOk(`cp ${src} ${mp}/before && sync ${mp}/before`);
      const acked = await writeRecordsWhileUp(path.join(mp, 'records.bin'));
      cluster!.pause();
      try {
        await opsWhileDown(t, mp, src, m);
      } finally {
        cluster!.resume();
      }
      const back = await sh(
        `t0=$(date +%s%N) && timeout 60 bash -c 'until touch ${mp}/after 2>/dev/null && sync ${mp}/after 2>/dev/null; do sleep 0.05; done' && echo $(( ($(date +%s%N) - t0) / 1000000 ))`,
        { timeoutMs: 90_000 },
      );
      t.is(back.code, 0, `the mount did not carry on after the server came back:\n${m.output()}`);
      t.log(
        `ms from the server accepting connections again to a create and fsync through the mount: ${back.stdout.trim()}`,
      );
      await shOk(
        `cmp ${src} ${mp}/before && mkdir ${mp}/d2 && cp ${src} ${mp}/d2/copy && sync ${mp}/d2/copy && cmp ${src} ${mp}/d2/copy`,
      );
      t.is(await badRecords(path.join(mp, 'records.bin'), acked), '0 []');
      await m.stop();
      const again = await fixture.mount();
      await shOk(
        `cmp ${src} ${again.mountpoint}/before && cmp ${src} ${again.mountpoint}/d2/copy && [ -e ${again.mountpoint}/after ]`,
      );
      t.is(await badRecords(path.join(again.mountpoint, 'records.bin'), acked), '0 []');
      await again.stop();
    },
  );

  test.serial(
    "fail-over (DESIGN §9): a second mount of the store from another store directory is refused naming the holder; after kill -9 of the holder it takes over with every fsync'd record",
    async (t) => {
      // "Another machine that sees the same disk directories": its own store directory (config and keys)
      // naming the same disks and database, and its own mount point.
      const other = path.join(fixture.dir, 'other');
      await otherMachineStoreDir(fixture.store, other);
      const m = await fixture.mount();
      const refused = await run(process.execPath, [CLI_JS, 'mount', other, path.join(fixture.dir, 'mnt2')], {
        timeoutMs: 60_000,
      });
      t.not(refused.code, 0);
      t.regex(refused.stderr, new RegExp(`open read-write by \\S+ pid ${m.child.pid} \\(mount `));
      const acked = await writeUntilKilled(m, path.join(m.mountpoint, 'failover.bin'));
      const second = await fixture.mountAt(other, path.join(fixture.dir, 'mnt2'));
      t.is(await badRecords(path.join(second.mountpoint, 'failover.bin'), acked), '0 []');
      t.regex(await chunkfsOk(['status', other]), new RegExp(`lease: \\S+ pid ${second.child.pid} \\(mount `));
      t.regex(second.output(), /^chunkfs: took over the lease of /m, 'one prefix');
      t.notRegex(second.output(), /chunkfs: chunkfs:/);
      await second.stop();
    },
  );
}

/** Through the mount while the server is down: each op ends (no hang) and works or says EIO; the mount stays. */
async function opsWhileDown(t: ExecutionContext, mp: string, src: string, m: ChunkfsMount): Promise<void> {
  // Each one ends (no hang), and either works or says EIO; the mount process stays.
  const whileDown = [
    'stat M/before',
    'ls M',
    `cmp ${src} M/before`,
    'touch M/new',
    'echo x > M/new2',
    'mkdir M/d',
    'sync M/before',
  ];
  const outcomes: string[] = [];
  for (const c of whileDown) {
    const r = await sh(c.replace(/\bM\//g, `${mp}/`).replace(/ M$/, ` ${mp}`), { timeoutMs: 120_000 });
    outcomes.push(`${c}: ${r.code === 0 ? 'ok' : r.stderr.trim().split('\n').pop()!.replace(mp, 'M')}`);
    if (r.code !== 0) t.regex(r.stderr, /Input\/output error/, c);
  }
  t.log(`while the server was down: ${outcomes.join('; ')}`);
  t.regex(
    outcomes.join('\n'),
    /touch M\/new: .*Input\/output error/,
    'a change fails while the metadata cannot be written',
  );
  t.false(m.exited(), 'the mount is still serving');
  // Its log says what failed in words: one prefix, no stack frame, no internal names (DESIGN §7 logs).
  const log = m.output();
  t.regex(
    log,
    /^chunkfs: \w+ \/\S*: MetadataError: metadata database \(PostgreSQL\): the connection to \S+ was lost/m,
    log,
  );
  t.notRegex(log, /chunkfs: chunkfs:|\(at |^\s+at |PgDb|PgError/m, log);
}

/** fsync'd records appended to file (python) until ACKS_BEFORE_KILL are acknowledged; the last ack. */
async function writeRecordsWhileUp(file: string): Promise<number> {
  const r = await run(
    PYTHON,
    [
      '-c',
      `
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for i in range(${ACKS_BEFORE_KILL} + 1):
    os.pwrite(fd, (b'%08d' % i) * ${RECORD_BYTES / 8}, i * ${RECORD_BYTES})
    os.fsync(fd)
print(${ACKS_BEFORE_KILL})
`,
      file,
    ],
    { timeoutMs: 120_000 },
  );
  if (r.code !== 0) throw new Error(r.stderr);
  return Number(r.stdout.trim());
}

function writeUntilKilled(m: ChunkfsMount, file: string): Promise<number> {
  return writeRecordsUntilKilled(m, file, ACKS_BEFORE_KILL);
}
