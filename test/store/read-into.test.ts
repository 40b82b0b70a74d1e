// Store.readInto (the zero-allocation verified read for the mount) against Store.read:
// random ranges (seeded) across chunks, holes and EOF, a target offset, a target bigger
// than the file; a flipped bit served around with the same counters and heal entries as
// read(); many concurrent reads (no shared scratch); and the scratch pool's bounds.
import test from 'ava';
import { copyStoreDir } from '../helpers/pg-meta';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UnrecoverableError } from '../../src/errors';
import { dataStartBytes } from '../../src/region';
import { FsError } from '../../store/fs-error';
import { NodeIo } from '../../store/io/io';
import { SCRATCH_BUFFER_BYTES_MIN, ScratchPool } from '../../store/chunks/scratch-pool';
import { HUGE_PAGE_BYTES } from '../../src/huge-buffer';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore, tmpDir } from './helpers';

const CS = SMALL.chunkSizeBytes;
const LAYOUTS = ['replica:3', 'ec:4+2'];

/** A file: chunk 0 written, chunk 1 a hole, chunk 2 written, a short chunk 3 ending past a gap; returns the expected bytes. */
async function holeyFile(store: Store, seed: number): Promise<{ ino: number; expected: Buffer }> {
  const f = store.ns.create(1, `f${seed}`, 0o644, 0, 0);
  const random = prng(seed);
  const size = 3 * CS + 70_000;
  const expected = Buffer.alloc(size);
  const a = randomBytes(random, CS);
  const b = randomBytes(random, CS - 5000); // chunk 2 shorter than a chunk: its tail is a hole
  const c = randomBytes(random, 30_000);
  await store.write(f.ino, 0, a);
  await store.write(f.ino, 2 * CS, b);
  await store.write(f.ino, 3 * CS + 40_000, c); // chunk 3: zeros, then data
  a.copy(expected, 0);
  b.copy(expected, 2 * CS);
  c.copy(expected, 3 * CS + 40_000);
  return { ino: f.ino, expected };
}

/** readInto with a dirty (0xAA-filled) target, so zeros for holes must really be written. */
async function readIntoFresh(
  store: Store,
  ino: number,
  off: number,
  len: number,
  targetOffset: number,
): Promise<{ n: number; bytes: Buffer; target: Buffer }> {
  const target = Buffer.alloc(targetOffset + len, 0xaa);
  const n = await store.readInto(ino, off, target, targetOffset);
  return { n, bytes: target.subarray(targetOffset, targetOffset + n), target };
}

