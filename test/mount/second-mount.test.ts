// xfstests generic/732: a store mounted twice at once. As a kernel file system mounted
// twice from one device shows one superblock at both places, the second mount of a store a live
// mount serves is a bind of that mount (cli/store-bind.ts): one FUSE connection and one mount
// process, which serves until the last of its mount points is unmounted, whichever goes first.
// Both transports (the bind is the kernel's; the mount process is the same on either).
import test from 'ava';
import { existsSync, promises as fsp } from 'node:fs';
import { spawn } from 'node:child_process';
import { WATCHDOG_SCRIPT } from '../../cli/bind-watchdog';
import { chunkfsDevAt } from '../../cli/mount-info';
import { escapeMountField } from '../../cli/mounts';
import {
  storeFixture,
  CLI_JS,
  TRANSPORT,
  chunkfsCli,
  isMounted,
  run,
  sh,
  shOk,
  startMount,
  transportArgs,
} from '../helpers/mount';

const fixture = storeFixture(test, 'second-mount');
const m1 = (): string => fixture.dir + '/m1';
const m2 = (): string => fixture.dir + '/m2';

interface MountJson {
  mountpoint: string;
  mountpoints: string[];
  pid: number;
  readOnly: boolean;
}
/** The live mount's status, without its memory (which moves between two asks). */
async function mountStatus(target: string): Promise<MountJson> {
  // Memory and read-grant counts move between two calls; the rest names the one mount.
  const { memory, readGrants, ...mount } = JSON.parse(
    await chunkfsCli(['status', target, '--json']).then((r) => r.stdout),
  ).mount;
  return mount as MountJson;
}

/** Polls for the mount process's exit (it flushes and closes the store first): far past a loaded machine's time. */
const GONE_POLLS_MAX = 1200;

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < GONE_POLLS_MAX && existsSync(`/proc/${pid}`); i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  return !existsSync(`/proc/${pid}`);
}

test.serial(
  'mounted twice: both mount points show every change at once; renames across them; the first unmounted, the second keeps working',
  async (t) => {
    const first = await fixture.mountAt(fixture.store, m1());
    const second = await fixture.mountAt(fixture.store, m2());
    t.regex(
      second.readyLine,
      new RegExp(`mounted ${fixture.store} on ${m2()} \\(a bind of ${m1()}, pid ${first.child.pid}`),
    );
    t.regex(second.output(), /as a bind of .* \(one FUSE connection, one writer; rw,/);
    t.true(isMounted(m2()));
    // Bytes written through one are read through the other right after the write.
    await shOk(
      `head -c 5000001 /dev/urandom > ${fixture.dir}/data && cp ${fixture.dir}/data ${m1()}/data && cmp ${m2()}/data ${fixture.dir}/data`,
    );
    await shOk(`echo more >> ${m2()}/data && echo more >> ${fixture.dir}/data && cmp ${m1()}/data ${fixture.dir}/data`);
    // generic/732's renames, each seen at once through the other mount point.
    await shOk(`mkdir ${m1()}/A ${m1()}/B && echo f > ${m1()}/A/f && mv ${m1()}/A/f ${m1()}/B/`);
    t.is((await shOk(`cat ${m2()}/B/f`)).trim(), 'f');
    await shOk(`mv ${m2()}/B/f ${m2()}/A/`);
    t.is((await shOk(`cat ${m1()}/A/f && ls ${m1()}/B | wc -l`)).trim(), 'f\n0');
    // mv from one mount point to the other (the kernel answers rename(2) EXDEV; mv copies).
    await shOk(`mv ${m1()}/data ${m2()}/B/data && cmp ${m1()}/B/data ${fixture.dir}/data && test ! -e ${m2()}/data`);
    // status by either mount point: the one mount process, both mount points.
    const s1 = await mountStatus(m1());
    t.deepEqual(await mountStatus(m2()), s1);
    t.is(s1.pid, first.child.pid!);
    t.deepEqual(s1.mountpoints, [m1(), m2()]);
    // Unmount the first: the mount process keeps serving the second.
    t.regex(
      await chunkfsCli(['umount', m1()]).then((r) => r.stdout),
      new RegExp(`unmounted ${m1()} \\(${fixture.store} stays mounted on ${m2()}\\)`),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500)); // three of the mount process's unmount polls
    t.false(first.exited(), 'the mount process still serves the bind');
    t.notRegex(first.output(), /flushing/, 'and is not stopping');
    t.deepEqual((await mountStatus(m2())).mountpoints, [m2()]);
    await shOk(
      `head -c 3000000 /dev/urandom > ${fixture.dir}/later && cp ${fixture.dir}/later ${m2()}/later && cmp ${m2()}/later ${fixture.dir}/later && cmp ${m2()}/B/data ${fixture.dir}/data`,
    );
    // Unmount the second: the mount process flushes and exits, nothing is left mounted.
    t.is((await run('umount', [m2()])).code, 0);
    t.true(await gone(first.child.pid!), 'the mount process exited after its last mount point');
    t.false(isMounted(m1()));
    t.false(isMounted(m2()));
    t.regex(first.output(), /unmounted: flushing/);
    // What both wrote is in the store.
    const again = await fixture.mountAt(fixture.store, m1());
    await shOk(`cmp ${m1()}/later ${fixture.dir}/later && cmp ${m1()}/B/data ${fixture.dir}/data`);
    await again.stop();
  },
);

