// The write-back buffer's extent map against a plain byte-array model: random inserts, overlays,
// takes and truncates must agree byte for byte.
import test from 'ava';
import { ExtentMap, toRuns, runBytes } from '../../fs/extent-map';

const SPACE_BYTES = 1 << 16;

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('random inserts, takes and truncates match a byte-array model (one and many buckets)', (t) => {
  for (const [seed, bucketBytes] of [
    [1, 4 << 20],
    [2, 4 << 20],
    [3, 1000],
    [4, 4096],
    [5, 777],
  ]) {
    const r = rng(seed);
    const map = new ExtentMap(bucketBytes);
    const model = new Int16Array(SPACE_BYTES).fill(-1); // -1 = not buffered
    for (let step = 0; step < 2000; step++) {
      const op = r();
      const off = Math.floor(r() * SPACE_BYTES * 0.9);
      const len = 1 + Math.floor(r() * (r() < 0.8 ? 512 : 8192));
      if (op < 0.7) {
        const data = Buffer.alloc(Math.min(len, SPACE_BYTES - off));
        for (let i = 0; i < data.length; i++) data[i] = Math.floor(r() * 256);
        map.insert(off, data);
        for (let i = 0; i < data.length; i++) model[off + i] = data[i];
      } else if (op < 0.85) {
        const end = Math.min(SPACE_BYTES, off + len);
        for (const e of map.take(off, end)) {
          for (let i = 0; i < e.data.length; i++) t.is(model[e.offsetBytes + i], e.data[i]);
        }
        model.fill(-1, off, end);
      } else if (op < 0.9) {
        map.truncate(off);
        model.fill(-1, off);
      }
      if (step % 100 === 0) {
        const view = Buffer.alloc(SPACE_BYTES, 0xee);
        map.overlay(view, 0);
        let bytes = 0;
        for (let i = 0; i < SPACE_BYTES; i++) {
          if (model[i] >= 0) {
            bytes++;
            if (view[i] !== model[i]) {
              t.fail(`seed ${seed} step ${step} byte ${i}`);
              return;
            }
          }
        }
        t.is(map.bytes, bytes);
        let last = SPACE_BYTES - 1;
        while (last >= 0 && model[last] < 0) last--;
        t.is(map.endBytes, last + 1);
        t.is(map.coverage(0, SPACE_BYTES), bytes);
      }
    }
  }
});

test('toRuns joins adjacent extents and cuts at chunk boundaries', (t) => {
  const map = new ExtentMap();
  map.insert(0, Buffer.alloc(100, 1));
  map.insert(100, Buffer.alloc(100, 2));
  map.insert(250, Buffer.alloc(100, 3)); // crosses the 256-byte chunk boundary
  const runs = toRuns(map.takeAll(), 256);
  t.deepEqual(
    runs.map((r) => [r.offsetBytes, r.lengthBytes]),
    [
      [0, 200],
      [250, 6],
      [256, 94],
    ],
  );
  t.is(runBytes(runs[0])[99], 1);
  t.is(runBytes(runs[0])[100], 2);
  t.is(runBytes(runs[2]).length, 94);
  t.true(map.isEmpty);
});
