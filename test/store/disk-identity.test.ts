// Disk identity (store/disk-identity.ts): a disk whose directory is missing, an empty
// mount point, or another store's disk is offline: reads are served around, writes
// degrade (queued for heal), nothing is created or written there, and status names
// the disk. Restoring it (or Store.replaceDisk on a new empty disk) brings it back.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CONFIG_FILE } from '../../store/config';
import { parseBitrotKey } from '../../src/keying';
import { verifyShardBytes } from '../../src/shard';
import { DISK_MARKER_FILE } from '../../store/disk-identity';
import { FaultyIo } from '../../store/io/faulty-io';
import { metaEndsAtCrash } from './crash-harness';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore } from './helpers';
import { forgetStoreId, openStoreMetaOf } from '../helpers/pg-meta';
import { STORE_ID_VERSION } from '../../store/meta/meta';
import { metaStoreId } from '../../store/meta/store-identity';

const DISKS = 4;
/** New chunks written while disk 1 is offline: each lands a shard on it with p = 3/4, so some always do. */
const FRESH_CHUNKS = 8;

/** Every file under root, relative, with its size (what an offline disk must keep unchanged). */
function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(`${path.relative(root, p)}:${fs.statSync(p).size}`);
    }
  };
  walk(root);
  return out.sort();
}

async function populated(): Promise<{ dir: string; ino: number; data: Buffer; disk1: string }> {
  const { store, dir } = await smallStore('replica:3', DISKS);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(21), 4 * SMALL.chunkSizeBytes + 1234);
  await store.write(f.ino, 0, data);
  const disk1 = store.diskPaths().get(1)!;
  await store.close();
  return { dir, ino: f.ino, data, disk1 };
}

/** Reads exact, a new file's writes succeed degraded and queue heal; returns the grown expectation. */
async function exerciseAround(t: import('ava').ExecutionContext, s: Store, ino: number, data: Buffer): Promise<Buffer> {
  t.true((await s.read(ino, 0, data.length)).equals(data), 'reads served around the offline disk');
  const fresh = randomBytes(prng(22), FRESH_CHUNKS * SMALL.chunkSizeBytes);
  await s.write(ino, data.length, fresh); // some of these chunks have a shard placed on disk 1
  const expected = Buffer.concat([data, fresh]);
  t.true((await s.read(ino, 0, expected.length)).equals(expected));
  const st = await s.status();
  t.true(st.counters.degraded_writes > 0, 'writes to chunks on the offline disk degrade');
  t.true(st.healQueueLength > 0, 'the missing shards are queued for heal');
  const h = await s.heal();
  t.true(h.failed.length > 0, 'heal cannot write onto the offline disk');
  return expected;
}

test('mkfs writes an identity marker naming the store and the disk in every disk directory', async (t) => {
  const { store, dir } = await smallStore('replica:3', DISKS);
  await store.close();
  const config = JSON.parse(fs.readFileSync(path.join(dir, CONFIG_FILE), 'utf8')) as {
    storeUuid: string;
    disks: Array<{ id: number; path: string }>;
  };
  t.regex(config.storeUuid, /^[0-9a-f-]{36}$/);
  for (const d of config.disks) {
    const m = JSON.parse(fs.readFileSync(path.join(dir, d.path, DISK_MARKER_FILE), 'utf8')) as Record<string, unknown>;
    // A clean close adds the inode watermark and the metadata's generation the disk has seen (store/disk-ids.ts).
    const { inoHigh, generation, ...identity } = m;
    t.deepEqual(identity, {
      format: 'chunkfs-disk',
      formatVersion: 1,
      storeUuid: config.storeUuid,
      diskId: d.id,
      unknownInos: [],
      unknownVersions: [],
      closed: true,
    });
    t.true(Number.isSafeInteger(inoHigh) && (inoHigh as number) >= 1, String(inoHigh));
    t.true(Number.isSafeInteger(generation) && (generation as number) >= 2, String(generation));
  }
});

