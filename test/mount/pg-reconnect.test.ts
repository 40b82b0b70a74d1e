// A broken connection to the metadata server is a crash of the metadata (DESIGN §9), through the
// path users take: a mount on PostgreSQL while a writer appends fsync'd records. The mount's server
// sessions are killed (pg_terminate_backend), or the server crashes (pg_ctl stop -m immediate: its
// unflushed WAL is lost) and starts again. Operations in flight fail with EIO, the next ones work;
// every record whose fsync returned reads back; a file written before a crash that may have lost
// commits answers its next fsync with EIO (never a silent success), then fsyncs again; the mount
// reconnected on its own, took the lease again in a new epoch, logged one line per reconnection and
// counts them in `chunkfs status`; the kernel shows what the database holds (no stale entry): the
// live mount lists what a fresh mount lists. While the server is down `chunkfs status` still answers,
// degraded (exit 1): the disks, the mount, the metadata unreachable since when and why, the database's
// fields unknown. The cluster is a throwaway one (test/helpers/pg-cluster.ts).
import test, { ExecutionContext } from 'ava';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { storeFixture, mkfs, sh, shOk, chunkfsCli, chunkfsOk, PYTHON, ChunkfsMount } from '../helpers/mount';
import { PgCluster, pgUnavailableReason, privateCluster } from '../helpers/pg-cluster';
import { RecordWriter, badAcked } from '../helpers/record-writer';

/** Acks the writer makes before, between and after the breaks. */
const ACKS_BETWEEN = 20;
/** Times the mount's sessions are killed in the first test. */
const TERMINATIONS = 3;
/** Files created (not fsync'd) just before the crash: some may be lost with the server's unflushed WAL. */
const UNSYNCED_FILES = 50;
const unavailable = pgUnavailableReason();

let cluster: PgCluster | null = null;
const fixture = storeFixture(test, 'pgreconn', { mkfs: false });
test.after.always(() => cluster?.stop());
test.serial.afterEach.always(() => fixture.stopAll());

const KILL_SESSIONS_SQL =
  'SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()';

/** The lease epoch `chunkfs status` shows. */
async function leaseEpoch(store: string): Promise<number> {
  const m = /epoch (\d+)/.exec(await chunkfsOk(['status', store]));
  return m === null ? -1 : Number(m[1]);
}

/** The metadata reconnections `chunkfs status` counts. */
async function reconnects(store: string): Promise<number> {
  const m = /meta_reconnects: (\d+)/.exec(await chunkfsOk(['status', store]));
  return m === null ? -1 : Number(m[1]);
}

/** The writer's errors, the first few named. */
function errorsText(w: RecordWriter): string {
  return `${w.errors.length} errors (${w.errors.slice(0, 5).join(', ')}${w.errors.length > 5 ? ', ...' : ''})`;
}

/** Lines of the mount's log saying it reconnected. */
function reconnectLines(m: ChunkfsMount): string[] {
  return m
    .output()
    .split('\n')
    .filter((l) => /reconnected to the metadata database/.test(l));
}

/** Polls of the mount's log (LOG_POLL_MS apart) until it says it reconnected. */
const LOG_POLLS_MAX = 1200;
const LOG_POLL_MS = 50;

/** Resolves once the mount's log says it reconnected n times. */
async function logged(m: ChunkfsMount, n: number): Promise<void> {
  for (let i = 0; i < LOG_POLLS_MAX; i++) {
    if (reconnectLines(m).length >= n) return;
    await new Promise((resolve) => setTimeout(resolve, LOG_POLL_MS));
  }
  throw new Error(`the mount did not reconnect ${n} times:\n${m.output()}`);
}

/** A create and fsync through the mount, tried until it works (the first ones may meet the break); tries made. */
async function createAndSync(m: ChunkfsMount, file: string): Promise<number> {
  const r = await sh(
    `n=0; until n=$((n+1)); touch ${file} 2>/dev/null && sync ${file} 2>/dev/null; do [ $n -ge 600 ] && exit 1; sleep 0.1; done; echo $n`,
    { timeoutMs: 120_000 },
  );
  if (r.code !== 0)
    throw new Error(`${file}: no create and fsync worked: ${r.stderr}\nthe mount's log:\n${m.output()}`);
  return Number(r.stdout.trim());
}

/**
 * `chunkfs status` while the metadata server is down: through the mount it reports the disks, the
 * mount and the intent log, says since when and why the server is unreachable and that it is dialled
 * again, shows the database's fields as unknown (null in JSON, never zeros), and exits 1; on a store
 * not mounted, one line naming the server.
 */
