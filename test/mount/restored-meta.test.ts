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

/** Shard files of these file ids on the store's disks. */
function shardsOf(inos: number[]): string[] {
  const names = new Set(inos.map((i) => i.toString(16).padStart(16, '0')));
  const disks = path.join(fixture.store, 'disks');
  return (fs.readdirSync(disks, { recursive: true, encoding: 'utf8' }) as string[])
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
