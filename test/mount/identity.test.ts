// A store opened on metadata that is not its own (DESIGN §4 "Identity"), through the path users take, on
// the engine of CHUNKFS_TEST_META (SQLite by default; npm run test:pg: PostgreSQL): with an empty
// meta.db or database, or another store's, `chunkfs mount` (read-write and -o ro) and every tool that
// opens the store refuse, naming the store ids and what to check, and every shard file stays; with its
// own metadata back the files read as before. An older copy of its own metadata (a restore) mounts, and
// `chunkfs scrub --repair` through the mount reports what differs and removes nothing.
import test from 'ava';
import * as path from 'node:path';
import { storeFixture, mkfs, shOk, chunkfsCli, chunkfsOk } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';
import { copyStoreDir } from '../helpers/pg-meta';
import { configOf, shardFiles, useMetaOf } from '../helpers/meta-swap';

const MKFS = ['--disks', '3', '--layout', 'replica:2', '--chunk-size', '1M'];
const fixture = storeFixture(test, 'identity', { mkfs: MKFS });
test.serial.afterEach.always(() => fixture.stopAll());
const SRC = path.join(REPO_ROOT, 'store');

/** The refusal every opener gives, for metadata `what` ('empty', or the store whose metadata it is). */
function refusal(what: string): RegExp {
  const own = configOf(fixture.store).storeUuid;
  return what === 'empty'
    ? new RegExp(`holds no chunkfs metadata \\(no schema\\), so it is not this store's \\(store ${own}\\).*check `)
    : new RegExp(
        `holds the metadata of store ${configOf(what).storeUuid}, and chunkfs.json names store ${own}.*check `,
      );
}

test.serial(
  "empty metadata, another store's: mount (rw, -o ro) and every tool refuse, naming the ids; every shard stays; its own metadata back, the files are there",
  async (t) => {
    const m = await fixture.mount();
    await shOk(`cp -a ${SRC} ${m.mountpoint}/src && head -c 5000000 /dev/urandom > ${m.mountpoint}/src/data && sync`);
    await shOk(`cp ${m.mountpoint}/src/data ${fixture.dir}/data.copy`);
    await m.stop();
    const other = path.join(fixture.dir, 'other');
    await mkfs(other, MKFS);
    const own = path.join(fixture.dir, 'own');
    copyStoreDir(fixture.store, own); // its metadata, to put back at the end
    const shards = shardFiles(fixture.store);
    t.true(shards.length >= 10, `${shards.length} shard files`);
    for (const what of ['empty', other]) {
      useMetaOf(fixture.store, what);
      const re = refusal(what);
      const rw = await t.throwsAsync(fixture.mount());
      t.regex(rw!.message, re, 'mount');
      const ro = await t.throwsAsync(fixture.mount(['-o', 'ro']));
      t.regex(ro!.message, re, 'mount -o ro');
      t.notRegex(ro!.message, /read-write once/, 'never the harmful advice to open it read-write');
      const to = configOf(fixture.store).meta === undefined ? 'postgresql:///nowhere?host=/nonexistent' : 'sqlite';
      const tools = [
        ['scrub', '--repair', '--force'],
        ['fsck', '--repair', '--force'],
        ['heal'],
        ['compact'],
        ['status'],
        ['inspect', '--ino', '2'],
      ];
      for (const args of [
        ...tools.map(([verb, ...rest]) => [verb, fixture.store, ...rest]),
        ['meta', 'copy', fixture.store, '--to', to],
      ]) {
        const r = await chunkfsCli(args);
        t.not(r.code, 0, args.join(' '));
        t.regex(r.stderr, re, args.join(' '));
      }
      t.deepEqual(shardFiles(fixture.store), shards, `${what}: every shard file is still there`);
    }
    useMetaOf(fixture.store, own);
    const again = await fixture.mount();
    await shOk(
      `diff -r -x data ${SRC} ${again.mountpoint}/src && cmp ${fixture.dir}/data.copy ${again.mountpoint}/src/data`,
    );
    await again.stop();
    t.regex(await chunkfsOk(['scrub', fixture.store]), / 0 bad or missing, .* 0 leaked file\(s\), 0 unknown/);
  },
);

test.serial(
  'an older copy of its own metadata (a restore) mounts; scrub --repair through the mount reports what differs and removes nothing',
  async (t) => {
    const backup = path.join(fixture.dir, 'backup');
    copyStoreDir(fixture.store, backup);
    const m = await fixture.mount();
    await shOk(`cp -a ${SRC} ${m.mountpoint}/later && head -c 3000000 /dev/urandom > ${m.mountpoint}/src/big && sync`);
    await m.stop();
    useMetaOf(fixture.store, backup);
    const shards = shardFiles(fixture.store);
    const restored = await fixture.mount();
    await shOk(`diff -r -x data ${SRC} ${restored.mountpoint}/src && [ ! -e ${restored.mountpoint}/later ]`);
    const r = await chunkfsCli(['scrub', restored.mountpoint, '--repair', '--force']);
    t.is(r.code, 1, 'files the metadata does not know need the operator');
    t.regex(r.stdout, /\(mounted\): .* 0 leaked file\(s\) \(0 moved to quarantine\), [1-9]\d* unknown/);
    t.regex(r.stderr, /shard or temp file\(s\) that the metadata neither names nor proves freed, left in place/);
    await restored.stop();
    t.deepEqual(shardFiles(fixture.store), shards, 'every shard file is still there');
  },
);
