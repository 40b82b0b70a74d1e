// Mount defaults (filesystem.md, Mounted by root) on a real mount, on the pass's transport: mounted by root,
// chunkfs behaves like other root mounts (set-id binaries run with their owner's id, device files
// open), and -o nosuid,nodev turns both off; mounted by another user it is nosuid,nodev, and asking
// for suid is refused before anything is mounted.
import test from 'ava';
import * as path from 'node:path';
import { promises as fsp } from 'node:fs';
import {
  storeFixture,
  ChunkfsMount,
  CLI_JS,
  NOBODY_UID,
  mkfs,
  sh,
  shOk,
  startMount,
  transportArgs,
  MountChild,
  run,
  TRANSPORT,
} from '../helpers/mount';

const ROOT = process.getuid?.() === 0;
const DEV_NULL = { major: 1, minor: 3 };

const fixture = storeFixture(test, 'mount-flags', { mkfs: false });

/** The mount's options as /proc/self/mounts lists them. */
async function mountFlags(mountpoint: string): Promise<string[]> {
  const line = (await fsp.readFile('/proc/self/mounts', 'utf8'))
    .split('\n')
    .find((l) => l.split(' ')[1] === mountpoint);
  if (line === undefined) throw new Error(`${mountpoint} is not mounted`);
  return line.split(' ')[3].split(',');
}

/**
 * Inside the mount: a copy of id(1) that is set-user-ID root, run by uid 65534 (its effective uid),
 * and a character device like /dev/null, written to.
 */
async function probe(m: ChunkfsMount): Promise<{ euid: string; device: string }> {
  const P = (n: string): string => path.join(m.mountpoint, n);
  await shOk(`cp /usr/bin/id ${P('id-setuid')} && chown root:root ${P('id-setuid')} && chmod 4755 ${P('id-setuid')}
    rm -f ${P('null')} && mknod -m 666 ${P('null')} c ${DEV_NULL.major} ${DEV_NULL.minor}`);
  const euid = (await shOk(`${P('id-setuid')} -u`, { asUid: NOBODY_UID })).trim();
  const wrote = await sh(`echo discarded > ${P('null')}`);
  return {
    euid,
    device: wrote.code === 0 ? 'opened' : wrote.stderr.includes('Permission denied') ? 'EACCES' : wrote.stderr.trim(),
  };
}

test.serial(
  'mounted by root: no nosuid or nodev, a set-user-ID binary runs as its owner, a device file opens',
  async (t) => {
    if (!ROOT) {
      t.pass('needs root');
      return;
    }
    await mkfs(fixture.store);
    const m = await fixture.mount();
    t.teardown(() => m.stop());
    const flags = await mountFlags(m.mountpoint);
    t.false(flags.includes('nosuid'), flags.join(','));
    t.false(flags.includes('nodev'), flags.join(','));
    t.deepEqual(await probe(m), { euid: '0', device: 'opened' });
    await m.stop();
  },
);

test.serial('mounted by root with -o nosuid,nodev: set-id bits are ignored and device files refused', async (t) => {
  if (!ROOT) {
    t.pass('needs root');
    return;
  }
  const m = await fixture.mount(['-o', 'nosuid,nodev']);
  t.teardown(() => m.stop());
  const flags = await mountFlags(m.mountpoint);
  t.true(flags.includes('nosuid'), flags.join(','));
  t.true(flags.includes('nodev'), flags.join(','));
  t.deepEqual(await probe(m), { euid: String(NOBODY_UID), device: 'EACCES' });
  await m.stop();
  // one of the two; and the libfuse3 transport's read-only kernel mount keeps ro through the remount
  const ro = await fixture.mount(['-o', 'ro,nodev']);
  t.teardown(() => ro.stop());
  const roFlags = await mountFlags(ro.mountpoint);
  t.true(roFlags.includes('nodev') && !roFlags.includes('nosuid'), roFlags.join(','));
  if (TRANSPORT !== 'fuse-native') t.true(roFlags.includes('ro'), roFlags.join(','));
  await ro.stop();
});

test.serial(
  'mounted by another user: nosuid,nodev; -o suid is refused with a reason and nothing is mounted',
  async (t) => {
    if (!ROOT) {
      t.pass('needs root to become another user');
      return;
    }
    const home = path.join(fixture.dir, 'nobody');
    await fsp.mkdir(home);
    await fsp.chown(home, NOBODY_UID, NOBODY_UID);
    const asNobody = (args: string[]): string[] => [
      `--reuid=${NOBODY_UID}`,
      `--regid=${NOBODY_UID}`,
      '--clear-groups',
      '--',
      process.execPath,
      CLI_JS,
      ...args,
    ];
    const made = await run('setpriv', asNobody(['mkfs', path.join(home, 'store'), '--disks', '3']), {
      timeoutMs: 60_000,
    });
    t.is(made.code, 0, made.stderr);
    const refused = await run(
      'setpriv',
      asNobody(['mount', path.join(home, 'store'), path.join(home, 'mnt'), ...transportArgs(), '-o', 'suid']),
      { timeoutMs: 60_000 },
    );
    t.not(refused.code, 0);
    t.regex(refused.stderr, /suid needs root/);
    // /dev/fuse is often root's only (containers): then no user can mount, and only the refusal is checked.
    if (((await fsp.stat('/dev/fuse')).mode & 0o006) !== 0o006) {
      t.log('/dev/fuse is not open to other users: no user mount here');
      return;
    }
    let m: MountChild | undefined;
    try {
      await fsp.mkdir(path.join(home, 'mnt')).catch(() => undefined);
      await fsp.chown(path.join(home, 'mnt'), NOBODY_UID, NOBODY_UID);
      m = await startMount({
        command: 'setpriv',
        args: asNobody(['mount', path.join(home, 'store'), path.join(home, 'mnt'), ...transportArgs()]),
        mountpoint: path.join(home, 'mnt'),
        readyPattern: /^chunkfs: mounted /,
      });
      const flags = await mountFlags(m.mountpoint);
      t.true(flags.includes('nosuid') && flags.includes('nodev'), flags.join(','));
    } finally {
      await m?.stop();
    }
  },
);