test.serial(
  'a read-only second mount refuses writes (EROFS) while the first writes on; differing server options are refused by name',
  async (t) => {
    const first = await fixture.mountAt(fixture.store, m1());
    const ro = await fixture.mountAt(fixture.store, m2(), ['-o', 'ro']);
    t.regex(ro.readyLine, /a bind of .*, read-only\)$/);
    t.regex((await sh(`echo x > ${m2()}/ro-file`)).stderr, /Read-only file system/);
    t.regex((await sh(`mv ${m2()}/later ${m2()}/later2`)).stderr, /Read-only file system/);
    await shOk(`echo w > ${m1()}/rw-file`);
    t.is((await shOk(`cat ${m2()}/rw-file`)).trim(), 'w');
    t.true(
      (await mountStatus(m2())).readOnly === false,
      'chunkfs serves the store read-write; the bind alone is read-only',
    );
    // A transport, buffer or atime mode is the mount process's: a bind cannot have its own.
    const other = TRANSPORT === 'fuse-native' ? 'fuse3' : 'fuse-native';
    await fsp.mkdir(fixture.dir + '/m3');
    for (const [opts, named] of [
      [`transport=${other}`, `transport=${other} \\(the live mount runs transport=`],
      ['noatime,debug', 'noatime \\(the live mount runs relatime\\), debug \\(the live mount runs without it\\)'],
    ]) {
      const r = await run(process.execPath, [CLI_JS, 'mount', fixture.store, fixture.dir + '/m3', '-o', opts]);
      t.is(r.code, 1);
      t.regex(
        r.stderr,
        new RegExp(
          `is mounted on ${m1()} and ${m2()} by pid ${first.child.pid}; a second mount of it is a bind of that mount .* cannot take ${named}`,
        ),
      );
      t.false(isMounted(fixture.dir + '/m3'));
    }
    // Stopping the mount process (SIGTERM) unmounts its binds too: none is left answering ENOTCONN.
    await first.stop();
    t.false(isMounted(m2()));
    t.false(isMounted(m1()));
  },
);

test.serial('a store served read-only (-o ro) binds read-only and refuses rw', async (t) => {
  const first = await fixture.mountAt(fixture.store, m1(), ['-o', 'ro']);
  const second = await fixture.mountAt(fixture.store, m2());
  t.regex(second.readyLine, /read-only\)$/);
  t.regex((await sh(`touch ${m2()}/x`)).stderr, /Read-only file system/);
  const rw = await run(process.execPath, [CLI_JS, 'mount', fixture.store, fixture.dir + '/m3', '-o', 'rw']);
  t.regex(rw.stderr, /cannot take rw \(the live mount is served read-only: -o ro\)/);
  await first.stop();
  t.false(isMounted(m2()));
});

