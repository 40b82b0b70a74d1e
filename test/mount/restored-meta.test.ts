// A restored backup of the metadata on a bad day (DESIGN §4 "Restored metadata"): the store wrote on
// after the backup, so its disks hold shards of files the restored metadata never heard of. The next
// mount numbers new files above every id the disks have seen (a one-line notice), so no new file meets
// an old one's shards; the old files and the new read right, and the shards of the lost files stay on
// the disks, unknown to fsck and never removed, not even by --repair. Both engines (CHUNKFS_TEST_META).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chunkfsCli, shOk, storeFixture } from '../helpers/mount';
import { copyStoreDir } from '../helpers/pg-meta';

const fixture = storeFixture(test, 'restored-meta');
const FILE_BYTES = 300_000; // above the small-file bound: each file has shards of its own

/** Write n random files named prefix1.. into the mount, a copy of each beside it; their inode numbers. */
async function writeFiles(prefix: string, n: number): Promise<number[]> {
  const inos: number[] = [];
  for (let i = 1; i <= n; i++) {
    const name = `${prefix}${i}`;
    await shOk(
      `head -c ${FILE_BYTES} /dev/urandom > ${fixture.dir}/${name} && cp ${fixture.dir}/${name} ${fixture.mountpoint}/`,
    );
    inos.push(fs.statSync(`${fixture.mountpoint}/${name}`).ino);
  }
  return inos;
}

/** Files under dir, relative to it; a directory removed meanwhile (a live mount's reclaimer) is skipped. */
function filesUnder(dir: string, rel = ''): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return entries.flatMap((e) => (e.isDirectory() ? filesUnder(dir, path.join(rel, e.name)) : [path.join(rel, e.name)]));
}

/** Shard files of these file ids on the store's disks. */
function shardsOf(inos: number[]): string[] {
  const names = new Set(inos.map((i) => i.toString(16).padStart(16, '0')));
  const disks = path.join(fixture.store, 'disks');
  return filesUnder(disks)
    .filter(
      (p) =>
        p.endsWith('.shard') &&
        names.has(
          p
            .split('/')
            .find((s) => /\.v\d+$/.test(s))!
            .split('.')[0],
        ),
    )
    .sort();
}

/** The metadata's backup (meta.db, or a copy of the PostgreSQL database), and putting it back. */
function backupMeta(to: string): void {
  copyStoreDir(fixture.store, to, (p) => !p.startsWith(path.join(fixture.store, 'disks')));
}
function restoreMeta(from: string): void {
  const config = JSON.parse(fs.readFileSync(`${from}/chunkfs.json`, 'utf8')) as { meta?: { url: string } };
  if (config.meta !== undefined) {
    // The database put back is the backup's copy: the store's config names it.
    const file = `${fixture.store}/chunkfs.json`;
    const own = JSON.parse(fs.readFileSync(file, 'utf8')) as { meta: { url: string } };
    own.meta.url = config.meta.url;
    fs.writeFileSync(file, JSON.stringify(own, null, 2) + '\n', { mode: 0o600 });
    return;
  }
  for (const f of ['meta.db-wal', 'meta.db-shm']) fs.rmSync(`${fixture.store}/${f}`, { force: true });
  fs.copyFileSync(`${from}/meta.db`, `${fixture.store}/meta.db`);
}

