// The one read pipeline (store/file-io.ts readInto, DESIGN §6): cached data is answered at once (a
// number, no promise); anything else is a promise; a damaged shard is served around where its
// failure is seen, counted and queued for heal once, and never read a second time for the request,
// also through the mount's read op (fs/ops-file.ts read over the write-back buffer).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { dataStartBytes } from '../../src/region';
import { ROOT_INO } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { Io, IoFile, NodeIo } from '../../store/io/io';
import { FsCore } from '../../fs/core';
import { open as openFile, read as readFile, release } from '../../fs/ops-file';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

function shardFile(dir: string, chunkIndex: number, shardIndex: number): string {
  const all = (fs.readdirSync(path.join(dir, 'disks'), { recursive: true }) as string[]).filter((f) =>
    f.endsWith(`${path.sep}c${chunkIndex}${path.sep}${shardIndex}.shard`),
  );
  if (all.length !== 1) throw new Error(`expected one shard ${shardIndex} of chunk ${chunkIndex}, found ${all.length}`);
  return path.join(dir, 'disks', all[0]);
}

/** NodeIo that counts the data reads (preadInto, inline or pooled) of each path. */
class CountingIo extends NodeIo {
  readonly reads = new Map<string, number>();
  private counted(path: string, f: IoFile): IoFile {
    const bump = (): void => {
      this.reads.set(path, (this.reads.get(path) ?? 0) + 1);
    };
    const preadInto = f.preadInto.bind(f);
    const preadIntoNow = f.preadIntoNow?.bind(f);
    return Object.assign(Object.create(f) as IoFile, {
      preadInto: (...a: Parameters<IoFile['preadInto']>) => {
        bump();
        return preadInto(...a);
      },
      ...(preadIntoNow === undefined
        ? {}
        : {
            preadIntoNow: (...a: Parameters<NonNullable<IoFile['preadIntoNow']>>) => {
              bump();
              return preadIntoNow(...a);
            },
          }),
    });
  }
  override async open(path: string, mode: Parameters<Io['open']>[1]): Promise<IoFile> {
    return this.counted(path, await super.open(path, mode));
  }
  override openNow(path: string): IoFile | null {
    const f = super.openNow(path);
    return f === null ? null : this.counted(path, f);
  }
}

async function warmStore(
  layout: string,
  io?: CountingIo,
): Promise<{ store: Store; dir: string; ino: number; data: Buffer }> {
  const made = await smallStore(layout);
  const f = made.store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(31), 2 * SMALL.chunkSizeBytes + 3000);
  await made.store.write(f.ino, 0, data);
  let store = made.store;
  if (io !== undefined) {
    await store.close();
    store = await Store.open(made.dir, { io });
  }
  await store.readInto(f.ino, 0, Buffer.alloc(data.length)); // headers and descriptors cached
  return { store, dir: made.dir, ino: f.ino, data };
}

/** Flip one bit of bitrot block `block` of a shard's data, in place (a cached descriptor sees it). */
function flipBit(file: string, blockCount: number, block: number): void {
  const b = fs.readFileSync(file);
  b[dataStartBytes(blockCount) + block * SMALL.bitrotBlockBytes + 9] ^= 0x04;
  fs.writeFileSync(file, b);
}

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`${layout}: cached reads are answered at once with the right bytes; a busy inode gets a promise`, async (t) => {
    const { store, ino, data } = await warmStore(layout);
    const cs = SMALL.chunkSizeBytes;
    for (const [off, len] of [
      [0, 4096],
      [5000, 10_000],
      [cs + 7, 4096],
      [data.length - 100, 100],
    ]) {
      const target = Buffer.alloc(len);
      const n = store.readInto(ino, off, target);
      t.is(n, len, `[${off}, +${len}) at once`);
      t.true(target.equals(data.subarray(off, off + len)), `[${off}, +${len})`);
    }
    const across = Buffer.alloc(20);
    const twoChunks = store.readInto(ino, cs - 10, across);
    t.true(twoChunks instanceof Promise, 'two chunks: their reads go to the pool together');
    t.is(await twoChunks, 20);
    t.true(across.equals(data.subarray(cs - 10, cs + 10)));
    t.is(store.readInto(ino, data.length + 10, Buffer.alloc(20)), 0, 'past EOF');
    t.is(store.readInto(ino, data.length - 100, Buffer.alloc(300)), 100, 'short at EOF');
    const writing = store.write(ino, 0, Buffer.alloc(10, 7));
    const behind = store.readInto(ino, 0, Buffer.alloc(10));
    t.true(behind instanceof Promise, 'a write holds the inode: never overtaken');
    await writing;
    t.is(await behind, 10);
    // A replica intent is patched in place while readers go on; an EC intent becomes a new version,
    // and readers wait for it (the old version must not be read once reclaim may delete it).
    if (layout.startsWith('ec')) {
      await store.applyNow();
      await store.readInto(ino, 0, Buffer.alloc(10)); // the new version's shard headers, read once
    }
    const after = Buffer.alloc(10);
    t.is(store.readInto(ino, 0, after), 10);
    t.true(after.equals(Buffer.alloc(10, 7)), 'the written bytes');
    await store.close();
  });
}

