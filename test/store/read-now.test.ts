// The synchronous read fast path (FileIo.readIntoNow): it answers only from cached state and
// never serves a damaged shard: any doubt returns null and leaves the read to readInto, which
// does the failover, counting and heal queueing.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { dataStartBytes } from '../../src/region';
import { ROOT_INO } from '../../store/meta';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

function shardFile(dir: string, chunkIndex: number, shardIndex: number): string {
  const all = (fs.readdirSync(path.join(dir, 'disks'), { recursive: true }) as string[])
    .filter((f) => f.endsWith(`${path.sep}c${chunkIndex}${path.sep}${shardIndex}.shard`));
  if (all.length !== 1) throw new Error(`expected one shard ${shardIndex} of chunk ${chunkIndex}, found ${all.length}`);
  return path.join(dir, 'disks', all[0]);
}

async function warmStore(layout: string): Promise<{ store: Store; dir: string; ino: number; data: Buffer }> {
  const { store, dir } = await smallStore(layout);
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(31), 2 * SMALL.chunkSizeBytes + 3000);
  await store.write(f.ino, 0, data);
  await store.readInto(f.ino, 0, Buffer.alloc(data.length)); // headers and descriptors cached
  return { store, dir, ino: f.ino, data };
}

test('replica: cached reads are answered at once with the right bytes; other shapes say null', async (t) => {
  const { store, ino, data } = await warmStore('replica:3');
  for (const [off, len] of [[0, 4096], [5000, 10_000], [SMALL.chunkSizeBytes + 7, 4096], [data.length - 100, 100]]) {
    const target = Buffer.alloc(len);
    t.is(store.readIntoNow(ino, off, target), len);
    t.true(target.equals(data.subarray(off, off + len)), `[${off}, +${len})`);
  }
  t.is(store.readIntoNow(ino, SMALL.chunkSizeBytes - 10, Buffer.alloc(20)), null, 'across chunks: the general path');
  t.is(store.readIntoNow(ino, data.length + 10, Buffer.alloc(20)), 0, 'past EOF');
  const short = Buffer.alloc(300);
  t.is(store.readIntoNow(ino, data.length - 100, short), 100, 'short at EOF');
  const writing = store.write(ino, 0, Buffer.alloc(10, 7));
  t.is(store.readIntoNow(ino, 0, Buffer.alloc(10)), null, 'a write holds the inode: never overtaken');
  await writing;
  t.is(store.readIntoNow(ino, 0, Buffer.alloc(10)) !== null, true);
  await store.close();
});

test('a flipped bit in the first replica is never served from the fast path; readInto serves around it and counts it', async (t) => {
  const { store, dir, ino, data } = await warmStore('replica:3');
  const file = shardFile(dir, 0, 0);
  const b = fs.readFileSync(file);
  b[dataStartBytes(SMALL.chunkSizeBytes / SMALL.bitrotBlockBytes) + SMALL.bitrotBlockBytes + 9] ^= 0x04; // block 1
  fs.writeFileSync(file, b);
  const target = Buffer.alloc(4096, 0xee);
  t.is(store.readIntoNow(ino, SMALL.bitrotBlockBytes, target), null);
  t.true(target.equals(Buffer.alloc(4096, 0xee)), 'target untouched');
  t.is((await store.status()).counters.bitrot_errors, 0, 'the fast path counts nothing; the general path will');
  t.is(await store.readInto(ino, SMALL.bitrotBlockBytes, target), 4096);
  t.true(target.equals(data.subarray(SMALL.bitrotBlockBytes, SMALL.bitrotBlockBytes + 4096)));
  t.true((await store.status()).counters.bitrot_errors >= 1);
  await store.close();
});

test('cold state and EC layouts take the general path', async (t) => {
  const { store, dir, ino, data } = await warmStore('replica:3');
  await store.close();
  const again = await Store.open(dir);
  t.is(again.readIntoNow(ino, 0, Buffer.alloc(4096)), null, 'no header cached yet');
  await again.readInto(ino, 0, Buffer.alloc(4096));
  const target = Buffer.alloc(4096);
  t.is(again.readIntoNow(ino, 0, target), 4096);
  t.true(target.equals(data.subarray(0, 4096)));
  await again.close();
  const ec = await warmStore('ec:4+2');
  t.is(ec.store.readIntoNow(ec.ino, 0, Buffer.alloc(4096)), null);
  await ec.store.close();
});
