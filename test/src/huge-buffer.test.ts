// Huge-page buffers from the native addon: the size asked for, writable and readable, independent
// of each other, and refused for sizes that are not a positive multiple of 2 MiB.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { HUGE_PAGE_BYTES, allocHuge, allocLarge } from '../../src/huge-buffer';
import { rsNative } from '../../src/rs-native';

test('allocHuge gives independent, writable buffers of the size asked for', (t) => {
  const a = allocHuge(HUGE_PAGE_BYTES);
  const b = allocHuge(2 * HUGE_PAGE_BYTES);
  t.is(a.length, HUGE_PAGE_BYTES);
  t.is(b.length, 2 * HUGE_PAGE_BYTES);
  a.fill(0x11);
  b.fill(0x22);
  t.is(a[a.length - 1], 0x11);
  t.is(b[0], 0x22);
  t.is(a.byteOffset % 4096, 0);
  t.true(a.subarray(0, 100).equals(Buffer.alloc(100, 0x11)));
});

test('allocHuge refuses sizes that are not positive multiples of 2 MiB; allocLarge falls back', (t) => {
  for (const bad of [0, -1, 4096, HUGE_PAGE_BYTES + 1, 1.5]) t.throws(() => allocHuge(bad));
  t.throws(() => rsNative().allocHuge(4096), { message: /multiple of 2 MiB/ });
  t.throws(() => (rsNative().allocHuge as unknown as (x: unknown) => Buffer)('x'), { message: /byte count/ });
  t.is(allocLarge(5000).length, 5000);
  t.is(allocLarge(HUGE_PAGE_BYTES).length, HUGE_PAGE_BYTES);
});

test('memory of collected huge buffers is given back (no growth over many allocations)', (t) => {
  // In a child with --expose-gc, so collection is certain rather than up to V8's heuristics.
  const script = `
    const { allocHuge } = require(${JSON.stringify(require.resolve('../../src/huge-buffer'))});
    (async () => {
      const before = process.memoryUsage().rss;
      for (let i = 0; i < 200; i++) {
        allocHuge(2 << 20).fill(1);
        if (i % 10 === 9) { gc(); await new Promise((r) => setImmediate(r)); } // finalizers run after a turn
      }
      process.stdout.write(String(process.memoryUsage().rss - before));
    })();`;
  const out = execFileSync(process.execPath, ['--expose-gc', '-e', script]).toString();
  const grownBytes = Number(out);
  t.true(Number.isFinite(grownBytes));
  t.true(grownBytes < 64 * HUGE_PAGE_BYTES, `rss grew by ${grownBytes} bytes after 400 MiB allocated and dropped`);
});