for (const layout of LAYOUTS) {
  test(`${layout}: readInto equals read for seeded random ranges, holes, EOF and target offsets`, async (t) => {
    const { store } = await smallStore(layout);
    const { ino, expected } = await holeyFile(store, 7);
    const random = prng(1234);
    for (let i = 0; i < 120; i++) {
      const off = Math.floor(random() * (expected.length + 10_000));
      const len = i % 3 === 0 ? Math.floor(random() * 2 * CS) : Math.floor(random() * 20_000);
      const targetOffset = i % 4 === 0 ? Math.floor(random() * 5000) : 0;
      const want = await store.read(ino, off, len);
      const got = await readIntoFresh(store, ino, off, len, targetOffset);
      t.is(got.n, want.length, `count at [${off}, +${len})`);
      t.true(got.bytes.equals(want), `bytes at [${off}, +${len})`);
      t.true(want.equals(expected.subarray(off, off + len)), `read() itself exact at [${off}, +${len})`);
      t.true(
        got.target.subarray(0, targetOffset).every((x) => x === 0xaa),
        'bytes before targetOffset untouched',
      );
      t.true(
        got.target.subarray(targetOffset + got.n).every((x) => x === 0xaa),
        'bytes past EOF untouched',
      );
    }
    // Named cases: across a chunk boundary into the hole, the hole alone, the short chunk's tail, the last byte.
    for (const [off, len] of [
      [CS - 100, 300],
      [CS + 5, 4096],
      [3 * CS - 6000, 8000],
      [3 * CS + 39_000, 2000],
      [expected.length - 1, 4096],
    ]) {
      const got = await readIntoFresh(store, ino, off, len, 3);
      t.true(got.bytes.equals(expected.subarray(off, off + len)), `named range [${off}, +${len})`);
    }
    const big = Buffer.alloc(expected.length + 12_345, 0xaa);
    t.is(await store.readInto(ino, 0, big, 7), expected.length, 'a target bigger than the file reads to EOF');
    t.true(big.subarray(7, 7 + expected.length).equals(expected));
    t.is(await store.readInto(ino, expected.length + 5, Buffer.alloc(10)), 0, 'past EOF: 0 bytes');
    t.is(await store.readInto(ino, 0, Buffer.alloc(10), 10), 0, 'empty target range: 0 bytes');
    await t.throwsAsync(async () => store.readInto(ino, 0, Buffer.alloc(10), 11), { instanceOf: FsError });
    await t.throwsAsync(async () => store.readInto(ino, -1, Buffer.alloc(10)), { instanceOf: FsError });
    await store.close();
  });

  test(`${layout}: concurrent readInto calls get their own bytes (no shared scratch)`, async (t) => {
    // Through the thread pool (no inline I/O) so reads really overlap; and several files:
    // reads of one inode are serialized by its lock, reads of different ones are not.
    const { store } = await smallStore(layout, 6, { io: new NodeIo({ inlineWhenIdle: false }) });
    const files: Array<{ ino: number; expected: Buffer }> = [];
    for (const seed of [11, 12, 13, 14]) files.push(await holeyFile(store, seed));
    const random = prng(99);
    const ranges = Array.from({ length: 64 }, (_, i) => {
      const len = i % 8 === 0 ? 100_000 : 4096;
      const f = files[i % files.length];
      return { f, off: Math.floor(random() * (f.expected.length - len)), len };
    });
    const targets = ranges.map((r) => Buffer.alloc(r.len, 0xaa));
    const counts = await Promise.all(ranges.map((r, i) => store.readInto(r.f.ino, r.off, targets[i])));
    ranges.forEach((r, i) => {
      t.is(counts[i], r.len);
      t.true(targets[i].equals(r.f.expected.subarray(r.off, r.off + r.len)), `concurrent read ${i} at ${r.off}`);
    });
    // A shared scratch would show as spurious bitrot served around by failover/reconstruction.
    const c = (await store.status()).counters;
    t.is(c.bitrot_errors + c.failovers + c.reconstructions + c.header_mismatches, 0, 'no read failed verification');
    await store.close();
  });

  test(`${layout}: a flipped bit: readInto returns the right bytes and counts like read()`, async (t) => {
    const { store, dir } = await smallStore(layout);
    const { ino, expected } = await holeyFile(store, 5);
    const shard = (await store.shardPath(ino, 0, 0))!;
    await store.close();
    const b = fs.readFileSync(shard);
    const shardDataLenBytes = layout === 'replica:3' ? CS : CS / 4; // ec:4+2: a full chunk splits in k = 4
    b[dataStartBytes(shardDataLenBytes / SMALL.bitrotBlockBytes) + 10] ^= 0x10; // block 0 data: [10, +4096) reads it
    fs.writeFileSync(shard, b);
    const twin = path.join(tmpDir(), 'store');
    copyStoreDir(dir, twin); // the same damage for read() and for readInto() (and its own metadata)
    const viaRead = await Store.open(dir);
    const viaInto = await Store.open(twin);
    for (const [off, len] of [
      [10, 4096],
      [0, CS],
      [CS - 2000, 5000],
    ]) {
      const want = await viaRead.read(ino, off, len);
      const got = await readIntoFresh(viaInto, ino, off, len, 0);
      t.true(want.equals(expected.subarray(off, off + len)), `read() exact at ${off}`);
      t.true(got.bytes.equals(expected.subarray(off, off + len)), `readInto exact at ${off}`);
    }
    const [sr, si] = [await viaRead.status(), await viaInto.status()];
    t.true(sr.counters.bitrot_errors >= 1, 'the flipped bit was found');
    t.deepEqual(si.counters, sr.counters, 'same counters');
    t.is(si.healQueueLength, sr.healQueueLength, 'same heal queue');
    await viaRead.close();
    await viaInto.close();
  });

  test(`${layout}: beyond redundancy readInto is UnrecoverableError, counted like read()`, async (t) => {
    const { store, dir } = await smallStore(layout);
    const { ino } = await holeyFile(store, 3);
    const paths = await Promise.all([0, 1, 2].map((i) => store.shardPath(ino, 0, i)));
    await store.close();
    for (const p of paths) fs.rmSync(p!);
    const s = await Store.open(dir);
    const err = await t.throwsAsync(async () => s.readInto(ino, 0, Buffer.alloc(4096)), {
      instanceOf: UnrecoverableError,
    });
    t.is(err!.site.chunkIndex, 0n);
    const st = await s.status();
    t.is(st.counters.unrecoverable_reads, 1);
    t.is(st.counters.missing_shards, 3, 'each lost shard counted once');
    await s.close();
  });
}

