// Linux conventions (DESIGN §7): `mount -t fuse.chunkfs STORE MNT -o ...` and an fstab line go through
// /sbin/mount.fuse.chunkfs (scripts/install-mount-helper.sh, run by setup), which starts the mount
// in the background and returns once it is up; `umount` ends it as usual; a bad option fails the
// mount with the reason and leaves nothing behind.
import test from 'ava';
import { existsSync, promises as fsp, readFileSync, readdirSync } from 'node:fs';
import { storeFixture, CLI_JS, isMounted, run, sh, shOk } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';

const HELPER = '/sbin/mount.fuse.chunkfs';
const pids = new Set<number>();
// mount(8) keeps root's environment for its helpers: point the installed helper at this checkout.
const env = { ...process.env, CHUNKFS_HOME: REPO_ROOT };

function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/** The pid of the live mount at mnt (asked through its control socket). */
async function mountPid(mnt: string): Promise<number> {
  const r = await run(process.execPath, [CLI_JS, 'status', mnt, '--json']);
  const pid = JSON.parse(r.stdout).mount.pid as number;
  pids.add(pid);
  return pid;
}

/** Processes whose command line names path (read from /proc, as test/helpers/mount.ts does). */
function processesNaming(path: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(path)) out.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 150 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  return !alive(pid);
}

const fixture = storeFixture(test, 'helper', {
  beforeStop: async () => {
    for (const mnt of [fixture.dir + '/mnt2', fixture.mountpoint]) if (isMounted(mnt)) await run('umount', ['-l', mnt]);
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  },
});
test.serial.before(async () => {
  await fsp.mkdir(fixture.mountpoint);
});

test.serial('mount -t fuse.chunkfs STORE MNT -o defaults,_netdev; umount ends the mount process', async (t) => {
  t.true(existsSync(HELPER), `${HELPER} is missing: run scripts/install-mount-helper.sh (npm run setup does)`);
  const r = await run(
    'mount',
    ['-t', 'fuse.chunkfs', fixture.store, fixture.mountpoint, '-o', 'defaults,_netdev,noatime'],
    { env },
  );
  t.is(r.code, 0, r.stderr);
  t.true(isMounted(fixture.mountpoint));
  await shOk(`echo hello > ${fixture.dir}/mnt/f && sync`);
  t.is((await shOk(`cat ${fixture.dir}/mnt/f`)).trim(), 'hello');
  const pid = await mountPid(fixture.mountpoint);
  t.regex(
    await fsp.readFile(fixture.dir + '/store/chunkfs.log', 'utf8'),
    new RegExp(`chunkfs: mounted ${fixture.dir}/store on ${fixture.dir}/mnt \\(pid ${pid}, transport fuse3\\)`),
  );
  t.is((await run('umount', [fixture.mountpoint])).code, 0);
  t.true(await gone(pid), 'the mount process flushed and exited');
  t.false(isMounted(fixture.mountpoint));
});

test.serial('an fstab line (noauto,ro) mounts with mount MNT; the option reaches chunkfs', async (t) => {
  await fsp.writeFile(
    fixture.dir + '/fstab',
    `${fixture.dir}/store ${fixture.dir}/mnt fuse.chunkfs noauto,ro,x-systemd.automount 0 0\n`,
  );
  const r = await run('mount', ['-T', fixture.dir + '/fstab', fixture.mountpoint], { env });
  t.is(r.code, 0, r.stderr);
  const pid = await mountPid(fixture.mountpoint);
  t.is((await shOk(`cat ${fixture.dir}/mnt/f`)).trim(), 'hello');
  const w = await sh(`touch ${fixture.dir}/mnt/new`);
  t.regex(w.stderr, /Read-only file system/);
  t.is((await run('umount', [fixture.mountpoint])).code, 0);
  t.true(await gone(pid));
});