async function statusWhileDown(t: ExecutionContext, mp: string, offline: string): Promise<void> {
  const text = await chunkfsCli(['status', mp]);
  t.log(`chunkfs status while the server is down (exit ${text.code}):\n${text.stdout}${text.stderr}`);
  t.is(text.code, 1, text.stderr);
  t.regex(text.stdout, /^disks: 4$/m);
  t.regex(text.stdout, new RegExp(`mounted on ${mp} \\(pid ${String(/pid (\d+)/.exec(text.stdout)?.[1])}`));
  t.regex(
    text.stdout,
    new RegExp(
      '^metadata: postgres \\S+: unreachable since \\d\\d:\\d\\d:\\d\\d UTC \\(.+\\), ' +
        'reconnecting \\(\\d+ attempts?\\); meta_reconnects: 0; meta_crashes: \\d+$',
      'm',
    ),
  );
  t.regex(text.stdout, /^heal queue: unknown \(metadata unreachable\); reclaim backlog: unknown/m);
  t.regex(text.stdout, /^counters: unknown \(metadata unreachable\)$/m);
  t.regex(text.stderr, /^chunkfs status: the metadata server \S+ is unreachable since [^\n]+\n$/);
  const json = await chunkfsCli(['status', mp, '--json']);
  t.is(json.code, 1, json.stderr);
  const r = JSON.parse(json.stdout) as Record<string, any>;
  t.is(r.disks.length, 4);
  t.truthy(r.mount);
  t.like(r, {
    layoutsInUse: null,
    transformedChunks: null,
    healQueueLength: null,
    openIntents: null,
    reclaimBacklog: null,
    containers: null,
    counters: null,
  });
  t.like(r.metadata, { engine: 'postgres', lease: null, unreachable: { reconnecting: true } });
  t.true(r.metadata.unreachable.attempts >= 0 && r.metadata.unreachable.reason !== '', JSON.stringify(r.metadata));
  const off = await chunkfsCli(['status', offline]);
  t.log(`chunkfs status of a store not mounted (exit ${off.code}): ${off.stdout}${off.stderr}`);
  t.is(off.code, 1);
  t.is(off.stdout, '');
  t.regex(off.stderr, /^chunkfs status: [^\n]*postgres[^\n]*\n$/, 'one line naming the server');
}

async function mountFresh(t: ExecutionContext, name: string): Promise<ChunkfsMount> {
  // Crashed and restarted: not the run's shared cluster. The WAL writer flushes what commits left in
  // its buffers every 10 s, not 0.2 s: a crash then loses what the mount committed since its last
  // full commit (fsync or its 5 s timer), as the test wants to see.
  cluster ??= privateCluster({ wal_writer_delay: '10s' });
  await mkfs(fixture.store, ['--disks', '4', '--layout', 'replica:2', '--meta', cluster.createDatabase(name)]);
  const m = await fixture.mount();
  t.teardown(() => m.stop());
  return m;
}

