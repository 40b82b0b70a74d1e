// Which payload bytes a whole-shard write puts on the device (src/data-runs.ts, DESIGN §5 "Sparse
// shard writes"): zero pages in runs of at least HOLE_BYTES_MIN stay holes, the last page never does.
import test from 'ava';
import { HOLE_BYTES_MIN, coversAll, dataRuns } from '../../src/data-runs';
import { PAGE_BYTES } from '../../src/region';

const MIB = 1 << 20;

test('data with no zero page is one run of each slice', (t) => {
  const a = Buffer.alloc(MIB, 1);
  const b = Buffer.alloc(MIB, 2);
  const runs = dataRuns([a, b]);
  t.deepEqual(runs, [
    { slice: 0, startBytes: 0, endBytes: MIB },
    { slice: 1, startBytes: 0, endBytes: MIB },
  ]);
  t.true(coversAll(runs, [a, b]));
});

test('a write at the end of a fresh chunk: the zeros before it stay a hole', (t) => {
  const c = Buffer.alloc(4 * MIB);
  c.fill(7, 4 * MIB - 4096);
  const runs = dataRuns([c]);
  t.deepEqual(runs, [{ slice: 0, startBytes: 4 * MIB - 4096, endBytes: 4 * MIB }]);
  t.false(coversAll(runs, [c]));
});

test('interior runs of zero pages: holes from HOLE_BYTES_MIN on, shorter ones written', (t) => {
  const c = Buffer.alloc(2 * MIB, 1);
  c.fill(0, PAGE_BYTES, PAGE_BYTES + HOLE_BYTES_MIN); // a hole
  c.fill(0, MIB, MIB + HOLE_BYTES_MIN - PAGE_BYTES); // one page short of a hole
  t.deepEqual(dataRuns([c]), [
    { slice: 0, startBytes: 0, endBytes: PAGE_BYTES },
    { slice: 0, startBytes: PAGE_BYTES + HOLE_BYTES_MIN, endBytes: 2 * MIB },
  ]);
});

test('all zeros: only the last page is written (the file keeps its length)', (t) => {
  const c = Buffer.alloc(MIB + 100);
  t.deepEqual(dataRuns([c]), [{ slice: 0, startBytes: MIB, endBytes: MIB + 100 }]);
  const slices = [Buffer.alloc(MIB), Buffer.alloc(MIB), Buffer.alloc(0)];
  t.deepEqual(dataRuns(slices), [{ slice: 1, startBytes: MIB - PAGE_BYTES, endBytes: MIB }]);
});

test('a page with data only in its middle is data', (t) => {
  const c = Buffer.alloc(MIB);
  c[HOLE_BYTES_MIN + 2000] = 1; // inside page 16: its first and last bytes are zero
  t.deepEqual(dataRuns([c]), [
    { slice: 0, startBytes: HOLE_BYTES_MIN, endBytes: HOLE_BYTES_MIN + PAGE_BYTES },
    { slice: 0, startBytes: MIB - PAGE_BYTES, endBytes: MIB },
  ]);
});