test('cold state is a promise, then cached reads are at once', async (t) => {
  const { store, dir, ino, data } = await warmStore('replica:3');
  await store.close();
  const again = await Store.open(dir);
  const cold = again.readInto(ino, 0, Buffer.alloc(4096));
  t.true(cold instanceof Promise, 'no header cached yet');
  t.is(await cold, 4096);
  const target = Buffer.alloc(4096);
  t.is(again.readInto(ino, 0, target), 4096);
  t.true(target.equals(data.subarray(0, 4096)));
  await again.close();
});

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`${layout}: a flipped bit in the first shard read: the mount's read op serves around it, counts and queues it once, reads it once`, async (t) => {
    const io = new CountingIo();
    const { store, dir, ino, data } = await warmStore(layout, io);
    const blockCount =
      layout === 'replica:3'
        ? SMALL.chunkSizeBytes / SMALL.bitrotBlockBytes
        : Math.ceil(SMALL.chunkSizeBytes / 4 / SMALL.bitrotBlockBytes);
    const bad = shardFile(dir, 0, 0);
    flipBit(bad, blockCount, 1);
    const core = new FsCore(store, { bufferBytesMax: 1 << 20, flushDelayMs: 60_000, log: () => undefined });
    const fh = await openFile(core, ino, 0);
    io.reads.clear();
    // Replica: block 1 of the chunk is block 1 of every replica. EC 4+2 (64 KiB erasure blocks):
    // chunk bytes [4096, 8192) are in data shard 0's block 1.
    const target = Buffer.alloc(4096, 0xee);
    t.is(await readFile(core, fh, target, 4096, SMALL.bitrotBlockBytes), 4096);
    t.true(target.equals(data.subarray(SMALL.bitrotBlockBytes, 2 * SMALL.bitrotBlockBytes)), 'the right bytes');
    t.is(
      io.reads.get(bad),
      1,
      'the bad shard: one data read (its hash table is cached since the warm-up read), not a second try',
    );
    const st = await store.status();
    t.is(st.counters.bitrot_errors, 1, 'counted once');
    t.is(st.counters[layout === 'replica:3' ? 'failovers' : 'reconstructions'], 1);
    t.is(store.healQueue(100).filter((e) => e.shardIndex === 0 && e.chunkIndex === 0).length, 1, 'queued for heal');
    await release(core, fh);
    await store.close();
  });
}

/** Reads of every path since the last clear. */
const readsSum = (io: CountingIo): number => [...io.reads.values()].reduce((a, b) => a + b, 0);

test('replica:3: a shard whose hash table is cached costs one pread per read; an in-place patch drops the table, so later reads check the new entries', async (t) => {
  const io = new CountingIo();
  const { store, ino, data } = await warmStore('replica:3', io);
  io.reads.clear();
  const at = 3 * SMALL.bitrotBlockBytes + 100;
  const target = Buffer.alloc(4096);
  t.is(await store.readInto(ino, at, target), 4096);
  t.true(target.equals(data.subarray(at, at + 4096)));
  t.is(readsSum(io), 1, 'the data span alone: the hash entries come from the table cached by the warm-up read');
  // A partial write goes through the intent log; the applier patches every replica in place (§8.2).
  const patch = Buffer.alloc(5000, 0x5a);
  await store.write(ino, at, patch);
  await store.applyNow();
  for (let round = 0; round < 2; round++) {
    const back = Buffer.alloc(4096);
    t.is(await store.readInto(ino, at, back), 4096);
    t.true(back.equals(patch.subarray(0, 4096)), `round ${round}: the patched bytes`);
  }
  const c = (await store.status()).counters;
  t.is(c.bitrot_errors + c.failovers, 0, 'no read checked a patched block against its old hash entry');
  await store.close();
});
