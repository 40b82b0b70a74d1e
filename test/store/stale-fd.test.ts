// Shard files deleted or replaced from outside while the store is open: NodeIo's
// descriptor cache must not hide the loss from scrub and heal (store/io/io.ts revalidate).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore, tmpDir } from './helpers';

async function openAndWarm(layout: string): Promise<{ s: Store; ino: number; data: Buffer }> {
  const { store, dir } = await smallStore(layout, 6);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(31), 2 * SMALL.chunkSizeBytes + 77);
  await store.write(f.ino, 0, data);
  await store.close();
  const s = await Store.open(dir);
  // Reads of every shard: each shard file's descriptor is now cached.
  t0(await s.scrub());
  return { s, ino: f.ino, data };
}

function t0(r: { healed: number; failed: unknown[] }): void {
  if (r.healed !== 0 || r.failed.length !== 0) throw new Error('fresh store does not scrub clean');
}

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`${layout}: a shard deleted while open is found missing by scrub and rebuilt by scrub --repair`, async (t) => {
    const { s, ino, data } = await openAndWarm(layout);
    const victim = (await s.shardPath(ino, 0, 1))!;
    fs.rmSync(victim);
    const scrub = await s.scrub();
    t.true(scrub.examined > 0);
    t.is((await s.status()).healQueueLength, 1, 'the deleted shard is queued, not served from a stale descriptor');
    const repair = await s.scrub({ repair: true });
    t.is(repair.healed, 1);
    t.true(fs.existsSync(victim));
    t.is((await s.heal()).healed, 0, 'heal verifies the rebuilt file, nothing left to do');
    t.is((await s.status()).healQueueLength, 0);
    t.true((await s.read(ino, 0, data.length)).equals(data));
    await s.close();
  });
}

test('a shard replaced from outside (new inode, damaged) is verified from the new file by heal', async (t) => {
  const { s, ino, data } = await openAndWarm('replica:3');
  const victim = (await s.shardPath(ino, 1, 0))!;
  const bytes = fs.readFileSync(victim);
  bytes[bytes.length - 100] ^= 0xff; // inside the data region's last block
  fs.writeFileSync(`${victim}.new`, bytes);
  fs.renameSync(`${victim}.new`, victim);
  const r = await s.healChunk(ino, 1);
  t.is(r.healed, 1, 'the damaged replacement was seen and rebuilt');
  t.deepEqual(r.failed, []);
  t.true((await s.read(ino, 0, data.length)).equals(data));
  await s.close();
});

test('NodeIo.revalidate drops a cached descriptor whose path was unlinked or replaced, keeps a current one', async (t) => {
  const dir = tmpDir();
  const p = path.join(dir, 'f');
  fs.writeFileSync(p, 'old');
  const io = new NodeIo({ descriptorsMax: 8 });
  const read = async (): Promise<string> => {
    const f = await io.open(p, 'read');
    try {
      return (await f.pread(16, 0)).toString();
    } finally {
      await f.close();
    }
  };
  t.is(await read(), 'old');
  await io.revalidate(p);
  t.is(await read(), 'old', 'unchanged path: still served');
  fs.writeFileSync(`${p}.tmp`, 'new');
  fs.renameSync(`${p}.tmp`, p);
  t.is(await read(), 'old', 'the cache serves the replaced file until revalidated');
  await io.revalidate(p);
  t.is(await read(), 'new');
  fs.rmSync(p);
  await io.revalidate(p);
  await t.throwsAsync(read(), { code: 'ENOENT' });
  io.closeAll();
});

test('a read error drops the cached descriptor: the next read sees the file now at the path', async (t) => {
  const { s, ino, data } = await openAndWarm('replica:3');
  const victim = (await s.shardPath(ino, 0, 0))!;
  const good = fs.readFileSync(victim);
  const fd = fs.openSync(victim, 'r+'); // damage the cached inode in place ...
  fs.writeSync(fd, Buffer.from([good[good.length - 100] ^ 0xff]), 0, 1, good.length - 100);
  fs.closeSync(fd);
  fs.writeFileSync(`${victim}.new`, good); // ... and put a good copy at the path (new inode)
  fs.renameSync(`${victim}.new`, victim);
  const last = SMALL.chunkSizeBytes - 4096;
  t.true((await s.read(ino, last, 4096)).equals(data.subarray(last, last + 4096)));
  t.is((await s.status()).counters.bitrot_errors, 1, 'the stale descriptor failed once');
  t.true((await s.read(ino, last, 4096)).equals(data.subarray(last, last + 4096)));
  t.is((await s.status()).counters.bitrot_errors, 1, 'the second read used the good file at the path');
  t.is((await s.status()).counters.failovers, 1);
  await s.close();
});