test.serial('a bad option fails the mount with the reason; nothing is mounted or left running', async (t) => {
  const r = await run('mount', ['-t', 'fuse.chunkfs', fixture.store, fixture.mountpoint, '-o', 'bogus'], { env });
  t.not(r.code, 0);
  t.regex(r.stderr, /chunkfs mount failed \(exit 2\): chunkfs mount: unknown mount option 'bogus'/);
  t.false(isMounted(fixture.mountpoint));
  const none = await run('mount', ['-t', 'fuse.chunkfs', fixture.dir + '/nostore', fixture.mountpoint], { env });
  t.not(none.code, 0);
  t.regex(none.stderr, /is not a chunkfs store/);
  t.deepEqual(processesNaming(fixture.store), [], 'no mount process left');
});

// umount(8) returns once the kernel detaches the mount, while the old mount process
// still flushes and holds the store for a second or two; a mount right then waits for it.
test.serial(
  'umount then mount at once (mount(8), then chunkfs mount): the new mount waits for the old process; the data is there',
  async (t) => {
    const mnt = fixture.mountpoint;
    const mount8 = async (): Promise<void> => {
      const r = await run('mount', ['-t', 'fuse.chunkfs', fixture.store, mnt], { env });
      t.is(r.code, 0, r.stderr);
    };
    await mount8();
    await shOk(`head -c 48M /dev/urandom > ${mnt}/big && cp ${mnt}/big ${fixture.dir}/big.copy`);
    for (let round = 0; round < 2; round++) {
      const pid = await mountPid(mnt);
      // Slow disks and small files closed just now (stored in the background, not synced): the old
      // process still flushes for seconds after the kernel detached its mount.
      for (let disk = 0; disk < 6; disk++)
        await shOk(`node ${CLI_JS} inject latency ${disk} --ms 500 --ops write ${mnt} > /dev/null`);
      await shOk(`for i in $(seq 20); do echo again$i > ${mnt}/small$i; done`);
      if (round === 0) {
        t.is((await run('umount', [mnt])).code, 0);
        await mount8();
      } else {
        const r = await run('fusermount3', ['-u', mnt]);
        t.is(r.code, 0, r.stderr);
        const child = await run('sh', [
          '-c',
          `node ${CLI_JS} mount ${fixture.dir}/store ${mnt} > ${fixture.dir}/direct.log 2>&1 &`,
        ]);
        t.is(child.code, 0);
        for (
          let i = 0;
          i < 600 && !/chunkfs: mounted|cannot/.test(readFileSync(fixture.dir + '/direct.log', 'utf8'));
          i++
        )
          await new Promise((resolve) => setTimeout(resolve, 100));
        t.regex(readFileSync(fixture.dir + '/direct.log', 'utf8'), /chunkfs: mounted /);
      }
      t.true(await gone(pid), 'the old mount process finished');
      t.is(
        (await shOk(`cmp ${mnt}/big ${fixture.dir}/big.copy && cat ${mnt}/small20`)).trim(),
        'again20',
        `round ${round}`,
      );
    }
    const last = await mountPid(mnt);
    t.is((await run('umount', [mnt])).code, 0);
    t.true(await gone(last));
  },
);

// xfstests generic/732: mount(8) of a store a live mount serves makes the second mount point a
// bind of the first (test/mount/second-mount.test.ts tests it through chunkfs mount); what a bind
// cannot take is refused at once, without waiting for the store.
test.serial(
  'mount(8) of a mounted store binds the new mount point to the live mount; an option a bind cannot take is refused at once',
  async (t) => {
    const r = await run('mount', ['-t', 'fuse.chunkfs', fixture.store, fixture.mountpoint], { env });
    t.is(r.code, 0, r.stderr);
    const pid = await mountPid(fixture.mountpoint);
    const mnt2 = fixture.dir + '/mnt2';
    await fsp.mkdir(mnt2, { recursive: true });
    const second = await run('mount', ['-t', 'fuse.chunkfs', fixture.store, mnt2, '-o', 'ro'], { env });
    t.is(second.code, 0, second.stderr);
    t.regex(
      await fsp.readFile(fixture.dir + '/store/chunkfs.log', 'utf8'),
      new RegExp(`mounting ${mnt2} as a bind of ${fixture.mountpoint} \\(one FUSE connection, one writer; ro,`),
    );
    await shOk(`echo both > ${fixture.mountpoint}/both`);
    t.is((await shOk(`cat ${mnt2}/both`)).trim(), 'both');
    t.regex((await sh(`rm ${mnt2}/both`)).stderr, /Read-only file system/);
    const third = await run('mount', ['-t', 'fuse.chunkfs', fixture.store, fixture.dir + '/mnt3', '-o', 'flush_ms=7'], {
      env,
    });
    t.not(third.code, 0);
    t.regex(
      third.stderr,
      new RegExp(
        `is mounted on ${fixture.mountpoint} and ${mnt2} by pid ${pid}; .* cannot take flush_ms=7 \\(the live mount runs flush_ms=5000\\)`,
      ),
    );
    t.notRegex(third.stderr, /waiting/);
    t.is((await run('umount', [fixture.mountpoint])).code, 0);
    t.is(await mountPid(mnt2), pid, 'the bind keeps the mount process serving');
    t.is((await run('umount', [mnt2])).code, 0);
    t.true(await gone(pid));
  },
);

