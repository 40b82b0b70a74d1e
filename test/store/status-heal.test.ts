// status() (disks, layouts in use, heal queue, counters) and the background healer.
import test from 'ava';
import * as fs from 'node:fs';
import { ROOT_INO } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

test('status reports disks, layouts in use, heal queue and counters; background healer drains the queue', async (t) => {
  const { store, dir } = await smallStore('replica:3');
  const a = store.ns.create(ROOT_INO, 'a', 0o644, 0, 0);
  const b = store.ns.create(ROOT_INO, 'b', 0o644, 0, 0, 'ec:4+2');
  const data = randomBytes(prng(3), SMALL.chunkSizeBytes + 999);
  await store.write(a.ino, 0, data);
  await store.write(b.ino, 0, data);
  const paths = [(await store.shardPath(a.ino, 0, 0))!, (await store.shardPath(b.ino, 1, 1))!];
  await store.close();
  for (const p of paths) fs.rmSync(p);
  const s = await Store.open(dir);
  t.true((await s.read(a.ino, 0, data.length)).equals(data));
  t.true((await s.read(b.ino, 0, data.length)).equals(data));
  const before = await s.status();
  t.is(before.disks.length, 6);
  t.true(before.disks.every((d) => d.totalBytes > 0 && d.state === 'ok'));
  t.deepEqual(before.layoutsInUse, [
    { layout: 'ec:4+2', files: 1 },
    { layout: 'replica:3', files: 1 },
  ]);
  t.is(before.healQueueLength, 2);
  t.is(before.counters.missing_shards, 2);
  t.is(before.counters.failovers, 1);
  t.is(before.counters.reconstructions, 1);
  t.is(before.counters.reads_served_around, 2);
  // Read again before any heal: the same damaged shards are not counted again; the reads around them are.
  t.true((await s.read(a.ino, 0, data.length)).equals(data));
  t.true((await s.read(b.ino, 0, data.length)).equals(data));
  const again = (await s.status()).counters;
  t.is(again.missing_shards, 2);
  t.is(again.reads_served_around, 4);
  s.startHealer(100);
  // Wait (bounded) for the healer's one-second ticks to drain the queue.
  for (let i = 0; i < 100 && (await s.status()).healQueueLength > 0; i++) await new Promise((r) => setTimeout(r, 200));
  await s.stopHealer();
  const after = await s.status();
  t.is(after.healQueueLength, 0);
  t.is(after.counters.heals, 2);
  t.true(fs.existsSync(paths[0]) && fs.existsSync(paths[1]), 'lost shards rebuilt');
  const statfs = await s.statfs();
  t.true(statfs.totalBytes > 0 && statfs.totalBytes < before.disks[0].totalBytes, 'usable = raw / 3 for replica:3');
  await s.close();
});

test('scrub without repair names a chunk beyond its redundancy unrecoverable, shard by shard; one within it is not', async (t) => {
  const { store, dir } = await smallStore('ec:4+2');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(5), 2 * SMALL.chunkSizeBytes);
  await store.write(f.ino, 0, data);
  const lost = await Promise.all([0, 1, 2].map((i) => store.shardPath(f.ino, 0, i)));
  const within = await Promise.all([3, 4].map((i) => store.shardPath(f.ino, 1, i)));
  await store.close();
  for (const p of [...lost, ...within]) fs.rmSync(p!);
  const s = await Store.open(dir);
  const r = await s.scrub({ repair: false });
  t.is(r.badCount, 5);
  t.deepEqual(
    r.failed.map((x) => [x.chunkIndex, x.shardIndex]),
    [
      [0, 0],
      [0, 1],
      [0, 2],
    ],
  );
  t.regex(r.failed[0].error, /3 of 6 shards bad or missing, more than the 2 parity shards rebuild/);
  t.is((await s.status()).counters.missing_shards, 5, 'each found shard counted once');
  await s.close();
});
