// inspect, fsck, replace-disk and --version through the CLI (DESIGN §7): inspect decodes and verifies
// shard files without the metadata and names the bad block; fsck finds missing and leaked shards
// online and repairs them offline; replace-disk adopts a new directory for a lost disk while mounted
// and rebuilds onto it; bad arguments get a clear error and change nothing.
import test from 'ava';
import * as path from 'node:path';
import { promises as fsp } from 'node:fs';
import { sharedMount, chunkfsCli, chunkfsOk, run, shOk } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';
import { shardRelPath } from '../../src/path';

const shared = sharedMount(test, 'inspect-fsck');
const cli = (args: string[]) => chunkfsCli(args);
const MB = 1 << 20;

const ok = (args: string[]) => chunkfsOk(args);
const json = async (args: string[]): Promise<any> => JSON.parse(await ok([...args, '--json']));
const readsBack = async (): Promise<boolean> =>
  (await run('cmp', [`${shared.dir}/ref`, `${shared.mount.mountpoint}/f`])).code === 0;

test.serial.before(async () => {
  await shOk(`head -c ${9 * MB} /dev/urandom > ${shared.dir}/ref && cp ${shared.dir}/ref ${shared.dir}/mnt/f`);
});

test.serial('--version; --help of every new verb', async (t) => {
  const pkg = JSON.parse(await fsp.readFile(path.join(REPO_ROOT, 'package.json'), 'utf8'));
  t.is(await ok(['--version']), `chunkfs ${pkg.version} (format RUSTFS-SPEC-CHUNK-001 v1; node ${process.version})\n`);
  for (const verb of ['heal', 'fsck', 'inspect', 'compact', 'replace-disk', 'inject'])
    t.regex(await ok([verb, '--help']), new RegExp(`^usage: chunkfs ${verb} `));
  t.regex(await ok(['--help']), /inspect SHARD_FILE/);
});

test.serial(
  "inspect a file's chunk in the mount and one shard file; damage shows as the bad block or header",
  async (t) => {
    const all = await json(['inspect', `${shared.dir}/mnt/f`, '--chunk', '2']);
    t.is(all.store, shared.dir + '/store');
    t.is(all.file.path, '/f');
    t.is(all.file.chunkIndex, 2);
    t.is(String(all.file.ino), all.shards[0].header.fileId, 'the file id is the inode number');
    t.is(all.shards.length, 3);
    for (const s of all.shards) {
      t.true(s.ok);
      t.is(s.layout, 'replica');
      t.true(s.pathAgrees);
      t.is(s.header.chunkIndex, '2');
      t.is(s.blockCount, Math.ceil(MB / (16 << 10)));
    }
    const byIno = await json(['inspect', '--ino', String(all.file.ino), '--chunk', '2', shared.dir + '/store']);
    t.deepEqual(
      byIno.shards.map((s: any) => s.path),
      all.shards.map((s: any) => s.path),
    );

    const d = await json(['inject', 'corrupt', `${shared.dir}/mnt/f`, '--chunk', '0', '--shard', '2', '--block', '9']);
    const bad = await cli(['inspect', d.damage.path]);
    t.is(bad.code, 1);
    t.regex(
      bad.stdout,
      new RegExp(
        `^${d.damage.path}: BAD\\n  file ${d.damage.ino} chunk 0 version \\d+ shard 2, replica, 4\\.0 MiB of data in 256 block\\(s\\) of 16\\.0 KiB`,
      ),
    );
    t.regex(bad.stdout, /1 of 256 block\(s\) do not verify: 9\n/);
    const h = await json([
      'inject',
      'corrupt',
      `${shared.dir}/mnt/f`,
      '--chunk',
      '1',
      '--shard',
      '2',
      '--what',
      'header',
    ]);
    const badHeader = await cli(['inspect', h.damage.path, shared.dir + '/store']);
    t.is(badHeader.code, 1);
    t.regex(badHeader.stdout, /: BAD\n  header does not decode: header_crc32c/);

    const errors: Array<[string[], RegExp]> = [
      [['inspect'], /name a shard file, a file in a chunkfs mount, or --ino N/],
      [['inspect', `${shared.dir}/ref`], /is neither a shard file \(\*\.shard\) nor a file in a chunkfs mount/],
      [['inspect', `${shared.dir}/mnt/f`, '--chunk', '9'], /no shard files of file \d+ chunk 9 on any disk/],
      [['inspect', `${shared.dir}/mnt/f`, shared.dir + '/store'], /is in a chunkfs mount, which names its store/],
      [['inspect', '--ino', 'x'], /--ino: 'x' is not a whole number/],
    ];
    for (const [args, msg] of errors) {
      const r = await cli(args);
      t.not(r.code, 0, args.join(' '));
      t.regex(r.stderr, msg, args.join(' '));
    }
    await ok(['scrub', shared.mount.mountpoint, '--repair']);
  },
);

