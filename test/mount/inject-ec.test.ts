// inject on an ec:4+2 file through a live mount (issue 11): a corrupted data shard and two dropped
// shards are rebuilt from parity on read (counted as reconstructions); a third lost shard is beyond
// redundancy: EIO, and one log line naming the file.
import test from 'ava'
import * as path from 'node:path'
import { CLI_JS, ChunkfsMount, mkfs, mountChunkfs, removeDir, run, shOk, tempDir } from '../helpers/mount'

let dir = ''
let m: ChunkfsMount | undefined
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 })

async function json (args: string[]): Promise<any> {
  const r = await cli([...args, '--json'])
  if (r.code !== 0) throw new Error(`chunkfs ${args.join(' ')}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}
const readsBack = async (): Promise<boolean> => (await run('cmp', [path.join(dir, 'ref'), path.join(m!.mountpoint, 'f')])).code === 0

test.before(async () => {
  dir = await tempDir('inject-ec')
  await mkfs(dir + '/store', ['--disks', '6', '--layout', 'ec:4+2'])
  m = await mountChunkfs(dir + '/store', dir + '/mnt')
  await shOk(`head -c 3000000 /dev/urandom > ${dir}/ref && cp ${dir}/ref ${dir}/mnt/f`)
})
test.after.always(async () => {
  if (m !== undefined) await m.stop()
  await removeDir(dir)
})

test.serial('ec:4+2: a corrupted data shard, then two lost shards, are rebuilt from parity; a third is beyond redundancy', async (t) => {
  const before = (await json(['status', m!.mountpoint])).counters
  const c = await json(['inject', 'corrupt', `${dir}/mnt/f`, '--shard', '0', '--block', '2'])
  t.is(c.damage.shards, 6)
  // Every disk refuses to allocate: the healer cannot mend what the reads meet (drops still work).
  for (const d of c.damage.diskIds) await json(['inject', 'enospc', String(d), m!.mountpoint])
  t.true(await readsBack())
  const mid = (await json(['status', m!.mountpoint])).counters
  t.true(mid.bitrot_errors > before.bitrot_errors)
  t.true(mid.reconstructions > before.reconstructions)
  await json(['inject', 'drop', `${dir}/mnt/f`, '--shard', '1'])
  t.true(await readsBack(), 'two of six shards lost: still readable')
  await json(['inject', 'drop', `${dir}/mnt/f`, '--shard', '2'])
  const r = await run('cat', [`${dir}/mnt/f`])
  t.regex(r.stderr, /Input\/output error/)
  const lines = m!.output().split('\n').filter((l) => l.startsWith('chunkfs: read /f: '))
  t.is(lines.length, 1)
  t.regex(lines[0], /UnrecoverableError: only \d of the 4 shards needed verify; failed shards \[0, 1, 2\] \(file \d+, chunk 0, version 1\)/)
})
