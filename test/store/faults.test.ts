// Faults within redundancy (DESIGN §6): flipped bits in data / hash table / header,
// deleted shard files, a disk failing every call, swapped blocks and swapped shard
// files. Every read returns exactly the written bytes; heal leaves every shard
// verifying; one loss beyond redundancy is a typed UnrecoverableError.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UnrecoverableError } from '../../src/errors';
import { HEADER_BYTES } from '../../src/header';
import { parseBitrotKey } from '../../src/keying';
import { dataStartBytes } from '../../src/region';
import { verifyShardBytes } from '../../src/shard';
import { DISK_MARKER_FILE } from '../../store/disk-identity';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

const LAYOUTS = [
  { layout: 'replica:3', tolerate: 2, shards: 3 },
  { layout: 'ec:4+2', tolerate: 2, shards: 6 },
  { layout: 'ec:2+1', tolerate: 1, shards: 3 },
];

function listShards(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name !== DISK_MARKER_FILE) out.push(p); // the disk identity marker is not a shard
    }
  };
  walk(dir);
  return out;
}

/** Independent check: every file under the disks is a shard that decodes and verifies. */
function assertAllShardsVerify(
  t: { true(v: boolean, m?: string): void; is(a: unknown, b: unknown, m?: string): void },
  dir: string,
  expected: number,
): void {
  const key = parseBitrotKey(fs.readFileSync(path.join(dir, 'bitrot.key')));
  const files = listShards(path.join(dir, 'disks'));
  t.is(files.length, expected, 'shard file count');
  for (const f of files) {
    let ok = true;
    try {
      verifyShardBytes(fs.readFileSync(f), key);
    } catch {
      ok = false;
    }
    t.true(ok, `${f} verifies`);
  }
}

function flipBit(file: string, offset: number): void {
  const b = fs.readFileSync(file);
  b[offset] ^= 0x10;
  fs.writeFileSync(file, b);
}

async function setup(layout: string): Promise<{ store: Store; dir: string; ino: number; data: Buffer }> {
  const { store, dir } = await smallStore(layout);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(42), 2 * SMALL.chunkSizeBytes + 50_000);
  await store.write(f.ino, 0, data);
  return { store, dir, ino: f.ino, data };
}