test('scratch pool: reuse, no sharing while taken, bounded count and size', (t) => {
  const pool = new ScratchPool(2, 256 * 1024);
  const a = pool.take(20_000);
  const b = pool.take(20_000);
  t.true(a.length >= 20_000 && b.length >= 20_000);
  t.not(a, b, 'two takers never share a buffer');
  t.is(a.length, SCRATCH_BUFFER_BYTES_MIN, 'small requests get the minimum pooled size');
  pool.give(a);
  t.is(pool.take(1000), a, 'a given-back buffer is reused');
  pool.give(a);
  pool.give(b);
  t.is(pool.freeCount, 2);
  const c = pool.take(100_000); // nothing free fits: a new, larger pooled buffer
  t.true(c !== a && c !== b && c.length >= 100_000 && c.length <= 256 * 1024);
  pool.give(c); // pool full: c replaces the smallest
  t.is(pool.freeCount, 2, 'count bound holds');
  t.is(pool.take(100_000), c, 'the larger buffer was kept');
  const huge = pool.take(300_000);
  t.is(huge.length, HUGE_PAGE_BYTES, 'over the size bound: a large buffer, whole huge pages');
  pool.give(huge);
  t.is(pool.freeCount, 1, 'a large buffer is not in the small tier');
  t.is(pool.largeFreeCount, 1, 'a large buffer is kept in its tier');
  const d = pool.take(10);
  t.throws(
    () => {
      pool.give(d);
      pool.give(d);
    },
    undefined,
    'giving back twice is a bug',
  );
});

test("scratch pool: whole-shard reads reuse large buffers, within the tier's bounds", (t) => {
  const pool = new ScratchPool(2, 256 * 1024, 2 * HUGE_PAGE_BYTES, 3 * HUGE_PAGE_BYTES);
  const a = pool.take(HUGE_PAGE_BYTES + 1);
  const b = pool.take(300_000);
  t.is(a.length, 2 * HUGE_PAGE_BYTES);
  t.is(b.length, HUGE_PAGE_BYTES);
  t.not(a, b, 'two takers never share a buffer');
  pool.give(a);
  pool.give(b); // 3 huge pages together: within the tier's bound
  t.is(pool.largeFreeCount, 2);
  t.is(pool.take(400_000), b, 'the smallest large buffer that fits is reused');
  t.is(pool.take(400_000).length, 2 * HUGE_PAGE_BYTES, 'then the larger one');
  const c = pool.take(HUGE_PAGE_BYTES);
  const e = pool.take(HUGE_PAGE_BYTES);
  pool.give(c);
  pool.give(e);
  pool.give(a); // 4 huge pages together: over the tier's bound, dropped
  t.is(pool.largeFreeCount, 2, 'the tier holds at most its bound in bytes');
  const over = pool.take(2 * HUGE_PAGE_BYTES + 1);
  t.is(over.length, 2 * HUGE_PAGE_BYTES + 1, 'over the large size bound: a plain allocation');
  pool.give(over);
  t.is(pool.largeFreeCount, 2, 'an oversize buffer is not pooled');
  t.throws(
    () => {
      const f = pool.take(HUGE_PAGE_BYTES);
      pool.give(f);
      pool.give(f);
    },
    undefined,
    'giving back twice is a bug',
  );
});
