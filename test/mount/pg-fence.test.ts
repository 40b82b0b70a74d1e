// Split brain refused (DESIGN §9 "Lease and fencing"): a read-write mount A whose lease another
// mount B took over commits nothing and writes no shard, through the path users take: real mounts
// of one store on PostgreSQL from two store directories (test/helpers/other-machine.ts), a short
// lease (-o lease_ms). A is paused past its lease (kill -STOP, as a paused VM or heavy swapping),
// or its connection to the server is cut (a proxy killed, then started again); B mounts read-write
// and writes and fsyncs files; then A, running again, is asked to remove one of B's files, create
// and fsync another, chmod, mkdir, rename: each fails with EROFS, A's log (once) and `chunkfs status`
// say it lost the lease, bytes A held unsynced when paused are never committed, fsck finds every
// shard of B's files, A serves B's files and follows B's later change read-only, and B's files are
// intact byte for byte, through B and after B mounts again. The cluster is a throwaway one
// (test/helpers/pg-cluster.ts).
import test, { ExecutionContext } from 'ava';
import * as path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { spawn, ChildProcess } from 'node:child_process';
import { storeFixture, mkfs, run, sh, shOk, chunkfsOk, CLI_JS, PYTHON, ChunkfsMount } from '../helpers/mount';
import { PgCluster, pgUnavailableReason, startPgCluster } from '../helpers/pg-cluster';
import { otherMachineStoreDir } from '../helpers/other-machine';

/** The lease both mounts run with: short, so the test waits little for it to expire. */
const LEASE_MS = 2000;
/** Mount attempts of B while A's lease has not expired yet (each one refused at once, naming A). */
const TAKE_TRIES_MAX = 60;
const TAKE_RETRY_MS = 500;
/** Polls of A (its status, a file B changed) until it shows what it must. */
const STATUS_POLLS_MAX = 120;
const STATUS_POLL_MS = 250;
/** Bytes of each file B writes. */
const FILE_BYTES = [1, 70_000, 3 << 20];
const unavailable = pgUnavailableReason();

let cluster: PgCluster | null = null;
const fixture = storeFixture(test, 'pgfence', { mkfs: false });
test.after.always(() => cluster?.stop());
test.serial.afterEach.always(() => fixture.stopAll());

const leaseOpt = ['-o', `lease_ms=${LEASE_MS}`];

/** B: the store from another store directory, mounted read-write once A's lease has expired. */
async function takeOver(store: string, mnt: string): Promise<ChunkfsMount> {
  for (let i = 1; ; i++) {
    try {
      return await fixture.mountAt(store, mnt, leaseOpt);
    } catch (err) {
      if (i >= TAKE_TRIES_MAX || !/open read-write by/.test(String(err))) throw err;
      await new Promise((resolve) => setTimeout(resolve, TAKE_RETRY_MS));
    }
  }
}

/** B writes and fsyncs its files (content from a seed); their sha256 sums, by name. */
async function writeFiles(mp: string, prefix: string): Promise<string> {
  const names = FILE_BYTES.map((n, i) => `${prefix}${i}`);
  await shOk(
    FILE_BYTES.map((n, i) => `head -c ${n} /dev/urandom > ${mp}/${names[i]} && sync ${mp}/${names[i]}`).join(' && '),
  );
  return sums(mp, names);
}

function sums(mp: string, names: string[]): Promise<string> {
  return shOk(`cd ${mp} && sha256sum ${names.join(' ')}`);
}

/** A's changes, each refused: rm of B's file, create + fsync, chmod, mkdir, rename. */
async function refusedThrough(
  t: ExecutionContext,
  mp: string,
  bFile: string,
  aFile: string,
  allowed: RegExp,
): Promise<void> {
  const ops = [
    `rm ${mp}/${bFile}`,
    `${PYTHON} -c "import os; fd = os.open('${mp}/a-new', os.O_CREAT | os.O_WRONLY, 0o644); os.write(fd, b'x' * 5000); os.fsync(fd)"`,
    `chmod 600 ${mp}/${aFile}`,
    `mkdir ${mp}/a-dir`,
    `mv ${mp}/${aFile} ${mp}/a-moved`,
  ];
  for (const op of ops) {
    const r = await sh(op, { timeoutMs: 120_000 });
    t.not(r.code, 0, `refused: ${op}`);
    t.regex(r.stderr, allowed, op);
  }
}