for (const { layout, tolerate, shards } of LAYOUTS) {
  test(`${layout}: flipped bits in data, hash table and header are served around and healed`, async (t) => {
    const { store, dir, ino, data } = await setup(layout);
    const s0 = (await store.shardPath(ino, 0, 0))!;
    const s1 = (await store.shardPath(ino, 1, 1))!;
    const s2 = (await store.shardPath(ino, 2, shards - 1))!;
    await store.close();
    flipBit(s0, dataStartBytes(64) + 5000); // data region, block 1
    flipBit(s1, HEADER_BYTES + 32 * 2 + 3); // hash entry of block 2
    flipBit(s2, 20); // header: file_id (crc catches it)
    const store2 = await Store.open(dir);
    t.true((await store2.read(ino, 0, data.length)).equals(data), 'whole read exact');
    for (let off = 0; off < data.length; off += 4096) {
      t.true((await store2.read(ino, off, 4096)).equals(data.subarray(off, off + 4096)), `read at ${off}`);
    }
    const before = await store2.status();
    t.true(before.healQueueLength >= 1, 'failures were queued');
    t.true(before.counters.bitrot_errors + before.counters.header_mismatches >= 1, 'failures were counted');
    const report = await store2.heal();
    t.is(report.failed.length, 0);
    await store2.scrub({ repair: true }); // shards not read (e.g. parity in EC) are found by scrub
    t.is((await store2.status()).healQueueLength, 0);
    assertAllShardsVerify(t, dir, 3 * shards);
    t.true((await store2.read(ino, 0, data.length)).equals(data));
    await store2.close();
  });

  test(`${layout}: ${tolerate} lost shards tolerated, one more is UnrecoverableError`, async (t) => {
    const { store: first, dir, ino, data } = await setup(layout);
    const paths = await Promise.all(Array.from({ length: tolerate + 1 }, (_, i) => first.shardPath(ino, 0, i)));
    await first.close(); // reopen: no descriptor cached across the deletion
    for (let i = 0; i < tolerate; i++) fs.rmSync(paths[i]!);
    let store = await Store.open(dir);
    t.true((await store.read(ino, 0, data.length)).equals(data), 'read exact with redundancy lost');
    t.true((await store.read(ino, 100, 10)).equals(data.subarray(100, 110)));
    await store.close();
    fs.rmSync(paths[tolerate]!);
    store = await Store.open(dir);
    const err = await t.throwsAsync(store.read(ino, 0, 1000), { instanceOf: UnrecoverableError });
    t.true(err!.failedShards.length >= tolerate + 1, 'names the failed shards');
    t.is(err!.site.chunkIndex, 0n);
    t.is(err!.site.fileId, BigInt(ino));
    // Other chunks are unaffected.
    const off = SMALL.chunkSizeBytes;
    t.true((await store.read(ino, off, 5000)).equals(data.subarray(off, off + 5000)));
    t.true((await store.status()).counters.unrecoverable_reads >= 1);
    await store.close();
  });

  test(`${layout}: a disk failing every call; reads exact, writes degrade, heal restores`, async (t) => {
    const { store, dir, ino, data } = await setup(layout);
    await store.close();
    const io = new FaultyIo(new NodeIo());
    const s = await Store.open(dir, { io });
    const shard0 = (await s.shardPath(ino, 0, 0))!;
    const badDisk = [...s.diskPaths().values()].find((d) => shard0.startsWith(d + '/'))!;
    io.addFault({ op: '*', path: badDisk + '/', error: 'EIO' });
    t.true((await s.read(ino, 0, data.length)).equals(data));
    const patch = randomBytes(prng(9), 10_000);
    await s.write(ino, 70_000, patch); // partial write while a disk fails
    patch.copy(data, 70_000);
    const fresh = randomBytes(prng(10), SMALL.chunkSizeBytes);
    await s.write(ino, 3 * SMALL.chunkSizeBytes, fresh); // new chunk while a disk fails
    const expected = Buffer.concat([data, Buffer.alloc(3 * SMALL.chunkSizeBytes - data.length), fresh]);
    t.true((await s.read(ino, 0, expected.length)).equals(expected));
    const during = await s.status();
    t.true(during.healQueueLength > 0, 'shards on the failing disk queued');
    t.is(during.disks.filter((d) => d.state !== 'ok').length, 1, 'the failing disk shows in status');
    t.is(during.disks.find((d) => d.state !== 'ok')!.path, badDisk);
    io.clearFaults();
    await s.heal();
    await s.close();
    const s2 = await Store.open(dir); // the reclaimer deletes the old versions, the failing disk's too
    await s2.reclaimNow(); // the partial write went through the intent log: patched in place once the disk was back, no old version to delete
    await s2.scrub({ repair: true });
    t.is((await s2.status()).healQueueLength, 0);
    assertAllShardsVerify(t, dir, 4 * shards);
    t.true((await s2.read(ino, 0, expected.length)).equals(expected));
    await s2.close();
  });

  test(`${layout}: swapped blocks and swapped shard files are caught by position binding`, async (t) => {
    const { store, dir, ino, data } = await setup(layout);
    const a = (await store.shardPath(ino, 0, 0))!;
    const b = (await store.shardPath(ino, 0, 1))!;
    const c = (await store.shardPath(ino, 1, 0))!;
    await store.close();
    // Swap blocks 0 and 1 (data and hash entries) inside one shard: each is a valid block, at the wrong position.
    const bytes = fs.readFileSync(c);
    const key = parseBitrotKey(fs.readFileSync(path.join(dir, 'bitrot.key')));
    const { header } = verifyShardBytes(bytes, key);
    const start = dataStartBytes(header.blockCount);
    const blk = header.bitrotBlockBytes;
    const swap = (x: number, y: number, len: number): void => {
      const tmp = Buffer.from(bytes.subarray(x, x + len));
      bytes.copy(bytes, x, y, y + len);
      tmp.copy(bytes, y);
    };
    swap(start, start + blk, blk);
    swap(HEADER_BYTES, HEADER_BYTES + 32, 32);
    fs.writeFileSync(c, bytes);
    // Swap two whole shard files of one chunk (two losses: only where redundancy allows).
    if (tolerate >= 2) {
      const ab = fs.readFileSync(a);
      fs.copyFileSync(b, a);
      fs.writeFileSync(b, ab);
    }
    const s = await Store.open(dir);
    t.true((await s.read(ino, 0, data.length)).equals(data));
    await s.heal();
    await s.scrub({ repair: true });
    assertAllShardsVerify(t, dir, 3 * shards);
    t.is((await s.status()).healQueueLength, 0);
    await s.close();
  });
}