test.serial(
  'fsck: clean; a missing shard (its disk refusing writes, so not healed) is found online; offline --repair mends it and a leaked shard',
  async (t) => {
    const clean = await json(['fsck', shared.mount.mountpoint]);
    t.true(clean.online);
    t.is(clean.chunks, 3);
    t.is(clean.shardsChecked, 9);
    t.is(clean.missing + clean.badHeaders + clean.leaks.leakedShards, 0);
    const d = await json(['inject', 'drop', `${shared.dir}/mnt/f`, '--chunk', '1', '--shard', '1']);
    await ok(['inject', 'enospc', String(d.damage.diskId), shared.mount.mountpoint]);
    const found = await cli(['fsck', shared.mount.mountpoint]);
    t.is(found.code, 1);
    t.regex(found.stdout, /3 chunks, 9 shards checked: 1 missing, 0 bad headers/);
    t.regex(
      found.stderr,
      new RegExp(
        `missing: /f \\(file ${d.damage.ino}\\) chunk 1 shard 1 \\(disk ${d.damage.diskId}, ${d.damage.path}\\): no shard file`,
      ),
    );
    t.true(await readsBack());
    await shared.mount.stop();

    // A shard of a version of f older than the live one (the metadata proves it freed), at its canonical path.
    const leaked = path.join(shared.dir, 'store/disks/d0', shardRelPath(BigInt(d.damage.ino), 0n, 1n, 0));
    await fsp.mkdir(path.dirname(leaked), { recursive: true, mode: 0o700 });
    await fsp.writeFile(leaked, 'junk', { mode: 0o600 });
    const offline = await cli(['fsck', shared.dir + '/store', '--json']);
    t.is(offline.code, 1);
    const r = JSON.parse(offline.stdout);
    t.false(r.online);
    t.is(r.missing, 1);
    t.is(r.leaks.leakedShards, 1);
    t.deepEqual(r.leaks.paths, [leaked]);
    // 1 of 10 shard files: past the 5% one scan removes unasked (DESIGN §4 "Identity").
    const refused = await cli(['fsck', shared.dir + '/store', '--repair']);
    t.is(refused.code, 1, refused.stderr + refused.stdout);
    t.regex(refused.stderr, /would remove 1 of 10 shard files \(10\.0%\), more than 5%.*--force/);
    t.regex(refused.stdout, /rebuilt 1, 0 failed; moved 0 leaked file\(s\) to quarantine/);
    await fsp.access(leaked);
    const repaired = await cli(['fsck', shared.dir + '/store', '--repair', '--force']);
    t.is(repaired.code, 0, repaired.stderr + repaired.stdout);
    t.regex(repaired.stdout, /moved 1 leaked file\(s\) to quarantine/);
    t.regex(repaired.stderr, /moved 1 freed file\(s\) into \.chunks-quarantine\/\d{8}T\d{6}Z\/ on their disks/);
    await t.throwsAsync(fsp.access(leaked));
    t.regex(
      await ok(['fsck', shared.dir + '/store']),
      /0 missing, 0 bad headers, 0 unreadable, 0 leaked shard file\(s\)/,
    );
    await shared.remount();
    t.true(await readsBack());
  },
);

