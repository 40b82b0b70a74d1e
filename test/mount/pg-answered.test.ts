// Operations answered once their statements are sent, then a crash of the metadata (DESIGN §9
// "PostgreSQL round trips"), through the path users take: a mount on PostgreSQL. After some
// fsync'd files, another session holds the directory table's write lock, so nothing the mount sends
// next can run on the server; the mount answers a create, a mkdir, a rename and an unlink all the
// same (they return while the lock is held). None of them needs a read of the server (a read waits
// for every reply before it), whatever the kernel still caches: each name they look up is known to
// the mount, absent or a file's whose attributes it keeps, st_blocks included (the large fsync'd
// file's from its live chunks' lengths, kept since its create). The large file is stat'ed with the
// kernel's cache bypassed (statx AT_STATX_FORCE_SYNC: a GETATTR reaches the mount), then renamed.
// Then the server is killed (pg_ctl stop -m immediate) or the mount's session is terminated, and
// the lock goes with it. After recovery: the tree is the state before those operations (a state that
// existed, nothing after the first unrun statement committed), every fsync'd byte is there, the
// kernel shows no stale name (the live mount shows what a fresh mount shows, name by name: the
// renamed file's new name included), the crash is counted once in `chunkfs status`, logged, and the
// mount goes on. The cluster is a throwaway one.
import test, { ExecutionContext } from 'ava';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { storeFixture, mkfs, sh, shOk, chunkfsOk, ChunkfsMount } from '../helpers/mount';
import { PG_BIN_DIR, PgCluster, pgUnavailableReason, privateCluster } from '../helpers/pg-cluster';

const unavailable = pgUnavailableReason();
let cluster: PgCluster | null = null;
const fixture = storeFixture(test, 'pganswered', { mkfs: false });
test.after.always(() => cluster?.stop());
test.serial.afterEach.always(() => fixture.stopAll());

/** Polls (POLL_MS apart) for a lock, a log line, an end. */
const POLLS_MAX = 1200;
const POLL_MS = 50;
/** The names the operations answered during the lock touch (each one looked at by name after). */
const NAMES = ['a', 'b', 'synced', 'gone', 'n1', 'n2', 'n3', 'sub'];
/** The mount's session waiting for the lock (the lock holder's own session is not waiting). */
const WAITING_SQL =
  "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
const TERMINATE_WAITING_SQL =
  'SELECT count(pg_terminate_backend(pid, 30000)) FROM pg_stat_activity ' +
  "WHERE datname = current_database() AND wait_event_type = 'Lock'";

/** The operations answered early take milliseconds; one waiting for the server would wait for the crash. */
const OPS_TIMEOUT_MS = 30_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, fn: () => boolean | Promise<boolean>, m: ChunkfsMount): Promise<void> {
  for (let i = 0; i < POLLS_MAX; i++) {
    if (await fn()) return;
    await sleep(POLL_MS);
  }
  throw new Error(`waited in vain for ${what}; the mount's log:\n${m.output()}`);
}

function reconnectLines(m: ChunkfsMount): string[] {
  return m
    .output()
    .split('\n')
    .filter((l) => /reconnected to the metadata database/.test(l));
}

/** What `chunkfs status` counts: crashes of the metadata. */
async function crashes(store: string): Promise<number> {
  const m = /meta_crashes: (\d+)/.exec(await chunkfsOk(['status', store]));
  return m === null ? -1 : Number(m[1]);
}

/** The tree under dir (names, types, sizes) and each name of NAMES looked up by name (the kernel's cached entries). */
async function view(dir: string): Promise<string> {
  const r = await sh(
    `cd ${dir} && find . -printf '%p %y %s\\n' | sort; for n in ${NAMES.join(' ')}; do stat -c '%n %F %s %h' d/$n 2>&1 || true; done`,
  );
  return r.stdout + r.stderr;
}

async function mountFresh(t: ExecutionContext, name: string): Promise<ChunkfsMount> {
  // The WAL writer flushes what commits left in its buffers every 10 s: a crash loses what the mount
  // committed since its last full commit.
  cluster ??= privateCluster({ wal_writer_delay: '10s' });
  await fixture.stopAll();
  await sh(`rm -rf ${fixture.store}`);
  await mkfs(fixture.store, ['--disks', '2', '--layout', 'replica:2', '--meta', cluster.createDatabase(name)]);
  const m = await fixture.mount();
  t.teardown(() => m.stop());
  return m;
}

/**
 * fsync'd files, then the lock held by another session, and operations answered while it is held;
 * crash() breaks the metadata; the checks after recovery.
 */
