// store/random-ids.ts: ids drawn from a pooled block never repeat by chance, across refills.
import test from 'ava';
import { randomU32, randomU64 } from '../../store/random-ids';

const DRAWS = 5000; // past several 4 KiB pool refills, with 4- and 8-byte draws interleaved

test('ids across pool refills are distinct and use the whole range', (t) => {
  const seen64 = new Set<bigint>();
  const seen32 = new Set<number>();
  let high64 = 0;
  for (let i = 0; i < DRAWS; i++) {
    const a = randomU64();
    const b = randomU32();
    t.true(a >= 0n && a < 2n ** 64n);
    t.true(Number.isInteger(b) && b >= 0 && b < 2 ** 32);
    seen64.add(a);
    seen32.add(b);
    if (a >= 2n ** 63n) high64++;
  }
  t.is(seen64.size, DRAWS);
  t.true(seen32.size > DRAWS - 10, `u32 repeats: ${DRAWS - seen32.size}`); // birthday bound: ~3 expected
  t.true(high64 > DRAWS / 4 && high64 < (DRAWS * 3) / 4, `top bit set in ${high64} of ${DRAWS}`);
});
