// statfs through the binding's 32-bit fields: block counts never wrap, and counts times the
// fragment size give back the store's usable bytes (to within one fragment).
import test from 'ava'
import { statfs } from '../../fs/ops-attr'
import type { FsCore } from '../../fs/core'

function coreWith (totalBytes: number, freeBytes: number): FsCore {
  return { store: { statfs: async () => ({ totalBytes, freeBytes, availBytes: freeBytes }) } } as unknown as FsCore
}

test('small stores report 4 KiB fragments; 100 TiB and 10 PiB stores keep counts within 32 bits', async (t) => {
  const small = await statfs(coreWith(500 * 2 ** 30, 100 * 2 ** 30))
  t.is(small.frsize, 4096)
  t.is(small.blocks, 500 * 2 ** 30 / 4096)
  for (const total of [100 * 2 ** 40, 10 * 2 ** 50, 2 ** 32 * 4096]) {
    const s = await statfs(coreWith(total, total / 3))
    t.true(s.blocks < 2 ** 32 && s.bfree < 2 ** 32 && s.bavail < 2 ** 32, `counts fit for ${total}`)
    t.true(Math.abs(s.blocks * s.frsize - total) < s.frsize, `blocks x frsize = total for ${total}`)
    t.true(Math.abs(s.bavail * s.frsize - total / 3) < s.frsize)
  }
})