test.serial('after a restored backup of the metadata, new files never meet the shards of files it lost', async (t) => {
  let m = await fixture.mount();
  const old = await writeFiles('a', 3);
  await m.stop();
  backupMeta(`${fixture.dir}/backup`);

  m = await fixture.mount();
  const lost = await writeFiles('b', 4);
  await m.stop();
  const lostShards = shardsOf(lost);
  t.is(lostShards.length, 4 * 3, 'replica:3: three shards a file');
  const lostBytes = lostShards.map((p) => fs.readFileSync(path.join(fixture.store, 'disks', p)));

  restoreMeta(`${fixture.dir}/backup`);
  m = await fixture.mount();
  t.regex(
    m.output(),
    new RegExp(
      `store ${fixture.store}: its metadata is older than its disks .*seen file ids up to ${Math.max(...lost)}, ` +
        `the metadata only up to ${Math.max(...old)}`,
    ),
  );
  const fresh = await writeFiles('c', 3);
  t.true(Math.min(...fresh) > Math.max(...lost), `new ${fresh} above the lost ${lost}`);
  for (const name of ['a1', 'a2', 'a3', 'c1', 'c2', 'c3'])
    await shOk(`cmp ${fixture.dir}/${name} ${fixture.mountpoint}/${name}`);
  t.deepEqual(fs.readdirSync(fixture.mountpoint).sort(), ['a1', 'a2', 'a3', 'c1', 'c2', 'c3']);
  await m.stop();

  // The lost files' shards: untouched, unknown to fsck, kept by --repair.
  for (const repair of [[], ['--repair']]) {
    const r = await chunkfsCli(['fsck', fixture.store, ...repair]);
    t.regex(r.stdout, /: 6 chunks, 18 shards checked: 0 missing, 0 bad headers, 0 unreadable, 0 leaked shard file/);
    t.regex(r.stdout, / 12 unknown file\(s\)/, r.stdout);
  }
  t.deepEqual(shardsOf(lost), lostShards);
  t.deepEqual(
    lostShards.map((p) => fs.readFileSync(path.join(fixture.store, 'disks', p))),
    lostBytes,
    'the lost files shards are as they were',
  );

  // The next mount finds nothing to skip: one notice per restore.
  m = await fixture.mount();
  t.notRegex(m.output(), /older than its disks/);
  await shOk(`cmp ${fixture.dir}/c1 ${fixture.mountpoint}/c1`);
  await m.stop();
});

/** "{file}.v{version}" directories of a file's shards. */
function versionsOf(ino: number): string[] {
  return [...new Set(shardsOf([ino]).map((p) => p.split('/').find((s) => /\.v\d+$/.test(s))!))].sort();
}

