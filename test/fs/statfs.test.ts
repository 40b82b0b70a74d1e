// statfs through fuse-native's 32-bit fields: block counts never wrap, and counts times the
// fragment size give back the store's usable bytes (to within one fragment). (libfuse3 carries
// 64-bit counts: the fuse3 transport always reports 4 KiB fragments.)
import test from 'ava';
import { toFuseStatfs } from '../../fs/fuse/path-ops';
import type { FsCounts } from '../../fs/types';

function counts(totalBytes: number, freeBytes: number): FsCounts {
  return { totalBytes, freeBytes, availBytes: freeBytes, files: 1 << 30, filesFree: 1 << 30, nameBytesMax: 255 };
}

test('small stores report 4 KiB fragments; 100 TiB and 10 PiB stores keep counts within 32 bits', (t) => {
  const small = toFuseStatfs(counts(500 * 2 ** 30, 100 * 2 ** 30));
  t.is(small.frsize, 4096);
  t.is(small.blocks, (500 * 2 ** 30) / 4096);
  t.is(small.namemax, 255);
  for (const total of [100 * 2 ** 40, 10 * 2 ** 50, 2 ** 32 * 4096]) {
    const s = toFuseStatfs(counts(total, total / 3));
    t.true(s.blocks < 2 ** 32 && s.bfree < 2 ** 32 && s.bavail < 2 ** 32, `counts fit for ${total}`);
    t.true(Math.abs(s.blocks * s.frsize - total) < s.frsize, `blocks x frsize = total for ${total}`);
    t.true(Math.abs(s.bavail * s.frsize - total / 3) < s.frsize);
  }
});