/** A Unix socket proxy to the server's socket: A's connection goes through it, so it can be cut. */
function startProxy(listenDir: string, target: string): Promise<ChildProcess> {
  const script = `
import os, socket, sys, threading
path = os.path.join(sys.argv[1], '.s.PGSQL.5432')
if os.path.exists(path): os.unlink(path)
srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(64)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d: break
            b.sendall(d)
    except OSError: pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
print('listening', flush=True)
while True:
    c, _ = srv.accept()
    u = socket.socket(socket.AF_UNIX); u.connect(sys.argv[2])
    threading.Thread(target=pump, args=(c, u), daemon=True).start()
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
`;
  const child = spawn(PYTHON, ['-c', script, listenDir, target], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`proxy exited (${code})`)));
  });
}

function stopProxy(p: ChildProcess | null): Promise<void> {
  if (p === null || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    p.once('exit', () => resolve());
    p.kill('SIGKILL');
  });
}

if (unavailable !== null) {
  test('PostgreSQL fencing mount tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial.before(async () => {
    cluster = startPgCluster();
    await mkfs(fixture.store, ['--disks', '4', '--layout', 'replica:2', '--meta', cluster.createDatabase('fence')]);
  });

  test.serial(
    "a mount paused past its lease (kill -STOP) changes nothing once another mount took over: EROFS, said in its log and status; the new holder's files intact",
    async (t) => {
      const other = path.join(fixture.dir, 'other');
      await otherMachineStoreDir(fixture.store, other);
      const a = await fixture.mount(leaseOpt);
      const pid = a.child.pid!;
      await shOk(`echo mine > ${a.mountpoint}/a-file && sync ${a.mountpoint}/a-file`);
      // Bytes in A's write-back buffer, not fsync'd, when it is paused: stored after it runs again, or refused.
      await shOk(`head -c ${3 << 20} /dev/urandom > ${a.mountpoint}/a-pending`);
      let b: ChunkfsMount | null = null;
      try {
        process.kill(pid, 'SIGSTOP');
        b = await takeOver(other, path.join(fixture.dir, 'mnt2'));
        const written = await writeFiles(b.mountpoint, 'b');
        process.kill(pid, 'SIGCONT');
        // EIO too: had the pause caught A inside a transaction, the server ended its session (a lease's idle time).
        await refusedThrough(t, a.mountpoint, 'b1', 'a-file', /Read-only file system|Input\/output error/);
        t.regex(
          await chunkfsOk(['status', fixture.store]),
          /THIS MOUNT LOST THE LEASE \(.*(took it over|taken over).*\): read-only/,
        );
        await refusedThrough(t, a.mountpoint, 'b1', 'a-file', /Read-only file system/);
        t.is(a.output().split("lost the store's lease on").length - 1, 1, `said once in its log:\n${a.output()}`);
        t.is(await sums(b.mountpoint, ['b0', 'b1', 'b2']), written, "B's files byte for byte");
        t.is(await shOk(`cat ${b.mountpoint}/a-file`), 'mine\n');
        // A serves reads read-only, following B: B's files as B wrote them, and B's later change.
        t.is(await sums(a.mountpoint, ['b0', 'b1', 'b2']), written, 'read through A');
        await shOk(`echo changed-by-b > ${b.mountpoint}/b0 && sync ${b.mountpoint}/b0`);
        let seen = '';
        for (let i = 0; i < STATUS_POLLS_MAX && seen !== 'changed-by-b\n'; i++) {
          await new Promise((resolve) => setTimeout(resolve, STATUS_POLL_MS));
          seen = (await sh(`cat ${a.mountpoint}/b0`)).stdout;
        }
        t.is(seen, 'changed-by-b\n', "A follows B's later change");
        const changed = await sums(b.mountpoint, ['b0', 'b1', 'b2']);
        await shOk(
          `test ! -e ${b.mountpoint}/a-new && test ! -e ${b.mountpoint}/a-dir && test ! -e ${b.mountpoint}/a-moved`,
        );
        t.is((await shOk(`stat -c %a ${b.mountpoint}/a-file`)).trim(), '644');
        // Every shard B's files name is there and verifies, whatever A's pending bytes did.
        const fsck = await run(process.execPath, [CLI_JS, 'fsck', other], { timeoutMs: 120_000 });
        t.log(fsck.stdout.trim());
        t.regex(fsck.stdout, / 0 missing, 0 bad headers, 0 unreadable, /);
        await a.stop(); // a clean unmount of the fenced mount writes nothing either
        await b.stop();
        const again = await fixture.mountAt(other, path.join(fixture.dir, 'mnt2'), leaseOpt);
        t.is(await sums(again.mountpoint, ['b0', 'b1', 'b2']), changed, 'and after B mounts again');
        await again.stop();
      } finally {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          /* gone */
        }
      }
    },
  );

  test.serial(
    "a mount whose connection to the server was cut while another mount took over changes nothing when it is back: EROFS; the new holder's files intact",
    async (t) => {
      // A's own store directory reaches the server through a proxy; B's directly.
      const viaProxy = path.join(fixture.dir, 'via-proxy');
      const proxyDir = path.join(fixture.dir, 'px');
      await shOk(`mkdir -m 700 ${proxyDir}`);
      await otherMachineStoreDir(fixture.store, viaProxy);
      const config = path.join(viaProxy, 'chunkfs.json');
      const c = JSON.parse(readFileSync(config, 'utf8'));
      c.meta.url = c.meta.url.replace(/host=[^&]+/, `host=${encodeURIComponent(proxyDir)}`);
      writeFileSync(config, JSON.stringify(c, null, 2), { mode: 0o600 });
      const serverSocket = path.join(cluster!.socketDir, '.s.PGSQL.5432');
      let proxy: ChildProcess | null = await startProxy(proxyDir, serverSocket);
      try {
        const a = await fixture.mountAt(viaProxy, path.join(fixture.dir, 'mnt3'), leaseOpt);
        await shOk(`echo mine > ${a.mountpoint}/a-file2 && sync ${a.mountpoint}/a-file2`);
        await stopProxy(proxy); // cut: A's connections end, and dialling again fails
        proxy = null;
        const b = await takeOver(fixture.store, fixture.mountpoint);
        const written = await writeFiles(b.mountpoint, 'c');
        proxy = await startProxy(proxyDir, serverSocket);
        // Back: A's next renewal (or write) dials again and finds the lease taken.
        let status = '';
        for (let i = 0; i < STATUS_POLLS_MAX && !/LOST THE LEASE/.test(status); i++) {
          await new Promise((resolve) => setTimeout(resolve, STATUS_POLL_MS));
          status = (await run(process.execPath, [CLI_JS, 'status', viaProxy], { timeoutMs: 60_000 })).stdout;
        }
        t.regex(status, /THIS MOUNT LOST THE LEASE/);
        await refusedThrough(t, a.mountpoint, 'c1', 'a-file2', /Read-only file system/);
        t.is(await sums(b.mountpoint, ['c0', 'c1', 'c2']), written, "B's files byte for byte");
        await shOk(
          `test ! -e ${b.mountpoint}/a-new && test ! -e ${b.mountpoint}/a-dir && test ! -e ${b.mountpoint}/a-moved`,
        );
        await a.stop();
        await b.stop();
        const again = await fixture.mount(leaseOpt);
        t.is(await sums(again.mountpoint, ['c0', 'c1', 'c2']), written, 'and after B mounts again');
        t.is(await shOk(`cat ${again.mountpoint}/a-file2`), 'mine\n');
        await again.stop();
      } finally {
        await stopProxy(proxy);
      }
    },
  );
}