test('a missing disk directory is offline, never recreated; restoring it brings it back and heal completes', async (t) => {
  const { dir, ino, data, disk1 } = await populated();
  const away = `${disk1}.unmounted`;
  fs.renameSync(disk1, away); // the device is not mounted: no directory at all
  const s = await Store.open(dir);
  const st = await s.status();
  const d1 = st.disks.find((d) => d.id === 1)!;
  t.is(d1.state, 'offline');
  t.true(d1.lastError.includes('disk 1') && d1.lastError.includes(disk1) && /missing/.test(d1.lastError), d1.lastError);
  t.is(st.disks.filter((d) => d.state !== 'ok').length, 1);
  const expected = await exerciseAround(t, s, ino, data);
  t.false(fs.existsSync(disk1), 'the missing disk directory was not recreated');
  await s.close();
  t.false(fs.existsSync(disk1), 'not recreated by close either');
  fs.renameSync(away, disk1); // the user mounts the device again
  const back = await Store.open(dir);
  t.is((await back.status()).disks.find((d) => d.id === 1)!.state, 'ok');
  const h = await back.heal();
  t.deepEqual(h.failed, []);
  t.is((await back.status()).healQueueLength, 0);
  const scrub = await back.scrub();
  t.deepEqual(scrub.failed, []);
  t.is((await back.status()).healQueueLength, 0, 'every shard verifies after heal');
  t.true((await back.read(ino, 0, expected.length)).equals(expected));
  await back.close();
});

test('an empty mount point (no marker) is offline and nothing is written into it', async (t) => {
  const { dir, ino, data, disk1 } = await populated();
  fs.renameSync(disk1, `${disk1}.unmounted`);
  fs.mkdirSync(disk1); // the bare mount point on the root filesystem
  const s = await Store.open(dir);
  const d1 = (await s.status()).disks.find((d) => d.id === 1)!;
  t.is(d1.state, 'offline');
  t.regex(d1.lastError, /disk 1 .*no identity marker/);
  t.is(d1.totalBytes, 0, "no space reported from the mount point's filesystem");
  await exerciseAround(t, s, ino, data);
  await s.scrub({ repair: true });
  await s.close();
  t.deepEqual(fs.readdirSync(disk1), [], 'nothing written into the empty mount point');
});

test("a foreign disk (another store's marker) is offline and left untouched", async (t) => {
  const { dir, ino, data, disk1 } = await populated();
  const other = await smallStore('replica:3', DISKS);
  const o = other.store.ns.create(1, 'o', 0o644, 0, 0);
  await other.store.write(o.ino, 0, randomBytes(prng(5), SMALL.chunkSizeBytes * 2));
  const foreign = other.store.diskPaths().get(1)!;
  await other.store.close();
  fs.renameSync(disk1, `${disk1}.mine`);
  fs.renameSync(foreign, disk1); // the wrong device mounted at disk 1's path
  const before = tree(disk1);
  const s = await Store.open(dir);
  const d1 = (await s.status()).disks.find((d) => d.id === 1)!;
  t.is(d1.state, 'offline');
  t.regex(d1.lastError, /disk 1 .*foreign disk/);
  await exerciseAround(t, s, ino, data);
  await s.scrub({ repair: true });
  await s.close();
  const reopened = await Store.open(dir); // recovery's garbage collection must not walk it either
  await reopened.close();
  t.deepEqual(tree(disk1), before, 'the foreign disk is unchanged');
});

test('a disk unmounted while the store is open goes offline at the next write; the mount point stays empty', async (t) => {
  const { dir, ino, data, disk1 } = await populated();
  const s = await Store.open(dir);
  t.true((await s.read(ino, 0, data.length)).equals(data));
  fs.renameSync(disk1, `${disk1}.unmounted`);
  fs.mkdirSync(disk1);
  const fresh = randomBytes(prng(23), FRESH_CHUNKS * SMALL.chunkSizeBytes);
  await s.write(ino, data.length, fresh);
  const d1 = (await s.status()).disks.find((d) => d.id === 1)!;
  t.is(d1.state, 'offline');
  t.regex(d1.lastError, /disk 1 .*(vanished|no identity marker)/);
  t.true((await s.read(ino, data.length, fresh.length)).equals(fresh));
  await s.close();
  t.deepEqual(fs.readdirSync(disk1), [], 'no shard written onto the mount point');
});

test('replaceDisk adopts an empty directory for a lost disk; scrub --repair rebuilds its shards', async (t) => {
  const { dir, ino, data, disk1 } = await populated();
  fs.rmSync(disk1, { recursive: true }); // the device died
  fs.mkdirSync(disk1); // a new, empty one mounted in its place
  const s = await Store.open(dir);
  t.is((await s.status()).disks.find((d) => d.id === 1)!.state, 'offline');
  t.throws(() => s.replaceDisk(0), { message: /not offline/ });
  fs.writeFileSync(path.join(disk1, 'stray'), 'x');
  t.throws(() => s.replaceDisk(1), { message: /must be empty/ });
  fs.rmSync(path.join(disk1, 'stray'));
  s.replaceDisk(1);
  t.is((await s.status()).disks.find((d) => d.id === 1)!.state, 'ok');
  const r = await s.scrub({ repair: true });
  t.true(r.healed > 0);
  t.deepEqual(r.failed, []);
  const verify = await s.scrub();
  t.is(verify.healed, 0);
  t.is((await s.status()).healQueueLength, 0);
  t.true((await s.read(ino, 0, data.length)).equals(data));
  await s.close();
  t.true(fs.existsSync(path.join(disk1, DISK_MARKER_FILE)));
});

