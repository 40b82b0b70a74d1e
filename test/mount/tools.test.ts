// Real tools on a chunkfs mount (each run as a child process with a timeout): fio random writes with
// crc32c verification, a tar round trip keeping mtimes and modes, cp -a, git, and SQLite under random
// inserts and updates with PRAGMA integrity_check; git and SQLite also in an ec:4+2,aes256gcm directory.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, sh, shOk, TRANSPORT } from '../helpers/mount';

const shared = sharedMount(test, 'tools');
const P = (rel: string): string => path.join(shared.mount.mountpoint, rel);

test.serial.before(async () => {
  // A source tree with varied modes, times, sizes, a symlink and a hard link.
  await shOk(`set -e; src=${shared.dir}/src; mkdir -p $src/sub/deep; cd $src
    head -c 3000000 /dev/urandom > big.bin; echo hello > small.txt; : > empty
    printf 'x%.0s' $(seq 1 5000) > sub/xs; head -c 70000 /dev/urandom > sub/deep/mid.bin
    ln -s small.txt link; ln small.txt hard
    chmod 600 big.bin; chmod 751 sub; chmod 640 sub/xs; chmod 4755 sub/deep/mid.bin
    touch -d '2001-02-03 04:05:06.123456789' small.txt; touch -d '1999-12-31 23:59:59' sub/xs sub
    touch -h -d '2005-05-05 05:05:05' link`);
});

// Modes, sizes, mtimes (to the second for tar), link targets and contents of a tree, for comparison.
// (Directory sizes are filesystem-specific and left out.)
const LISTING = `find . \\( -type d -printf '%p %M dir %T@\\n' \\) -o -printf '%p %M %s %T@ %l\\n' | LC_ALL=C sort; find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum`;

test('fio random writes from 4 jobs, verified with crc32c', async (t) => {
  await shOk(`mkdir -p ${P('fio')}`);
  const r = await sh(
    `cd ${P('fio')} && fio --name=verify --rw=randwrite --bs=4k --size=8M --ioengine=psync \
    --fallocate=none --verify=crc32c --do_verify=1 --verify_fatal=1 --numjobs=4 --group_reporting \
    --output-format=terse`,
    { timeoutMs: 240_000 },
  );
  t.is(r.code, 0, r.stderr + r.stdout);
  const fields = r.stdout.trim().split('\n').pop()!.split(';');
  t.is(fields[4], '0', 'fio error field'); // terse v3: field 5 is the error code
});

test('tar round trip preserves contents, modes and mtimes', async (t) => {
  await shOk(
    `cd ${shared.dir} && tar -cf ${P('src.tar')} src && mkdir -p ${P('untar')} && tar -xpf ${P('src.tar')} -C ${P('untar')}`,
    { timeoutMs: 120_000 },
  );
  const want = await shOk(`cd ${shared.dir}/src && ${LISTING}`);
  const got = await shOk(`cd ${P('untar/src')} && ${LISTING}`);
  // tar keeps whole seconds of mtime: compare with the fractions cut
  const cut = (s: string): string => s.replace(/ (\d+)\.\d+(\s)/g, ' $1$2');
  t.is(cut(got), cut(want));
  // and back out of the mount again
  await shOk(`mkdir -p ${shared.dir}/back && cd ${P('untar')} && tar -cf - src | tar -xpf - -C ${shared.dir}/back`);
  t.is(cut(await shOk(`cd ${shared.dir}/back/src && ${LISTING}`)), cut(want));
});

test('cp -a keeps everything, to the nanosecond', async (t) => {
  await shOk(`cp -a ${shared.dir}/src ${P('cpa')}`, { timeoutMs: 120_000 });
  const want = await shOk(`cd ${shared.dir}/src && ${LISTING}`);
  t.is(await shOk(`cd ${P('cpa')} && ${LISTING}`), want);
  const hard = await shOk(`stat -c '%h %i' ${P('cpa/small.txt')} ${P('cpa/hard')}`);
  const [a, b] = hard.trim().split('\n');
  t.is(a, b);
  t.true(a.startsWith('2 '));
});

