// fsck (store/upkeep/fsck.ts), at the store level: missing shards and bad headers found from one
// header read each and rebuilt with repair; leaked shard files the metadata proves freed moved to the
// quarantine, others (a file id it never handed out) reported and left (DESIGN §4 "Identity"); inodes
// and container rows that nothing accounts for listed (and left alone). And fsck() itself over a
// FaultyIo: a disk failing its reads, and an offline disk, which is not looked at.
import test from 'ava';
import { FileIo } from '../../../store/file-io';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { FsckHost, fsck } from '../../../store/upkeep/fsck';
import { Healer } from '../../../store/upkeep/heal';
import { fileFixture } from './fixture';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { shardRelPath } from '../../../src/path';
import { prng, randomBytes, smallStore, writeBehind } from '../helpers';

test('fsck finds missing shards, bad headers, leaked files and unaccounted inodes; repair mends what it may', async (t) => {
  const { store } = await smallStore('replica:3');
  try {
    const a = store.ns.create(1, 'f', 0o644, 0, 0);
    const data = randomBytes(prng(11), 256 * 1024 * 2 + 5000); // 3 chunks of 256 KiB, no packing
    await store.write(a.ino, 0, data);
    const clean = await store.fsck();
    t.is(clean.chunks, 3);
    t.is(clean.shardsChecked, 9);
    t.deepEqual([clean.missing, clean.badHeaders, clean.ioErrors, clean.leaks.leakedShards], [0, 0, 0, 0]);

    fs.rmSync((await store.shardPath(a.ino, 0, 1))!);
    const header = (await store.shardPath(a.ino, 2, 0))!;
    const bytes = fs.readFileSync(header);
    bytes[100] ^= 0xff; // inside header_crc32c's range (DESIGN §3)
    fs.writeFileSync(header, bytes);
    const orphan = store.ns.db.prepare(
      `INSERT INTO inodes(ino, type, mode, uid, gid, nlink, atime_ns, mtime_ns, ctime_ns, birth_ns) VALUES (900, 'file', 33188, 0, 0, 1, 0, 0, 0, 0)`,
    );
    writeBehind(store.ns.db, () => orphan.run());
    // Inode 899 is below the allocation watermark (900) and gone: its shard was freed. 4242 was never handed out.
    const leaked = path.join(store.diskPaths().get(0)!, shardRelPath(899n, 1n, 0n, 0));
    const unknown = path.join(store.diskPaths().get(0)!, shardRelPath(4242n, 1n, 0n, 0));
    for (const f of [leaked, unknown]) {
      fs.mkdirSync(path.dirname(f), { recursive: true });
      fs.writeFileSync(f, 'junk');
    }
    store.ns.db
      .prepare(
        `INSERT INTO containers(id, pack_class, state, used_bytes, dead_bytes, capacity_bytes, sealed_from) VALUES (901, 'replica:3', 'sealed', 0, 0, 1048576, NULL)`,
      )
      .run();

    const found = await store.fsck();
    t.is(found.missing, 1);
    t.is(found.badHeaders, 1);
    t.deepEqual(
      found.problems.map((p) => [p.kind, p.chunkIndex, p.shardIndex]),
      [
        ['missing', 0, 1],
        ['header', 2, 0],
      ],
    );
    t.regex(found.problems[1].detail, /header_crc32c/);
    t.deepEqual(found.leaks.paths.sort(), [leaked, unknown].sort());
    t.deepEqual(found.leaks.unknownPaths, [unknown]);
    t.is(found.leaks.leakedShards, 1);
    t.deepEqual(found.unaccountedInodes, [900]);
    t.deepEqual(found.containerRowsWithoutInode, [901]);
    t.true(found.healQueueLength >= 2, 'what fsck found is queued for heal');

    // 1 freed of 11 shard files is past the 5% a scan removes unasked: --force.
    const refused = await store.fsck({ repair: true, offline: true });
    t.regex(refused.leaks.refused ?? '', /would remove 1 of 11 shard files \(9\.1%\), more than 5%.*--force/);
    t.is(refused.leaks.removed, 0);
    t.is(refused.rebuilt, 2);
    t.is(refused.rebuildFailed, 0);
    t.true(fs.existsSync(leaked));
    const fixed = await store.fsck({ repair: true, offline: true, force: true });
    t.is(fixed.leaks.removed, 1);
    t.false(fs.existsSync(leaked));
    t.true(
      fs.existsSync(path.join(store.diskPaths().get(0)!, fixed.leaks.quarantine!, shardRelPath(899n, 1n, 0n, 0))),
      'kept in the quarantine',
    );
    t.true(fs.existsSync(unknown), 'a file the metadata does not prove freed stays');
    const after = await store.fsck();
    t.deepEqual([after.missing, after.badHeaders, after.leaks.leakedShards, after.leaks.unknown], [0, 0, 0, 1]);
    t.deepEqual(after.unaccountedInodes, [900], 'left for the operator');
    t.true((await store.read(a.ino, 0, data.length)).equals(data));
  } finally {
    await store.close();
  }
});

test('fsck() on a disk failing its reads: io errors listed and queued for heal; an offline disk is not looked at', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const f = await fileFixture('replica:3', 4, io);
  const files = (f.store as unknown as { files: FileIo }).files;
  const host: FsckHost = {
    env: f.env,
    files,
    healer: new Healer(f.env, files),
    onlineRoots: () => f.roots(),
    orphans: () => [],
    deleteFile: (ino) => f.store.deleteFile(ino),
    reclaimNow: () => f.store.reclaimNow(),
    quarantineGraceMs: 7 * 86_400_000,
    skippedIds: () => ({ inos: [], versions: [] }),
  };
  const [failing, offline] = f.ref(0).diskIds;
  const onDisk = (d: number): number => [0, 1, 2, 3].filter((c) => f.ref(c).diskIds.includes(d)).length;
  io.addFault({ op: 'pread', path: f.store.diskPaths().get(failing)!, error: 'EIO' });
  f.env.health.setUnavailable(offline, 'test: offline');
  const r = await fsck(host);
  t.is(r.chunks, 4);
  t.is(r.shardsOnOfflineDisks, onDisk(offline));
  t.is(r.shardsChecked, 12 - onDisk(offline));
  t.like(r, { ioErrors: onDisk(failing), missing: 0, badHeaders: 0 });
  t.true(r.problems.every((p) => p.kind === 'io' && p.diskId === failing && /EIO/.test(p.detail)));
  t.is(f.env.map.healQueueLength(), onDisk(failing), 'queued for heal');
  io.clearFaults();
  f.env.health.setAvailable(offline);
  await f.store.close();
});