test('a store made before markers gets a uuid and markers on its first read-write open', async (t) => {
  const { dir, ino, data } = await populated();
  const cfgPath = path.join(dir, CONFIG_FILE);
  const cfg = JSON.parse(fs.readFileSync(cfgPath, 'utf8')) as { storeUuid?: string; disks: Array<{ path: string }> };
  forgetStoreId(dir); // its metadata names no store either (DESIGN §4 "Identity")
  delete cfg.storeUuid;
  fs.writeFileSync(cfgPath, JSON.stringify(cfg));
  for (const d of cfg.disks) fs.rmSync(path.join(dir, d.path, DISK_MARKER_FILE));
  await t.throwsAsync(
    Store.open(dir, { readOnly: true }),
    { message: /older than this build's.*open the store read-write once/ },
    'read-only: its schema is older',
  );
  t.false(fs.existsSync(path.join(dir, cfg.disks[0].path, DISK_MARKER_FILE)), 'read-only open writes nothing');
  const s = await Store.open(dir);
  t.true((await s.status()).disks.every((d) => d.state === 'ok'));
  t.true((await s.read(ino, 0, data.length)).equals(data));
  await s.close();
  const uuid = (JSON.parse(fs.readFileSync(cfgPath, 'utf8')) as { storeUuid: string }).storeUuid;
  for (const d of cfg.disks)
    t.is(
      (JSON.parse(fs.readFileSync(path.join(dir, d.path, DISK_MARKER_FILE), 'utf8')) as { storeUuid: string })
        .storeUuid,
      uuid,
    );
  const db = openStoreMetaOf(dir, true);
  t.is(metaStoreId(db, STORE_ID_VERSION), uuid, 'the metadata names the same store');
  db.close();
  const ro = await Store.open(dir, { readOnly: true });
  t.true((await ro.read(ino, 0, data.length)).equals(data), 'read-only opens now');
  await ro.close();
});

test("crash mid-apply, reopened with a replica's disk offline: recovery writes a new version on the disks it has, and heal brings the third replica back", async (t) => {
  const { store, dir } = await smallStore('replica:3', 3);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(41), SMALL.chunkSizeBytes);
  await store.write(f.ino, 0, data);
  const paths = await Promise.all([0, 1, 2].map((i) => store.shardPath(f.ino, 0, i)));
  const disk2 = [...store.diskPaths().values()].find((d) => paths[2]!.startsWith(d + '/'))!;
  await store.close();
  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { io });
  const metaWrites = metaEndsAtCrash(s, io); // a process kill: nothing commits after it
  // The intent's WAL append and flush, then the applier: replica 0 gets pwrite data, pwrite hash; crash before its fdatasync.
  io.crashBeforeMutation(io.mutationCount + 4);
  const patch = Buffer.alloc(100, 7);
  await s.write(f.ino, 5000, patch); // durable in the intent log: acknowledged
  await s.applyNow();
  await io.whenRestored();
  metaWrites();
  await s.close();
  patch.copy(data, 5000);
  fs.renameSync(disk2, `${disk2}.away`);
  const s1 = await Store.open(dir);
  t.is(s1.recoveryReport.intentsResolved, 1, 'applied as a new version on the two disks there are');
  t.is((await s1.status()).openIntents, 0);
  t.true((await s1.read(f.ino, 0, data.length)).equals(data));
  t.true((await s1.status()).healQueueLength >= 1, 'the replica on the missing disk is queued for heal');
  await s1.close();
  fs.renameSync(`${disk2}.away`, disk2);
  const s2 = await Store.open(dir);
  await s2.heal();
  t.is((await s2.status()).healQueueLength, 0);
  const now = await Promise.all([0, 1, 2].map((i) => s2.shardPath(f.ino, 0, i)));
  await s2.close();
  const key = parseBitrotKey(fs.readFileSync(path.join(dir, 'bitrot.key')));
  for (const p of now)
    t.true(verifyShardBytes(fs.readFileSync(p!), key).payload.equals(data), `${p} holds the new data`);
});