/** Wait (bounded) until the mount's reclaimer deleted the shards of these file ids' versions not in keep. */
async function reclaimed(inos: number[], keep: string[]): Promise<void> {
  const left = (): string[] => shardsOf(inos).filter((p) => !keep.some((k) => p.includes(`/${k}/`)));
  for (let i = 0; i < 600 && left().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
}

function bytesOf(shards: string[]): Buffer[] {
  return shards.map((p) => fs.readFileSync(path.join(fixture.store, 'disks', p)));
}

test.serial(
  'after a restore, files it knows keep the versions written since: never overwritten; gone ones are named',
  async (t) => {
    await fixture.stopAll(); // a failed test before may have left its mount
    let m = await fixture.mount();
    const [a1, a2, a3] = await writeFiles('d', 3);
    await m.stop();
    const backedUp = versionsOf(a1);
    backupMeta(`${fixture.dir}/backup2`);

    // After the backup: d1 rewritten whole (its old version reclaimed), d2 deleted (reclaimed).
    m = await fixture.mount();
    await shOk(
      `head -c ${FILE_BYTES} /dev/urandom > ${fixture.dir}/d1 && cp ${fixture.dir}/d1 ${fixture.mountpoint}/d1 && sync ${fixture.mountpoint}/d1`,
    );
    await shOk(`rm ${fixture.mountpoint}/d2`);
    const written = versionsOf(a1).filter((v) => !backedUp.includes(v));
    t.is(written.length, 1, `one version of d1 written after the backup: ${versionsOf(a1)}`);
    await reclaimed([a1, a2], written);
    await m.stop();
    t.deepEqual(versionsOf(a1), written, "d1's backed-up version was reclaimed");
    t.deepEqual(shardsOf([a2]), [], "d2's shards were reclaimed");
    const since = shardsOf([a1]);
    const sinceBytes = bytesOf(since);

    restoreMeta(`${fixture.dir}/backup2`);
    m = await fixture.mount();
    t.regex(m.output(), /1 chunk version\(s\) of 1 file\(s\) it knows were written after it/, m.output());
    t.regex(m.output(), new RegExp(`2 file\\(s\\) name chunk versions no online disk holds`), m.output());
    // d1 written again: its new version is numbered above the one on the disks, which stays as it was.
    await shOk(
      `head -c ${FILE_BYTES} /dev/urandom > ${fixture.dir}/d1 && cp ${fixture.dir}/d1 ${fixture.mountpoint}/d1 && sync ${fixture.mountpoint}/d1`,
    );
    await shOk(`cmp ${fixture.dir}/d1 ${fixture.mountpoint}/d1 && cmp ${fixture.dir}/d3 ${fixture.mountpoint}/d3`);
    await m.stop();
    t.true(versionsOf(a1).length >= 2, `d1 has a new version beside the kept one: ${versionsOf(a1)}`);
    t.deepEqual(bytesOf(since), sinceBytes, 'the version written after the backup is as it was');

    for (const repair of [[], ['--repair']]) {
      const r = await chunkfsCli(['fsck', fixture.store, ...repair]);
      t.regex(r.stdout, / 3 missing,/, r.stdout); // d2's three replicas: the metadata still names them
      t.regex(r.stdout, / 0 leaked shard file/, r.stdout);
    }
    t.deepEqual(bytesOf(since), sinceBytes, 'fsck --repair kept them');
    t.true(a3 > 0);
  },
);

test.serial(
  'a kill -9 of the mount after the backup: a restore is still found; no file id or version is used again',
  async (t) => {
    await fixture.stopAll(); // a failed test before may have left its mount
    let m = await fixture.mount();
    const [e1] = await writeFiles('e', 2);
    await m.stop();
    const backedUp = versionsOf(e1);
    backupMeta(`${fixture.dir}/backup3`);

    // After the backup: new files and a rewrite of e1, durable, then the mount killed (no clean close).
    m = await fixture.mount();
    const lost = await writeFiles('f', 2);
    await shOk(
      `head -c ${FILE_BYTES} /dev/urandom > ${fixture.dir}/e1 && cp ${fixture.dir}/e1 ${fixture.mountpoint}/e1`,
    );
    await shOk(`cd ${fixture.mountpoint} && sync e1 f1 f2`); // fsync of each: its bytes and the metadata durable
    await m.kill9();
    await m.stop();
    const rewritten = shardsOf([e1]).filter((p) => !backedUp.some((v) => p.includes(`/${v}/`)));
    t.is(rewritten.length, 3, 'e1 written again after the backup: three replicas');
    const kept = [...shardsOf(lost), ...rewritten];
    const keptBytes = bytesOf(kept);

    restoreMeta(`${fixture.dir}/backup3`);
    m = await fixture.mount();
    t.regex(m.output(), new RegExp(`seen file ids up to ${Math.max(...lost)}`), m.output());
    t.regex(m.output(), /chunk version\(s\) of 1 file\(s\) it knows were written after it/, m.output());
    const fresh = await writeFiles('g', 2);
    t.true(Math.min(...fresh) > Math.max(...lost), `new ${fresh} above the lost ${lost}`);
    await shOk(
      `head -c ${FILE_BYTES} /dev/urandom > ${fixture.dir}/e1 && cp ${fixture.dir}/e1 ${fixture.mountpoint}/e1`,
    );
    for (const name of ['e1', 'e2', 'g1', 'g2']) await shOk(`cmp ${fixture.dir}/${name} ${fixture.mountpoint}/${name}`);
    await m.stop();
    t.deepEqual(bytesOf(kept), keptBytes, 'no shard written after the backup was overwritten or removed');
  },
);