test.serial(
  'replace-disk: a lost disk (its directory gone) is replaced by a new directory while mounted; everything placed on it is rebuilt',
  async (t) => {
    const before = await json(['status', shared.mount.mountpoint]);
    const lost = before.disks.find((x: any) => x.id === 3);
    await shared.mount.stop();
    await fsp.rename(lost.path, lost.path + '.lost');
    await shared.remount();
    t.is((await json(['status', shared.mount.mountpoint])).disks.find((x: any) => x.id === 3).state, 'offline');
    const config = await fsp.readFile(shared.dir + '/store/chunkfs.json', 'utf8');

    const errors: Array<[string[], RegExp]> = [
      [['replace-disk', '3'], /give the old DISK id and the NEW_PATH/],
      [['replace-disk', '9', shared.dir + '/new3', shared.mount.mountpoint], /no disk 9 in this store/],
      [
        ['replace-disk', '0', shared.dir + '/new0', shared.mount.mountpoint],
        /disk 0 \(.*\) is not offline; nothing to replace/,
      ],
      [['replace-disk', '3', shared.dir + '/ref', shared.mount.mountpoint], /not a directory/],
      [['replace-disk', '3', lost.path + '.lost', shared.mount.mountpoint], /replacement disk directory must be empty/],
    ];
    for (const [args, msg] of errors) {
      const r = await cli(args);
      t.not(r.code, 0, args.join(' '));
      t.regex(r.stderr, msg, args.join(' '));
    }
    t.is(await fsp.readFile(shared.dir + '/store/chunkfs.json', 'utf8'), config, 'refused attempts change nothing');

    const r = await cli(['replace-disk', '3', shared.dir + '/new3', shared.mount.mountpoint]);
    t.is(r.code, 0, r.stderr);
    t.regex(
      r.stdout,
      new RegExp(`disk 3 is now ${shared.dir}/new3; (\\d+) shard\\(s\\) placed on it checked, \\1 rebuilt, 0 failed`),
    );
    t.regex(r.stderr, /chunkfs replace-disk: 100% /);
    const s = (await json(['status', shared.mount.mountpoint])).disks.find((x: any) => x.id === 3);
    t.is(s.state, 'ok');
    t.is(s.path, shared.dir + '/new3');
    t.is((await fsp.stat(shared.dir + '/new3')).mode & 0o777, 0o700);
    t.regex(await ok(['scrub', shared.mount.mountpoint]), /0 bad or missing/);
    await shared.remount();
    t.is(
      (await json(['status', shared.mount.mountpoint])).disks.find((x: any) => x.id === 3).state,
      'ok',
      'the new path is in the config',
    );
    t.true(await readsBack());
  },
);

test.serial(
  'chunkfs umount returns once the mount process has closed the store: no lock, no meta.db-wal; fsck runs at once',
  async (t) => {
    const store = `${shared.dir}/store`;
    await shOk(`head -c ${3 * MB} /dev/urandom > ${shared.mount.mountpoint}/g && sync ${shared.mount.mountpoint}/g`);
    const sqlite = JSON.parse(await fsp.readFile(`${store}/chunkfs.json`, 'utf8')).meta === undefined;
    t.true(
      await fsp.access(`${store}/chunkfs.lock`).then(
        () => true,
        () => false,
      ),
      'the mount holds the store',
    );
    await ok(['umount', shared.mount.mountpoint]);
    await t.throwsAsync(fsp.access(`${store}/chunkfs.lock`), undefined, 'the lock is gone when umount returns');
    if (sqlite)
      await t.throwsAsync(
        fsp.access(`${store}/meta.db-wal`),
        undefined,
        'meta.db is closed (its WAL checkpointed and removed)',
      );
    // Opened here read-write at once (what the earlier tests left to heal does not matter here).
    const r = await cli(['fsck', store, '--json']);
    t.notRegex(r.stderr, /already open read-write|still held/, r.stderr);
    t.false(JSON.parse(r.stdout).online);
  },
);
