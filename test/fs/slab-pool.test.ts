// The slab pool under the extent map: every byte the map stops holding goes back to its slab, so
// live bytes always equal the buffered bytes plus what a flush has taken and not yet released, and
// emptied slabs are reused (the point of the pool: no fresh memory per write).
import test from 'ava';
import { ExtentMap, releaseExtents, Extent } from '../../fs/extent-map';
import { SlabPool } from '../../fs/slab-pool';
import { prng as rng } from '../../store/io/faulty-io';

const SPACE_BYTES = 1 << 18;

test('live slab bytes equal buffered plus taken-unreleased bytes; contents stay right', (t) => {
  for (const [seed, bucketBytes] of [
    [11, 4 << 20],
    [12, 5000],
    [13, 65536],
  ]) {
    const r = rng(seed);
    const pool = new SlabPool(64 * 1024, 4);
    const slabs = new Set<import('../../fs/slab-pool').Slab>();
    const map = new ExtentMap(bucketBytes);
    const model = new Int16Array(SPACE_BYTES).fill(-1);
    let inFlight: Extent[] = [];
    for (let step = 0; step < 3000; step++) {
      const op = r();
      const off = Math.floor(r() * SPACE_BYTES * 0.95);
      const len = Math.min(1 + Math.floor(r() * (r() < 0.8 ? 4096 : 40000)), SPACE_BYTES - off);
      if (op < 0.75) {
        const src = Buffer.alloc(len);
        for (let i = 0; i < len; i++) src[i] = Math.floor(r() * 256);
        if (!map.overwrite(off, src, len)) {
          const piece = pool.copy(src, len);
          if (piece.slab !== null) slabs.add(piece.slab);
          map.insert(off, piece.data, piece.slab);
        }
        for (let i = 0; i < len; i++) model[off + i] = src[i];
      } else if (op < 0.85) {
        inFlight.push(...map.take(off, off + len)); // a flush in progress holds these
        model.fill(-1, off, off + len);
      } else if (op < 0.9) {
        map.truncate(off);
        model.fill(-1, off);
      } else {
        for (const e of inFlight)
          for (let i = 0; i < e.data.length; i++)
            if (model[e.offsetBytes + i] === -1) {
              /* taken bytes are the flush's own */
            }
        releaseExtents(inFlight); // the flush settled
        inFlight = [];
      }
      let live = 0;
      for (const s of slabs) live += s.liveBytes;
      const taken = inFlight.reduce((n, e) => n + e.data.length, 0);
      if (live !== map.bytes + taken) {
        t.fail(`seed ${seed} step ${step}: live ${live} != ${map.bytes} + ${taken}`);
        return;
      }
      if (step % 200 === 0) {
        const view = Buffer.alloc(SPACE_BYTES);
        map.overlay(view, 0);
        for (let i = 0; i < SPACE_BYTES; i++)
          if (model[i] >= 0 && view[i] !== model[i]) {
            t.fail(`seed ${seed} step ${step} byte ${i}`);
            return;
          }
      }
    }
    releaseExtents(inFlight);
    releaseExtents(map.takeAll());
    let live = 0;
    for (const s of slabs) live += s.liveBytes;
    t.is(live, 0);
    t.true(pool.heldBytes <= pool.slabBytes, 'at most the slab being carved stays held');
    t.true(slabs.size < 300, `slabs were reused (${slabs.size} distinct for 3000 steps)`);
  }
});

test('an emptied slab is reused; a copy larger than a slab is a plain buffer; bad releases assert', (t) => {
  const pool = new SlabPool(8192, 1);
  const a = pool.copy(Buffer.alloc(6000, 1), 6000);
  const b = pool.copy(Buffer.alloc(4000, 2), 4000); // does not fit: a new slab, the first is sealed
  t.not(a.slab, b.slab);
  t.is(pool.heldBytes, 2 * 8192);
  a.slab!.release(6000);
  t.is(pool.freeCount, 1);
  t.is(pool.heldBytes, 8192);
  const c = pool.copy(Buffer.alloc(4000, 3), 4000); // fits in b's slab
  t.is(c.slab, b.slab);
  const d = pool.copy(Buffer.alloc(5000, 4), 5000); // takes the freed slab
  t.is(d.slab, a.slab);
  t.is(d.data[0], 4);
  const big = pool.copy(Buffer.alloc(9000, 5), 9000);
  t.is(big.slab, null);
  t.is(big.data.length, 9000);
  t.throws(() => d.slab!.release(5001));
});

test('slabs are at most 1/16 of a small buffer limit, 2 MiB for large ones', (t) => {
  const { slabBytesFor } = require('../../fs/write-buffer') as typeof import('../../fs/write-buffer');
  t.is(slabBytesFor(1 << 20), 64 * 1024);
  t.is(slabBytesFor(256 << 20), 2 << 20);
  for (const mb of [1, 2, 3, 7, 16, 100]) t.true(slabBytesFor(mb << 20) * 16 <= mb << 20);
});