async function answeredThenCrash(t: ExecutionContext, name: string, crash: () => void): Promise<void> {
  const m = await mountFresh(t, name);
  const mp = m.mountpoint;
  await shOk(
    `mkdir ${mp}/d && head -c 200000 /dev/urandom > ${mp}/d/a && echo synced > ${mp}/d/synced && ` +
      `echo gone > ${mp}/d/gone && sync ${mp}/d/a ${mp}/d/synced ${mp}/d/gone ${mp}/d && sync -f ${mp}`,
  );
  // The directory listed and a missing name looked up: the mount knows every name of d, so the
  // operations below need no read of the server (a read waits for every reply before it).
  await shOk(`ls ${mp}/d > /dev/null && ! stat ${mp}/d/n1 2>/dev/null`);
  const sum = (await shOk(`sha256sum < ${mp}/d/a`)).trim();
  const before = await view(mp);
  // Another session takes the directory table's write lock and keeps it: the mount's next write waits on the server.
  const holder = spawn(path.join(PG_BIN_DIR, 'psql'), [
    cluster!.url(name),
    '-c',
    'BEGIN; LOCK TABLE dirents IN EXCLUSIVE MODE; SELECT pg_sleep(600)',
  ]);
  const holderEnded = new Promise((resolve) => holder.on('exit', resolve));
  t.teardown(() => {
    holder.kill('SIGKILL');
  });
  const locked = (): boolean =>
    cluster!
      .query(
        name,
        "SELECT count(*) FROM pg_locks WHERE mode = 'ExclusiveLock' AND granted AND relation = 'dirents'::regclass",
      )
      .trim() === '1';
  // A lease renewal seen (its side connection dialled): renewals go there, not behind unread replies.
  const renewed = (): string => cluster!.query(name, 'SELECT heartbeat_at FROM chunkfs_lease').trim();
  const last = renewed();
  await until('a lease renewal', () => renewed() !== last, m);
  await until('the lock', locked, m);
  // The large file's attributes asked of the mount (not the kernel's cache), then renamed.
  const large = 'stat --cached=never a >/dev/null && mv a b';
  const ops = await sh(`cd ${mp}/d && : > n1 && : > n2 && : > n3 && mkdir sub && ${large} && rm gone && echo done`, {
    timeoutMs: OPS_TIMEOUT_MS,
  });
  t.is(ops.stdout.trim(), 'done', `the operations were answered: ${ops.stderr}`);
  if (ops.stdout.trim() !== 'done') t.log(JSON.stringify(ops), 'OUTPUT', m.output());
  t.true(locked(), 'answered while the server could not run them');
  t.not(cluster!.query(name, WAITING_SQL).trim(), '0', "the mount's session waits for the lock");
  const seen = reconnectLines(m).length;
  crash();
  await until('the reconnection', () => reconnectLines(m).length > seen, m);
  await Promise.race([holderEnded, sleep(POLL_MS)]);
  const lines = reconnectLines(m);
  t.log(lines.join('\n'));
  t.regex(lines[lines.length - 1], /may be lost/);
  // A create and fsync through the mount works again (the first try may meet the break: EIO).
  await shOk(
    `n=0; until touch ${mp}/after 2>/dev/null && sync ${mp}/after 2>/dev/null; do n=$((n+1)); [ $n -ge 600 ] && exit 1; sleep 0.1; done`,
    { timeoutMs: 120_000 },
  );
  t.is(await crashes(fixture.store), 1, 'the crash counted once');
  // The kernel's view is the database's, name by name: the lost rename's new name is gone.
  const live = (await view(mp)).replace(/^\.\/after f 0\n/m, '');
  t.is(live, before, 'the state before the answered operations: they were lost together, none half');
  t.is((await shOk(`sha256sum < ${mp}/d/a`)).trim(), sum, "the fsync'd file");
  t.is((await shOk(`cat ${mp}/d/synced ${mp}/d/gone`)).trim(), 'synced\ngone');
  await m.stop();
  const again = await fixture.mount();
  t.is((await view(again.mountpoint)).replace(/^\.\/after f 0\n/m, ''), before, 'a fresh mount shows the same');
  await shOk(`[ -e ${again.mountpoint}/after ]`);
  await again.stop();
}

if (unavailable !== null) {
  test('PostgreSQL answered-operation tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial(
    "the server killed (immediate) under operations answered before it ran them: the state before them, nothing fsync'd lost, no stale name, one crash",
    async (t) => {
      await answeredThenCrash(t, 'killed', () => {
        cluster!.crash();
        cluster!.resume();
      });
    },
  );

  test.serial(
    "the mount's session terminated under operations answered before they ran: the state before them, nothing fsync'd lost, no stale name, one crash",
    async (t) => {
      await answeredThenCrash(t, 'cut', () => {
        t.is(cluster!.query('cut', TERMINATE_WAITING_SQL).trim(), '1', "the mount's session, waiting for the lock");
        cluster!.query(
          'cut',
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()",
        );
      });
    },
  );
}
