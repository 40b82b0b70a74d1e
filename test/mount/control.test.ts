// The control socket (DESIGN §7): a live mount listens on <store>/chunkfs.sock (0600); `chunkfs status`
// reaches it by mount point, by store directory and with no target (the default store), and sees the
// mount; once unmounted (or killed, leaving the socket file) the verb opens the store itself.
import test from 'ava';
import { existsSync, promises as fsp } from 'node:fs';
import { spawn } from 'node:child_process';
import { storeFixture, CLI_JS, isMounted, mkfs, run, shOk, startMount, PYTHON } from '../helpers/mount';

const fixture = storeFixture(test, 'control', { mkfs: false });
const cli = (args: string[], env?: NodeJS.ProcessEnv) =>
  run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000, env });

async function statusJson(args: string[], env?: NodeJS.ProcessEnv): Promise<any> {
  const r = await cli(['status', ...args, '--json'], env);
  if (r.code !== 0) throw new Error(`status ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

test.serial(
  'status by mount point, by store directory and with no target reaches the live mount; its socket is 0600',
  async (t) => {
    await mkfs(fixture.dir + '/s');
    const m = await fixture.mountAt(fixture.dir + '/s', fixture.dir + '/m');
    await shOk(`echo hello > ${fixture.dir}/m/f`);
    const st = await fsp.lstat(fixture.dir + '/s/chunkfs.sock');
    t.true(st.isSocket());
    t.is(st.mode & 0o777, 0o600);
    const byMount = await statusJson([fixture.dir + '/m']);
    const byStore = await statusJson([fixture.dir + '/s']);
    for (const r of [byMount, byStore]) {
      t.is(r.store, fixture.dir + '/s');
      const { dev, options, memory, readGrants, ...rest } = r.mount;
      t.deepEqual(rest, {
        mountpoint: fixture.dir + '/m',
        mountpoints: [fixture.dir + '/m'],
        pid: m.child.pid,
        readOnly: false,
      });
      // fs/fuse/read-grants.ts: counted on the libfuse3 transport, none on fuse-native.
      if (readGrants !== null)
        t.deepEqual(Object.keys(readGrants).sort(), ['failedReads', 'grantedChunks', 'servedBytes', 'servedReads']);
      t.regex(dev, /^[0-9]+:[0-9]+$/);
      t.is(options.readOnly, 'rw');
      t.deepEqual(r.layoutsInUse, [{ layout: 'replica:3', files: 1 }]);
    }
    const text = await cli(['status', fixture.dir + '/m']);
    t.regex(text.stdout, new RegExp(`^store ${fixture.dir}/s, mounted on ${fixture.dir}/m \\(pid ${m.child.pid}\\)`));
    t.regex(text.stdout, /layouts in use: replica:3 \(1 file\)/);
    t.notRegex(text.stdout, /[{}]/, 'no raw JSON in the text');
    if (byMount.mount.readGrants !== null) t.regex(text.stdout, /read grants: \d+ reads? answered without JavaScript/);

    // The default store ($XDG_DATA_HOME/chunkfs/default), mounted without naming it.
    const env = { ...process.env, XDG_DATA_HOME: fixture.dir + '/xdg' };
    const d = fixture.track(
      await startMount({
        command: process.execPath,
        args: [CLI_JS, 'mount', fixture.dir + '/dm'],
        mountpoint: fixture.dir + '/dm',
        env,
        readyPattern: /^chunkfs: mounted /,
      }),
    );
    const byDefault = await statusJson([], env);
    t.is(byDefault.store, fixture.dir + '/xdg/chunkfs/default');
    t.is(byDefault.mount.pid, d.child.pid);
    await d.stop();

    const inside = await cli(['status', fixture.dir + '/m/f']);
    t.is(inside.code, 1);
    t.regex(inside.stderr, /is inside the chunkfs mount .*; give the mount point or the store directory/);
    const neither = await cli(['status', fixture.dir]);
    t.is(neither.code, 1);
    t.regex(neither.stderr, /is neither a chunkfs store nor a chunkfs mount point/);
    const noDefault = await cli(['status'], { ...process.env, XDG_DATA_HOME: fixture.dir + '/none' });
    t.is(noDefault.code, 1);
    t.regex(noDefault.stderr, /default store .* does not exist/);
  },
);

test.serial(
  'unmounted, or killed with its socket file left behind: the verb opens the store itself; a new mount replaces the socket',
  async (t) => {
    const m = fixture.mounts[0];
    await m.kill9();
    t.true((await fsp.lstat(fixture.dir + '/s/chunkfs.sock')).isSocket(), 'the killed mount left its socket file');
    const offline = await statusJson([fixture.dir + '/s']);
    t.is(offline.mount, null);
    t.deepEqual(offline.layoutsInUse, [{ layout: 'replica:3', files: 1 }]);
    const again = await fixture.mountAt(fixture.dir + '/s', fixture.dir + '/m');
    t.is((await statusJson([fixture.dir + '/m'])).mount.pid, again.child.pid);
    await again.stop();
    await t.throwsAsync(
      fsp.lstat(fixture.dir + '/s/chunkfs.sock'),
      { code: 'ENOENT' },
      'a clean unmount removes the socket',
    );
    t.is((await statusJson([fixture.dir + '/s'])).mount, null);
  },
);

test.serial(
  'a store whose socket path is longer than sun_path (107 bytes) still gets its socket: verbs reach the mount',
  async (t) => {
    const deep = fixture.dir + '/' + 'd'.repeat(60) + '/' + 'e'.repeat(60) + '/s';
    t.true(Buffer.byteLength(deep + '/chunkfs.sock') > 107);
    await mkfs(deep);
    const m = await fixture.mountAt(deep, fixture.dir + '/deepm');
    const st = await fsp.lstat(deep + '/chunkfs.sock');
    t.true(st.isSocket());
    t.is(st.mode & 0o777, 0o600);
    t.is((await statusJson([fixture.dir + '/deepm'])).mount.pid, m.child.pid);
    t.is((await statusJson([deep])).mount.pid, m.child.pid);
    await m.stop();
    await t.throwsAsync(fsp.lstat(deep + '/chunkfs.sock'), { code: 'ENOENT' }, 'a clean unmount removes the socket');
  },
);

const HOLD_OPEN = `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b'w' * int(sys.argv[2]))
print('written', flush=True)
sys.stdin.read()  # open until the test closes our stdin
os.close(fd)
`;

test.serial(
  "status shows the mount's memory: resident, heap, and the bytes the write-back buffer holds against its bound",
  async (t) => {
    await mkfs(fixture.dir + '/ms');
    await fixture.mountAt(fixture.dir + '/ms', fixture.dir + '/mm', ['-o', 'buffer_mb=64,flush_ms=60000']);
    const bytes = 3 << 20;
    const writer = spawn(PYTHON, ['-c', HOLD_OPEN, fixture.dir + '/mm/held', String(bytes)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        writer.stdout!.on('data', (b: Buffer) => {
          if (b.toString().includes('written')) resolve();
        });
        writer.on('exit', (code) => reject(new Error(`writer exited (${code}) before writing`)));
      });
      const m = (await statusJson([fixture.dir + '/mm'])).mount.memory;
      t.is(m.writeBufferBytes, bytes, 'the bytes written and not yet stored (flush_ms keeps them)');
      t.true(m.writeBufferHeldBytes >= m.writeBufferBytes, 'held: at least what is buffered');
      t.is(m.writeBufferMaxBytes, 64 << 20, '-o buffer_mb');
      t.true(
        m.rssBytes > m.writeBufferBytes && m.heapUsedBytes > 0 && m.externalBytes >= m.writeBufferBytes,
        JSON.stringify(m),
      );
      t.regex(
        (await cli(['status', fixture.dir + '/mm'])).stdout,
        /^memory: [\d.]+ MiB resident .*write-back buffer 3\.0 MiB buffered in [\d.]+ MiB held, bound 64\.0 MiB$/m,
      );
    } finally {
      writer.stdin!.end();
      await new Promise((resolve) => writer.on('close', resolve));
    }
    await shOk(`sync -f ${fixture.dir}/mm/held`);
    t.is(
      (await statusJson([fixture.dir + '/mm'])).mount.memory.writeBufferBytes,
      0,
      'stored at close and sync: nothing buffered',
    );
  },
);

test.serial(
  'a stopped mount (SIGSTOP): status and a second mount give up within the bound, naming its pid, and take nothing over',
  async (t) => {
    const store = fixture.dir + '/stopped';
    await mkfs(store);
    const m = await fixture.mountAt(store, fixture.dir + '/sm');
    await shOk(`echo before > ${fixture.dir}/sm/f`);
    const pid = m.child.pid!;
    // Far beyond the client's bound (cli/control/client.ts ACCEPT_WAIT_MS): a command still waiting
    // then is killed by run() and fails the test, never hangs it.
    const bounded = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 90_000 });
    process.kill(pid, 'SIGSTOP');
    try {
      const status = await bounded(['status', store]);
      const byMount = await bounded(['status', fixture.dir + '/sm']);
      const second = await bounded(['mount', store, fixture.dir + '/sm2']);
      const said = new RegExp(
        `^chunkfs (status|mount): store ${store}: its mount process ${pid} is not answering .*kill -CONT ${pid}.*\\n$`,
      );
      for (const r of [status, byMount, second]) {
        t.is(r.signal, null, 'returned by itself');
        t.is(r.code, 1, r.stderr);
        t.regex(r.stderr, said);
        t.is(r.stderr.split('\n').length, 2, 'one line');
      }
      t.false(isMounted(fixture.dir + '/sm2'));
      t.false(existsSync(fixture.dir + '/sm2'), 'the second mount left no mount point it made');
      // On its own mount point: not answering is not dead (a stale mount): it stays mounted.
      const again = await bounded(['mount', store, fixture.dir + '/sm']);
      t.is(again.code, 1, again.stderr);
      t.regex(
        again.stderr,
        new RegExp(`^chunkfs mount: ${fixture.dir}/sm is mounted but not answering .*kill -CONT ${pid}.*\\n$`),
      );
      t.true(isMounted(fixture.dir + '/sm'), 'the paused mount was not unmounted');
      t.is((await fsp.readFile(store + '/chunkfs.lock', 'utf8')).split('\n')[0], String(pid), 'the lock is still its');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // Resumed, the first mount serves as before.
    t.is((await statusJson([fixture.dir + '/sm'])).mount.pid, pid);
    await shOk(`echo after >> ${fixture.dir}/sm/f`);
    t.is(await shOk(`cat ${fixture.dir}/sm/f`), 'before\nafter\n');
    // chunkfs umount of it stopped: the kernel detaches it; the command says at once that the process
    // cannot close the store until resumed, instead of waiting out its bound.
    process.kill(pid, 'SIGSTOP');
    try {
      const u = await bounded(['umount', fixture.dir + '/sm']);
      t.is(u.signal, null);
      t.is(u.code, 1, u.stderr);
      t.regex(
        u.stderr,
        new RegExp(`^chunkfs umount: .*mount process \\(pid ${pid}\\) is stopped .*kill -CONT ${pid}.*\\n$`),
      );
      t.is(u.stderr.split('\n').length, 2, 'one line');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // Resumed, it finishes: closes the store and exits cleanly; the data it held is there.
    await new Promise<void>((resolve) => (m.exited() ? resolve() : m.child.once('exit', () => resolve())));
    t.is(m.child.exitCode, 0, m.output());
    t.false(isMounted(fixture.dir + '/sm'));
    t.false(existsSync(store + '/chunkfs.lock'), 'the store is closed');
    t.regex((await cli(['fsck', store])).stdout, /0 missing, 0 bad headers/);
  },
);
