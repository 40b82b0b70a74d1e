// Times outside signed 64-bit nanoseconds (store/meta/far-times.ts, schema v6): stored exactly in the
// *_far columns, the *_ns column clamped; any later near time (a write setting mtime to now, a
// utimens) clears the far column, whichever statement writes it.
import test from 'ava';
import { ROOT_INO } from '../../store/meta/meta';
import { NEAR_NS_MAX, NEAR_NS_MIN, fromColumns, toColumns } from '../../store/meta/far-times';
import { smallStore } from './helpers';

const NS_PER_S = 1_000_000_000n;
const Y2500 = 16725225600n * NS_PER_S + 7n;
const Y1000 = -30610224000n * NS_PER_S + 999_999_999n;

test('toColumns/fromColumns round trip near and far times; the ends of the range are far', (t) => {
  for (const v of [
    0n,
    -1n,
    1n,
    Y2500,
    Y1000,
    NEAR_NS_MIN,
    NEAR_NS_MAX,
    NEAR_NS_MIN + 1n,
    NEAR_NS_MAX - 1n,
    -(2n ** 63n) * NS_PER_S,
  ]) {
    const c = toColumns(v);
    t.is(fromColumns(c.ns, c.far), v, String(v));
    t.true(c.ns >= NEAR_NS_MIN && c.ns <= NEAR_NS_MAX);
  }
  t.is(toColumns(NEAR_NS_MAX - 1n).far, null);
  t.not(toColumns(NEAR_NS_MAX).far, null);
  t.throws(() => fromColumns(0n, '12x'), { instanceOf: RangeError });
});

test('far times survive the database; a near write to the same column clears them', async (t) => {
  const { store } = await smallStore('replica:3');
  const ns = store.ns;
  const f = ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  ns.setattr(f.ino, { atimeNs: Y1000, mtimeNs: Y2500 });
  let a = ns.attr(f.ino);
  t.is(a.atimeNs, Y1000);
  t.is(a.mtimeNs, Y2500);
  ns.setattr(f.ino, { mode: 0o600 }); // other changes keep them
  a = ns.attr(f.ino);
  t.is(a.mtimeNs, Y2500);
  t.is(a.atimeNs, Y1000);
  await store.write(f.ino, 0, Buffer.from('now')); // the store sets mtime to now with its own statement
  a = ns.attr(f.ino);
  t.true(a.mtimeNs > 0n && a.mtimeNs < NEAR_NS_MAX, String(a.mtimeNs));
  t.is(a.atimeNs, Y1000);
  ns.setAtimes([[f.ino, 5n]]);
  t.is(ns.attr(f.ino).atimeNs, 5n);
  await store.close();
});

// xfstests generic/634: a write committed with a far mtime (tar sets it before close, so
// the close batch stores the bytes with it) bound the BigInt into mtime_ns: RangeError, bytes lost.
const at = (mtimeNs: bigint): { mtimeNs: bigint; ctimeNs: bigint } => ({ mtimeNs, ctimeNs: 0n }); // ctime: kept
test('a write committed with a far mtime stores its bytes and the time: needle, new chunk, in-place patch', async (t) => {
  const { store } = await smallStore('replica:3', 6, { smallFileMaxBytes: 16 * 1024 });
  const ns = store.ns;
  const small = ns.create(ROOT_INO, 'small', 0o644, 0, 0);
  await store.write(small.ino, 0, Buffer.from('needle'), undefined, at(Y2500));
  t.is(ns.attr(small.ino).mtimeNs, Y2500);
  t.deepEqual(await store.read(small.ino, 0, 100), Buffer.from('needle'));
  await store.write(small.ino, 0, Buffer.from('N'), undefined, at(Y1000));
  t.is(ns.attr(small.ino).mtimeNs, Y1000);
  t.deepEqual(await store.read(small.ino, 0, 100), Buffer.from('Needle'));
  const big = ns.create(ROOT_INO, 'big', 0o644, 0, 0);
  const bytes = Buffer.alloc(100 * 1024, 7);
  await store.write(big.ino, 0, bytes, undefined, at(Y1000)); // a new chunk (grow)
  t.is(ns.attr(big.ino).mtimeNs, Y1000);
  await store.write(big.ino, 4096, Buffer.from('patch'), undefined, at(Y2500)); // in place (touch)
  t.is(ns.attr(big.ino).mtimeNs, Y2500);
  bytes.write('patch', 4096);
  t.deepEqual(await store.read(big.ino, 0, bytes.length), bytes);
  await store.write(big.ino, 0, Buffer.from('now')); // a write at "now" clears the far column again
  t.true(ns.attr(big.ino).mtimeNs < NEAR_NS_MAX);
  await store.close();
});