/** The options of the mount at mnt in /proc/self/mounts. */
function mountOptions(mnt: string): string[] {
  const line = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .find((l) => l.split(' ')[1] === mnt);
  return line === undefined ? [] : line.split(' ')[3].split(',');
}

// mount -o remount,ro (and back) works as for other FUSE file systems: the kernel
// changes the mount's generic flags; mount(8)'s own options and noacl are taken, not refused.
test.serial(
  'mount(8) options other FUSE file systems take are taken; mount -o remount,ro and remount,rw change the live mount',
  async (t) => {
    const mnt = fixture.mountpoint;
    const r = await run(
      'mount',
      [
        '-t',
        'fuse.chunkfs',
        fixture.store,
        mnt,
        '-o',
        'rw,defaults,_netdev,nofail,user,users,noauto,auto,nouser,relatime,noatime,noacl',
      ],
      { env },
    );
    t.is(r.code, 0, r.stderr);
    const pid = await mountPid(mnt);
    await shOk(`echo before > ${mnt}/remount-file`);
    t.regex(
      (await sh(`setfacl -m u:${65534}:r ${mnt}/remount-file`)).stderr,
      /Operation not supported/,
      'noacl: no POSIX ACLs',
    );
    const ro = await run('mount', ['-o', 'remount,ro', mnt], { env });
    t.is(ro.code, 0, ro.stderr);
    t.true(mountOptions(mnt).includes('ro'), mountOptions(mnt).join(','));
    t.regex((await sh(`echo x > ${mnt}/remount-file`)).stderr, /Read-only file system/);
    t.is((await shOk(`cat ${mnt}/remount-file`)).trim(), 'before');
    const rw = await run('mount', ['-o', 'remount,rw', mnt], { env });
    t.is(rw.code, 0, rw.stderr);
    t.true(mountOptions(mnt).includes('rw'));
    await shOk(`echo after > ${mnt}/remount-file`);
    const noexec = await run('mount', ['-o', 'remount,noexec', mnt], { env });
    t.is(noexec.code, 0, noexec.stderr);
    t.true(mountOptions(mnt).includes('noexec'));
    t.is(await mountPid(mnt), pid, 'the same mount process throughout');
    t.is((await run('umount', [mnt])).code, 0);
    t.true(await gone(pid));
    // A mount chunkfs serves read-only (-o ro) cannot be made writable by a remount: a clear error.
    const m2 = await run('mount', ['-t', 'fuse.chunkfs', fixture.store, mnt, '-o', 'ro'], { env });
    t.is(m2.code, 0, m2.stderr);
    const pid2 = await mountPid(mnt);
    t.is((await shOk(`cat ${mnt}/remount-file`)).trim(), 'after');
    const back = await run('mount', ['-o', 'remount,rw', mnt], { env });
    t.not(back.code, 0);
    t.regex(
      back.stderr,
      /mounted with -o ro, which chunkfs serves read-only itself: unmount it and mount it again without ro/,
    );
    t.is((await run('umount', [mnt])).code, 0);
    t.true(await gone(pid2));
  },
);