test.serial(
  'a store mounted in another mount namespace is refused at once, not bound and not waited for',
  async (t) => {
    // unshare execs the mount process itself: SIGTERM from stop() reaches it, and its namespace ends with it.
    const elsewhere = fixture.track(
      await startMount({
        command: 'unshare',
        args: [
          '-m',
          '--propagation',
          'private',
          process.execPath,
          CLI_JS,
          'mount',
          fixture.store,
          m1(),
          ...transportArgs(),
        ],
        mountpoint: m1(),
        readyPattern: /^chunkfs: mounted /,
      }),
    );
    t.false(isMounted(m1()), 'not visible in this namespace');
    const r = await run(process.execPath, [CLI_JS, 'mount', fixture.store, m2()]);
    t.is(r.code, 1);
    t.regex(
      r.stderr,
      new RegExp(
        `store ${fixture.store} is mounted on ${m1()} by pid ${elsewhere.child.pid}, in another mount namespace`,
      ),
    );
    t.notRegex(r.stderr, /waiting/);
    t.false(isMounted(m2()));
    await elsewhere.stop();
  },
);

/** Whether mountpoint leaves /proc/mounts within waitMs. */
async function unmountedWithin(mountpoint: string, waitMs: number): Promise<boolean> {
  for (let i = 0; i * 100 < waitMs && isMounted(mountpoint); i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  return !isMounted(mountpoint);
}

test.serial(
  'kill -9 of the mount process: its binds go with its first mount point, none is left answering ENOTCONN',
  async (t) => {
    const first = await fixture.mountAt(fixture.store, m1());
    await fixture.mountAt(fixture.store, m2());
    try {
      await shOk(`echo before > ${m2()}/killed-file && sync ${m2()}/killed-file`);
      await first.kill9();
      // auto_unmount takes the first; the bind watchdog (cli/bind-watchdog.ts) the bind.
      t.true(await unmountedWithin(m1(), 10_000), 'the first mount point is gone');
      t.true(await unmountedWithin(m2(), 10_000), 'the bind is gone too');
      t.notRegex((await sh(`ls ${m2()}`)).stderr, /not connected/);
    } finally {
      for (const m of [m2(), m1()]) if (isMounted(m)) await run('umount', ['-l', m]);
    }
    // The store mounts again and kept what was synced.
    const again = await fixture.mountAt(fixture.store, m1());
    t.is((await shOk(`cat ${m1()}/killed-file`)).trim(), 'before');
    await again.stop();
  },
);

// The device number of a dead connection goes to the next FUSE mount; a watchdog that woke late
// unmounted that live mount (another test's, in a CI run). It takes only mount points that fail a stat.
test.serial(
  'the bind watchdog of an ended mount process leaves a live mount with its device number and store alone',
  async (t) => {
    const live = await fixture.mountAt(fixture.store, m1());
    try {
      await shOk(`echo kept > ${m1()}/live-file`);
      const dev = chunkfsDevAt(m1());
      t.not(dev, null);
      // The watchdog as a mount process starts it, then that process ends without saying "done".
      const dog = spawn(
        '/bin/bash',
        ['-c', WATCHDOG_SCRIPT, 'chunkfs-bind-watchdog', dev!, escapeMountField(fixture.store)],
        { stdio: ['pipe', 'ignore', 'ignore'] },
      );
      const exited = new Promise<number | null>((resolve) => dog.on('exit', (code) => resolve(code)));
      dog.stdin.end();
      t.is(await exited, 0);
      t.true(isMounted(m1()), 'the live mount is still mounted');
      t.is((await shOk(`cat ${m1()}/live-file`)).trim(), 'kept');
    } finally {
      await live.stop();
    }
  },
);