if (unavailable !== null) {
  test('PostgreSQL reconnect tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial(
    "the mount's sessions killed (pg_terminate_backend) during fsync'd writes: it reconnects, re-takes the lease, nothing fsync'd is lost",
    async (t) => {
      const m = await mountFresh(t, 'terminated');
      const mp = m.mountpoint;
      await shOk(
        `head -c 300000 /dev/urandom > ${mp}/before && sync ${mp}/before && sha256sum < ${mp}/before > ${fixture.dir}/before.sum`,
      );
      const epoch0 = await leaseEpoch(fixture.store);
      const w = new RecordWriter(path.join(mp, 'records.bin'), path.join(fixture.dir, 'stop-terminated'));
      const backMs: number[] = [];
      try {
        await w.waitAcks(ACKS_BETWEEN);
        for (let i = 0; i < TERMINATIONS; i++) {
          const seen = reconnectLines(m).length;
          const killedMs = Date.now();
          t.not(cluster!.query('terminated', KILL_SESSIONS_SQL).trim(), '0', 'the mount had sessions');
          // Found by the writer's next statement or by a timer's (lease renewal, follower check): either way once.
          await logged(m, seen + 1);
          backMs.push(Date.now() - killedMs);
          await w.waitAcks(ACKS_BETWEEN);
        }
      } finally {
        await w.stop();
      }
      t.log(
        `writer: ${w.acked.length} acks, ${errorsText(w)}; ms from each kill to the mount reconnected: ${backMs.join(', ')}`,
      );
      t.true(
        w.errors.every((e) => / EIO$/.test(e)),
        errorsText(w),
      );
      t.is(await badAcked(path.join(mp, 'records.bin'), w.acked), '0 []');
      await createAndSync(m, `${mp}/after`);
      await shOk(`sha256sum < ${mp}/before | cmp - ${fixture.dir}/before.sum`);
      t.is(await reconnects(fixture.store), TERMINATIONS, 'each killed session: one reconnection');
      t.is(reconnectLines(m).length, TERMINATIONS, m.output());
      t.log(reconnectLines(m).join('\n'));
      t.true((await leaseEpoch(fixture.store)) > epoch0, 'a new lease epoch');
      t.notRegex(m.output(), /lost the store's lease/, 'nobody else held it: not fenced');
      await m.stop();
      const again = await fixture.mount();
      t.is(await badAcked(path.join(again.mountpoint, 'records.bin'), w.acked), '0 []');
      await shOk(
        `sha256sum < ${again.mountpoint}/before | cmp - ${fixture.dir}/before.sum && [ -e ${again.mountpoint}/after ]`,
      );
      await again.stop();
    },
  );

  test.serial(
    "the server crashes (immediate stop) and starts again: nothing fsync'd is lost, a file written before it fails its next fsync once if changes may be lost, the next writes work, the kernel shows no stale entry",
    async (t) => {
      await fixture.stopAll();
      await sh(`rm -rf ${fixture.store}`);
      const m = await mountFresh(t, 'crashed');
      const mp = m.mountpoint;
      // A store of the same server, not mounted: `chunkfs status` opens it itself.
      const offline = path.join(fixture.dir, 'offline-store');
      await mkfs(offline, ['--disks', '2', '--layout', 'replica:2', '--meta', cluster!.createDatabase('offline')]);
      await shOk(`mkdir ${mp}/d && head -c 300000 /dev/urandom > ${mp}/before && sync ${mp}/before`);
      const sum = (await shOk(`sha256sum < ${mp}/before`)).trim();
      // A file open across the crash, written before it and not fsync'd: its fsync after it says EIO once.
      const held = spawn(
        PYTHON,
        [
          '-c',
          `
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'x' * 100000)
print('written', flush=True)
sys.stdin.readline()
for _ in range(2):
    try:
        os.fsync(fd)
        print('fsync ok', flush=True)
    except OSError as e:
        print('fsync', e.strerror, flush=True)
`,
          `${mp}/held`,
        ],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      );
      t.teardown(() => {
        held.kill('SIGKILL');
      });
      let heldOut = '';
      held.stdout.on('data', (b: Buffer) => (heldOut += b.toString()));
      const heldEnded = new Promise((resolve) => held.on('exit', resolve));
      const w = new RecordWriter(path.join(mp, 'records.bin'), path.join(fixture.dir, 'stop-crashed'));
      try {
        await w.waitAcks(ACKS_BETWEEN);
      } finally {
        await w.stop();
      }
      while (!heldOut.includes('written')) await new Promise((resolve) => setTimeout(resolve, 50));
      // Changes not fsync'd when the server crashes (unless the mount's 5 s timer made them durable first).
      await shOk(`for i in $(seq ${UNSYNCED_FILES}); do echo $i > ${mp}/d/f$i; done; ls -l ${mp}/d > /dev/null`);
      cluster!.crash();
      await statusWhileDown(t, mp, offline);
      cluster!.resume();
      const upMs = Date.now();
      const tries = await createAndSync(m, `${mp}/after`); // the first tries may meet the break: EIO
      t.log(`ms from the server accepting again to a create and fsync through the mount: ${Date.now() - upMs}`);
      held.stdin.end('\n');
      await heldEnded;
      const lines = reconnectLines(m);
      t.log(`create and fsync tries: ${tries}; held file: ${heldOut.replace(/\n/g, '; ')}\n${lines.join('\n')}`);
      t.true(lines.length >= 1, m.output());
      t.is(await reconnects(fixture.store), lines.length);
      // Changes made since the last full commit may be gone with the server's WAL: the mount says so,
      // and the file open then says EIO at its next fsync, once. Else everything it was told is there.
      const lossy = lines.some((l) => /may be lost/.test(l));
      t.is(heldOut, lossy ? 'written\nfsync Input/output error\nfsync ok\n' : 'written\nfsync ok\nfsync ok\n');
      // The next ones work: a writer of fsync'd records again.
      const w2 = new RecordWriter(path.join(mp, 'records2.bin'), path.join(fixture.dir, 'stop-crashed2'));
      try {
        await w2.waitAcks(ACKS_BETWEEN);
      } finally {
        await w2.stop();
      }
      t.is(w2.errors.length, 0, errorsText(w2));
      t.is(await badAcked(path.join(mp, 'records.bin'), w.acked), '0 []');
      t.is((await shOk(`sha256sum < ${mp}/before`)).trim(), sum);
      // The kernel's view is the database's: the live mount lists what a fresh mount lists.
      // Each name the kernel may still cache: stat asks it by name (ls lists what readdir answers).
      const view = (dir: string): Promise<string> =>
        sh(
          `ls -la --time-style=+ ${dir}; for i in $(seq ${UNSYNCED_FILES}); do stat -c '%n %s %h' ${dir}/f$i 2>&1 || true; done`,
        ).then((r) => r.stdout.replaceAll(dir, 'D') + r.stderr.replaceAll(dir, 'D'));
      const live = await view(`${mp}/d`);
      await m.stop();
      const again = await fixture.mount();
      const fresh = await view(`${again.mountpoint}/d`);
      t.is(live, fresh);
      t.log(
        `names created before the crash the fresh mount shows: ${(fresh.match(/^D\/f\d+ /gm) ?? []).length} of ${UNSYNCED_FILES}`,
      );
      t.is(await badAcked(path.join(again.mountpoint, 'records.bin'), w.acked), '0 []');
      t.is(await badAcked(path.join(again.mountpoint, 'records2.bin'), w2.acked), '0 []');
      t.is((await shOk(`sha256sum < ${again.mountpoint}/before`)).trim(), sum);
      await shOk(`[ -e ${again.mountpoint}/after ]`);
      if (!lossy) await shOk(`head -c 100000 /dev/zero | tr '\\0' x | cmp - ${again.mountpoint}/held`);
      await again.stop();
    },
  );
}
