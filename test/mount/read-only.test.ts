// mount -o ro (issue 11): reads work, every change is refused with EROFS and changes nothing; the
// mount says it is read-only; with -o debug a failed read is logged with its whole stack.
import test from 'ava'
import { CLI_JS, ChunkfsMount, mkfs, mountChunkfs, removeDir, run, sh, shOk, tempDir } from '../helpers/mount'

let dir = ''
let m: ChunkfsMount | undefined
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 })
const LISTING = `find . -printf '%p %M %s %T@\\n' | LC_ALL=C sort; find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum`

test.before(async () => {
  dir = await tempDir('ro')
  await mkfs(dir + '/store')
  const rw = await mountChunkfs(dir + '/store', dir + '/mnt')
  await shOk(`cd ${dir}/mnt && mkdir d && head -c 300000 /dev/urandom > f && echo hi > d/small`)
  await rw.stop()
  m = await mountChunkfs(dir + '/store', dir + '/mnt', ['-o', 'ro,debug'])
})
test.after.always(async () => {
  if (m !== undefined) await m.stop()
  await removeDir(dir)
})

test.serial('reads work; every change is refused with EROFS and changes nothing', async (t) => {
  t.regex(m!.readyLine, /\(pid \d+, transport [\w-]+, read-only\)$/)
  const before = await shOk(`cd ${dir}/mnt && ${LISTING}`)
  t.is((await shOk(`cat ${dir}/mnt/d/small`)).trim(), 'hi')
  const changes = [
    'touch new', 'echo more >> f', 'truncate -s 0 f', 'mkdir e', 'rm f', 'mv f g', 'chmod 600 f', 'ln f hard', 'ln -s f soft',
    'setfattr -n user.x -v 1 f', 'rmdir d', 'mknod p p',
  ]
  for (const c of changes) {
    const r = await sh(`cd ${dir}/mnt && ${c}`)
    t.not(r.code, 0, c)
    t.regex(r.stderr, /Read-only file system/, c)
  }
  t.is(await shOk(`cd ${dir}/mnt && ${LISTING}`), before)
  const st = JSON.parse((await cli(['status', `${dir}/mnt`, '--json'])).stdout)
  t.true(st.mount.readOnly)
  t.regex((await cli(['status', `${dir}/mnt`])).stdout, /, read-only\)/)
})

test.serial('-o debug: an unrecoverable read is logged with its stack', async (t) => {
  for (const shard of ['0', '1', '2']) {
    const r = await cli(['inject', 'corrupt', `${dir}/mnt/f`, '--shard', shard])
    t.is(r.code, 0, r.stderr)
  }
  const r = await run('cat', [`${dir}/mnt/f`])
  t.regex(r.stderr, /Input\/output error/)
  t.regex(m!.output(), /chunkfs: read \/f: UnrecoverableError: .*\n\s+at /)
})