// Each on the default layout and in an ec:4+2,aes256gcm directory: EC pieces, AES-GCM segments,
// partial overwrites of encrypted EC chunks (new versions through the intent log) and read grants of
// both, through the tools' own access patterns. Layouts and read grants are not fuse-native's: on its
// pass the default layout only (scripts/test/passes.ts says which checks run on both transports).
const ALL_LAYOUT_DIRS: Array<[string, string]> = [
  ['default', ''],
  ['ec:4+2,aes256gcm', 'ecaes/'],
];
const LAYOUT_DIRS = ALL_LAYOUT_DIRS.filter(([layout]) => TRANSPORT !== 'fuse-native' || layout === 'default');
test.serial.before(async () => {
  await shOk(`mkdir ${P('ecaes')} && setfattr -n user.chunkfs.layout -v ec:4+2,aes256gcm ${P('ecaes')}`);
});

for (const [layout, sub] of LAYOUT_DIRS) {
  test(`git init, add, commit, log, fsck (${layout})`, async (t) => {
    const repo = P(`${sub}repo`);
    const g = `git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main`;
    await shOk(
      `cp -a ${shared.dir}/src ${repo} && cd ${repo} && ${g} init -q && ${g} add -A && ${g} commit -qm first`,
      { timeoutMs: 120_000 },
    );
    await shOk(`cd ${repo} && echo change >> small.txt && ${g} commit -qam second && ${g} gc -q`, {
      timeoutMs: 120_000,
    });
    t.is((await shOk(`cd ${repo} && git log --oneline | wc -l`)).trim(), '2');
    const fsck = await sh(`cd ${repo} && git fsck --full --strict`, { timeoutMs: 120_000 });
    t.is(fsck.code, 0, fsck.stderr);
    t.is((await shOk(`cd ${repo} && git status --porcelain`)).trim(), '');
  });
}

for (const [layout, sub] of LAYOUT_DIRS) {
  test(`sqlite3: random inserts and updates, then PRAGMA integrity_check (${layout})`, async (t) => {
    const db = P(`${sub}test.db`);
    const plain = `${shared.dir}/plain-${sub === '' ? 'default' : 'ecaes'}.db`;
    const sql = [
      'PRAGMA journal_mode=WAL;',
      'CREATE TABLE kv(k INTEGER PRIMARY KEY, v TEXT, n INTEGER);',
      'CREATE INDEX kv_n ON kv(n);',
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 20000)',
      '  INSERT INTO kv SELECT x, hex(randomblob(40)), abs(random()) % 1000 FROM c;',
    ];
    for (let i = 0; i < 20; i++) {
      sql.push(
        'BEGIN;',
        `UPDATE kv SET v = hex(randomblob(60)), n = n + 1 WHERE k % 20 = ${i};`,
        `INSERT INTO kv(v, n) SELECT hex(randomblob(100)), ${i} FROM kv WHERE k % 97 = ${i};`,
        `DELETE FROM kv WHERE k % 101 = ${i};`,
        'COMMIT;',
      );
    }
    sql.push('PRAGMA journal_mode=DELETE;', 'VACUUM;');
    await shOk(`sqlite3 ${db}`, { input: sql.join('\n'), timeoutMs: 180_000 });
    const check = await shOk(`sqlite3 ${db} 'PRAGMA integrity_check;' 'SELECT count(*) > 15000 FROM kv;'`);
    t.is(check.trim(), 'ok\n1');
    // the same statements on a plain directory give the same row count
    await shOk(`sqlite3 ${plain}`, { input: sql.join('\n').replace(/randomblob\(\d+\)/g, 'randomblob(1)') });
    const a = await shOk(`sqlite3 ${db} 'SELECT count(*), sum(n) FROM kv;'`);
    const b = await shOk(`sqlite3 ${plain} 'SELECT count(*), sum(n) FROM kv;'`);
    t.is(a.split('|')[0], b.split('|')[0]);
  });
}
