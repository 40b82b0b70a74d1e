// fs/fuse/page-drops.ts (issue 24 item 2): one kernel invalidation runs at a time, the inodes asked
// for while it runs go together in the next one, each drop settles only after an invalidation that
// started after it was asked, and a failed invalidation still settles its callers.
import test from 'ava'
import { PageDrops } from '../../fs/fuse/page-drops'

function controlled (): { calls: number[][]; running: () => number; finish: (fail?: boolean) => void; drops: PageDrops } {
  const calls: number[][] = []
  const pending: Array<{ resolve: () => void; reject: (e: Error) => void }> = []
  let active = 0
  let maxActive = 0
  const drops = new PageDrops((inos) => {
    calls.push(Array.from(inos))
    active += 1
    maxActive = Math.max(maxActive, active)
    return new Promise<void>((resolve, reject) => { pending.push({ resolve, reject }) }).finally(() => { active -= 1 })
  })
  return {
    calls,
    running: () => maxActive,
    finish: (fail = false) => { const p = pending.shift(); if (fail) p?.reject(new Error('ENOENT')); else p?.resolve() },
    drops,
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

test('drops asked for during a running invalidation wait for the next one, which takes them all', async (t) => {
  const c = controlled()
  const settled: number[] = []
  void c.drops.drop(5).then(() => settled.push(5))
  await tick()
  void c.drops.drop(6).then(() => settled.push(6))
  void c.drops.drop(7).then(() => settled.push(7))
  void c.drops.drop(6).then(() => settled.push(60))
  await tick()
  t.deepEqual(c.calls, [[5]])
  c.finish()
  await tick()
  t.deepEqual(settled, [5])
  t.deepEqual(c.calls, [[5], [6, 7]])
  c.finish(true) // a failed invalidation (the kernel forgot the inode) still settles
  await tick()
  t.deepEqual(settled, [5, 6, 7, 60])
  t.is(c.running(), 1)
  await c.drops.idle()
  void c.drops.drop(8)
  await tick()
  t.deepEqual(c.calls, [[5], [6, 7], [8]])
  c.finish()
  await c.drops.idle()
})
