// DESIGN §4: no path under a store is readable or writable by anyone but its owner. Files of mode 0600 and
// 0644 are made through the mount, with a mixed workload (small and multi-chunk files, overwrites, an EC
// directory, rename, unlink, a kill -9 and remount); then uid 65534 tries to open every path of the store
// and of its disk directories (outside the store, in a directory it can traverse): each fails with EACCES,
// while mounted (meta.db-wal/-shm and the lock exist) and after unmount; and `find -perm /077` finds nothing.
import test from 'ava';
import * as path from 'node:path';
import { storeFixture, mkfs, fsClient, shOk, NOBODY_UID } from '../helpers/mount';

const fixture = storeFixture(test, 'privacy', { mkfs: false }); // 0755: uid 65534 reaches the store and the disks, and must stop there
const DISKS = [0, 1, 2, 3, 4, 5];

test.serial.before(async () => {
  await mkfs(fixture.store, [...DISKS.flatMap((i) => ['--disk', `${fixture.dir}/disk${i}`]), '--layout', 'replica:3']);
});

// The mount's reclaim and group closes remove shard directories while find walks them: a path gone
// between its directory's read and its stat is not an error (-ignore_readdir_race); what is there is checked.
const roots = (): string => [fixture.store, ...DISKS.map((i) => `${fixture.dir}/disk${i}`)].join(' ');

/** As uid 65534: open every path of the store and its disks; the errno of each that did not give EACCES. */
async function nobodyOpens(): Promise<{ paths: number; notRefused: string[] }> {
  const list = (await shOk(`find ${roots()} -ignore_readdir_race -print`)).split('\n').filter((p) => p !== '');
  const results = await fsClient(
    list.map((p, i) => ['open', `f${i}`, p, ['rdonly']]),
    { asUid: NOBODY_UID },
  );
  const notRefused = results.flatMap((r, i) => (r.err === 'EACCES' ? [] : [`${list[i]}: ${r.err ?? 'opened'}`]));
  return { paths: list.length, notRefused };
}

test.serial(
  'mixed workload with a crash: uid 65534 can open no path of the store, find -perm /077 finds nothing',
  async (t) => {
    let m = await fixture.mount();
    const mnt = m.mountpoint;
    await shOk(`cd ${mnt}
    (umask 077; head -c 100 /dev/urandom > small600; head -c 9M /dev/urandom > big600)
    head -c 5000 /dev/urandom > small644; head -c 6M /dev/urandom > big644; chmod 644 small644 big644
    dd if=/dev/urandom of=big644 bs=4k count=3 seek=100 conv=notrunc status=none
    mkdir ec; setfattr -n user.chunkfs.layout -v ec:4+2 ec
    head -c 5M /dev/urandom > ec/e; dd if=/dev/urandom of=ec/e bs=1k count=5 seek=33 conv=notrunc status=none
    mv small644 renamed644; head -c 5M /dev/urandom > gone; rm gone; truncate -s 1M big600
    sync`);
    const modes = await fsClient([
      ['stat', `${mnt}/small600`],
      ['stat', `${mnt}/renamed644`],
    ]);
    t.is(modes[0].ok.mode & 0o777, 0o600);
    t.is(modes[1].ok.mode & 0o777, 0o644);
    // A crash in the middle of unsynced writes, then a remount (recovery runs at open).
    await shOk(
      `head -c 8M /dev/urandom > ${mnt}/unsynced; dd if=/dev/urandom of=${mnt}/big644 bs=4k count=8 seek=7 conv=notrunc status=none`,
    );
    await m.kill9();
    m = await fixture.mount();
    await shOk(`cd ${m.mountpoint}; head -c 3M /dev/urandom > after; cat big644 renamed644 small600 > /dev/null; sync`);

    const mounted = await nobodyOpens();
    t.true(mounted.paths > 60, `the walk saw the shards (${mounted.paths} paths)`);
    t.deepEqual(mounted.notRefused, [], 'while mounted');
    t.regex(await shOk(`ls ${fixture.store}`), /meta\.db-wal/);
    t.is(await shOk(`find ${roots()} -ignore_readdir_race -perm /077`), '');

    await m.stop();
    t.deepEqual((await nobodyOpens()).notRefused, [], 'after unmount');
    t.is(await shOk(`find ${roots()} -ignore_readdir_race -perm /077`), '');
  },
);
