// A handler that throws (a bug, an unrecoverable read) answers EIO and is logged; typed POSIX errors
// answer their errno quietly. Either way the op table keeps serving.
import test from 'ava'
import { makeOps } from '../../fs/ops-table'
import { FsError } from '../../store/fs-error'
import type { FsCore } from '../../fs/core'

function fakeCore (resolve: (p: string) => unknown): FsCore {
  return { resolve, handles: { file: () => undefined } } as unknown as FsCore
}

function getattr (core: FsCore, logs: string[], p: string): Promise<number> {
  const ops = makeOps(core, (m) => logs.push(m))
  return new Promise((resolve) => ops.getattr!(p, (err) => resolve(err), { uid: 0, gid: 0, pid: 1, umask: 0 }))
}

test('an untyped throw answers EIO and logs; a typed error answers its errno', async (t) => {
  const logs: string[] = []
  const core = fakeCore((p) => {
    if (p === '/bug') throw new TypeError('boom')
    throw new FsError('ENOENT', 'missing')
  })
  t.is(await getattr(core, logs, '/bug'), -5)
  t.is(logs.length, 1)
  t.regex(logs[0], /getattr \/bug: TypeError: boom/)
  t.is(await getattr(core, logs, '/gone'), -2)
  t.is(logs.length, 1)
})

test('a rejected async handler answers EIO too', async (t) => {
  const logs: string[] = []
  const ops = makeOps({ handles: { fileOf: () => { throw new RangeError('bad') } } } as unknown as FsCore, (m) => logs.push(m))
  const n = await new Promise<number>((resolve) => ops.read!('/f', 3, Buffer.alloc(4), 4, 0, resolve, { uid: 0, gid: 0, pid: 1, umask: 0 }))
  t.is(n, -5)
  t.regex(logs[0], /RangeError: bad/)
})
