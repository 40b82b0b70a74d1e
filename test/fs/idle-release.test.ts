// Pooled write-back memory gives its pages back once unused (src/idle-release.ts): a free slab or
// lane parked for the idle time reads as zeros afterwards (its pages went back to the kernel) and is
// still usable; one taken again before that keeps its pages and bytes. The clock is the test's own.
import test from 'ava';
import { IdleRelease } from '../../src/idle-release';
import { SlabPool } from '../../fs/slab-pool';
import { FlushLanes } from '../../fs/flush-lanes';
import { HUGE_PAGE_BYTES, allocHuge, releaseHugePages } from '../../src/huge-buffer';

const IDLE_MS = 1000;

function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let ms = 0;
  return {
    now: () => ms,
    advance: (d) => {
      ms += d;
    },
  };
}

const allZero = (b: Buffer): boolean => b.every((x) => x === 0);

test('releaseHugePages: a huge buffer reads zeros after, and stays writable; other buffers are refused', (t) => {
  const buf = allocHuge(HUGE_PAGE_BYTES);
  buf.fill(0xa5);
  t.true(releaseHugePages(buf));
  t.true(allZero(buf));
  buf.fill(7, 100, 200);
  t.is(buf[150], 7);
  t.false(releaseHugePages(Buffer.alloc(4096, 1)));
});

test('a free slab unused for the idle time is released', (t) => {
  const clock = manualClock();
  const idle = new IdleRelease({ idleMs: IDLE_MS, now: clock.now, timer: false });
  const pool = new SlabPool(HUGE_PAGE_BYTES, 8, undefined, idle);
  const src = Buffer.alloc(HUGE_PAGE_BYTES, 0x5a);
  const a = pool.copy(src, HUGE_PAGE_BYTES); // fills slab 1
  pool.copy(src, HUGE_PAGE_BYTES); // seals slab 1, fills slab 2
  a.slab!.release(HUGE_PAGE_BYTES); // slab 1 to the free list
  t.is(idle.parkedCount, 1);
  clock.advance(IDLE_MS - 1);
  idle.sweep();
  t.is(idle.releasedBytes, 0, 'not idle long enough');
  t.is(a.slab!.buf[12345], 0x5a);
  clock.advance(1);
  idle.sweep();
  t.is(idle.releasedBytes, HUGE_PAGE_BYTES);
  t.is(idle.parkedCount, 0);
  t.true(allZero(a.slab!.buf), 'its pages went back to the kernel');
});

test('a free slab taken again before the idle time keeps its pages', (t) => {
  const clock = manualClock();
  const idle = new IdleRelease({ idleMs: IDLE_MS, now: clock.now, timer: false });
  const pool = new SlabPool(HUGE_PAGE_BYTES, 8, undefined, idle);
  const a = pool.copy(Buffer.alloc(HUGE_PAGE_BYTES, 0x5a), HUGE_PAGE_BYTES); // fills slab 1
  const b = pool.copy(Buffer.alloc(HUGE_PAGE_BYTES, 0x6b), HUGE_PAGE_BYTES); // seals slab 1, fills slab 2
  a.slab!.release(HUGE_PAGE_BYTES);
  clock.advance(IDLE_MS / 2);
  const c = pool.copy(Buffer.alloc(100, 3), 100); // seals slab 2, takes slab 1 off the free list
  t.is(c.slab, a.slab);
  t.is(idle.parkedCount, 0);
  b.slab!.release(HUGE_PAGE_BYTES); // slab 2 to the free list, parked now
  clock.advance(IDLE_MS * 10);
  idle.sweep();
  t.is(idle.releasedBytes, HUGE_PAGE_BYTES, 'slab 2 only');
  t.is(c.data[50], 3);
  t.is(c.slab!.buf[HUGE_PAGE_BYTES - 1], 0x5a, 'bytes past the new piece are the old ones: the pages stayed');
  t.true(allZero(b.slab!.buf));
});

test('a released slab is reused with the right bytes', (t) => {
  const clock = manualClock();
  const idle = new IdleRelease({ idleMs: IDLE_MS, now: clock.now, timer: false });
  const pool = new SlabPool(HUGE_PAGE_BYTES, 8, undefined, idle);
  const first = pool.copy(Buffer.alloc(HUGE_PAGE_BYTES, 1), HUGE_PAGE_BYTES);
  pool.copy(Buffer.alloc(10, 2), 10); // seals the first slab
  first.slab!.release(HUGE_PAGE_BYTES);
  clock.advance(IDLE_MS);
  idle.sweep();
  t.is(idle.releasedBytes, HUGE_PAGE_BYTES);
  const filler = pool.copy(Buffer.alloc(HUGE_PAGE_BYTES - 10, 4), HUGE_PAGE_BYTES - 10); // fills the current slab
  t.not(filler.slab, first.slab);
  const again = pool.copy(Buffer.alloc(4096, 9), 4096);
  t.is(again.slab, first.slab, 'the free (released) slab is taken');
  t.true(again.data.every((x) => x === 9));
});

test('an idle flush lane is released and usable at its next use', async (t) => {
  const clock = manualClock();
  const idle = new IdleRelease({ idleMs: IDLE_MS, now: clock.now, timer: false });
  const lanes = new FlushLanes(HUGE_PAGE_BYTES, 2, idle);
  const lane = await lanes.acquire();
  lane.buffer.fill(0x11);
  lanes.release(lane);
  t.is(idle.parkedCount, 1);
  clock.advance(IDLE_MS);
  idle.sweep();
  t.is(idle.releasedBytes, HUGE_PAGE_BYTES);
  t.true(allZero(lane.buffer));
  const again = await lanes.acquire();
  t.is(again, lane);
  again.buffer.fill(0x22, 0, 4096);
  t.is(again.buffer[4095], 0x22);
  lanes.release(again);
  const never = new FlushLanes(HUGE_PAGE_BYTES, 2, idle);
  never.release(await never.acquire()); // no buffer was ever allocated: nothing to park
  t.is(idle.parkedCount, 1);
});
