// Online scrub and heal through a live mount (issue 11): progress lines on stderr (not a terminal),
// --json, --rate, --repair while the mount serves; the heal queue listed and drained; a shard the
// healer cannot rebuild is logged once however often it is retried; beyond redundancy a read fails
// with EIO and the mount logs one line naming the path, chunk and shards (no stack trace).
import test from 'ava'
import * as path from 'node:path'
import { CLI_JS, ChunkfsMount, mkfs, mountChunkfs, removeDir, run, shOk, tempDir } from '../helpers/mount'

let dir = ''
let m: ChunkfsMount | undefined
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 120_000 })
const MB = 1 << 20

async function ok (args: string[]): Promise<string> {
  const r = await cli(args)
  if (r.code !== 0) throw new Error(`chunkfs ${args.join(' ')}: exit ${r.code}: ${r.stderr}${r.stdout}`)
  return r.stdout
}
const injectJson = async (args: string[]): Promise<any> => JSON.parse(await ok(['inject', ...args, '--json']))
const readsBack = async (name: string): Promise<boolean> => (await run('cmp', [path.join(dir, 'ref'), path.join(m!.mountpoint, name)])).code === 0
const logLines = (re: RegExp): string[] => m!.output().split('\n').filter((l) => re.test(l))

test.before(async () => {
  dir = await tempDir('scrub-heal')
  await mkfs(dir + '/store')
  m = await mountChunkfs(dir + '/store', dir + '/mnt')
  await shOk(`head -c ${12 * MB} /dev/urandom > ${dir}/ref && cp ${dir}/ref ${dir}/mnt/f && cp ${dir}/ref ${dir}/mnt/g`)
})
test.after.always(async () => {
  if (m !== undefined) await m.stop()
  await removeDir(dir)
})

test.serial('online scrub: progress lines, a clean report, then damage found (exit 1) and repaired with --repair while mounted', async (t) => {
  const clean = await cli(['scrub', m!.mountpoint, '--rate', '200M/s'])
  t.is(clean.code, 0, clean.stderr)
  t.regex(clean.stdout, new RegExp(`^chunkfs scrub: ${dir}/store \\(mounted\\): 18 shards checked, 0 bad or missing, 0 repaired, 0 unrecoverable`))
  const progress = clean.stderr.split('\n').filter((l) => l.startsWith('chunkfs scrub: '))
  t.true(progress.length >= 2, clean.stderr)
  t.regex(progress[0], /^chunkfs scrub: 0% 0 B of 72\.0 MiB, .*\/s, ETA /)
  t.regex(progress[progress.length - 1], /^chunkfs scrub: 100% 72\.0 MiB of 72\.0 MiB, .*\/s, done$/)

  // Shard 2 is read last: only a scrub finds it.
  const d = await injectJson(['corrupt', `${dir}/mnt/g`, '--chunk', '1', '--shard', '2', '--block', '7'])
  t.regex(d.message, /a read tries shard \d first, so only a scrub or a failover meets this one/)
  const found = await cli(['scrub', dir + '/store', '--json'])
  t.is(found.code, 1)
  const r = JSON.parse(found.stdout)
  t.true(r.online)
  t.is(r.badFound, 1)
  t.deepEqual(r.bad, [{ ino: d.damage.ino, path: '/g', chunkIndex: 1, shardIndex: 2 }])
  t.regex(found.stderr, /bad or missing \(queued for heal; run with --repair\): \/g \(file \d+\) chunk 1 shard 2/)
  const fixed = await cli(['scrub', m!.mountpoint, '--repair'])
  t.is(fixed.code, 0, fixed.stderr)
  t.regex(fixed.stdout, /18 shards checked, (0|1) bad or missing, (0|1) repaired, 0 unrecoverable/) // the background healer may have been first
  t.regex(await ok(['scrub', m!.mountpoint]), /18 shards checked, 0 bad or missing/)
  t.true(await readsBack('g'))
})

test.serial('on a terminal the progress is a bar (cli-progress) with rate and ETA', async (t) => {
  // script(1) gives the command a pseudo-terminal.
  const r = await run('script', ['-qec', `${process.execPath} ${CLI_JS} scrub ${m!.mountpoint}`, '/dev/null'], { timeoutMs: 120_000 })
  t.is(r.code, 0, r.stdout)
  t.regex(r.stdout, /chunkfs scrub \[=+\] 100% 72\.0 MiB of 72\.0 MiB, .*\/s, done/)
  t.regex(r.stdout, /18 shards checked, 0 bad or missing/)
})

test.serial('heal: a shard that cannot be rebuilt stays queued, is listed, and is logged once; once possible, chunkfs heal rebuilds it', async (t) => {
  const d = await injectJson(['corrupt', `${dir}/mnt/f`, '--chunk', '2'])
  const disk = d.damage.diskId
  // Its disk refuses writes: the rebuilt shard cannot be written back.
  await ok(['inject', 'enospc', String(disk), m!.mountpoint])
  t.true(await readsBack('f'), 'served around the damaged shard')
  for (let i = 0; i < 2; i++) {
    const h = await cli(['heal', m!.mountpoint])
    t.is(h.code, 1)
    t.regex(h.stderr, new RegExp(`cannot rebuild /f \\(file ${d.damage.ino}\\) chunk 2 shard ${d.damage.shardIndex}: .*ENOSPC`))
  }
  const list = await ok(['heal', '--list', m!.mountpoint])
  t.regex(list, /: 1 shard\(s\)\n/)
  t.regex(list, new RegExp(`/f \\(file ${d.damage.ino}\\) chunk 2 shard ${d.damage.shardIndex}: [2-9] failed attempt\\(s\\), next try (in|now).*queued for: bitrot`))
  const listed = JSON.parse(await ok(['heal', '--list', '--json', dir + '/store']))
  t.is(listed.queueLength, 1)
  t.is(listed.entries[0].path, '/f')
  t.is(logLines(/heal: cannot rebuild .* chunk 2 shard/).length, 1, 'one line however many attempts')

  await ok(['inject', '--clear', m!.mountpoint])
  const healed = await cli(['heal', m!.mountpoint, '--json'])
  t.is(healed.code, 0, healed.stderr)
  const h = JSON.parse(healed.stdout)
  t.is(h.failed.length, 0)
  t.is(h.queueLength, 0)
  t.is(h.healed + h.alreadyGood, h.tried)
  t.regex(await ok(['heal', '--list', m!.mountpoint]), /: 0 shard\(s\)\n$/)
  t.is(logLines(/heal: rebuilt .* chunk 2 shard .* after \d+ failed attempt\(s\)/).length, 1)
  t.regex(await ok(['scrub', m!.mountpoint]), /0 bad or missing/)
})

test.serial('beyond redundancy: EIO, one log line naming the path, chunk and shards, no stack; scrub names it unrecoverable', async (t) => {
  for (const shard of ['0', '1', '2']) await ok(['inject', 'corrupt', `${dir}/mnt/g`, '--chunk', '0', '--shard', shard, '--block', '0'])
  for (let i = 0; i < 3; i++) {
    const r = await run('cat', [`${dir}/mnt/g`])
    t.not(r.code, 0)
    t.regex(r.stderr, /Input\/output error/)
  }
  const lines = logLines(/read \/g:/)
  t.is(lines.length, 1, m!.output())
  t.regex(lines[0], /^chunkfs: read \/g: UnrecoverableError: no replica of .* verifies \(shard \d bitrot, \d bitrot, \d bitrot\); failed shards \[.*\] \(file \d+, chunk 0, version \d+\)$/)
  t.false(m!.output().includes('    at '), 'no stack trace')
  const s = await cli(['scrub', m!.mountpoint])
  t.is(s.code, 1)
  t.regex(s.stderr, /bad or missing \(queued for heal; run with --repair\): \/g \(file \d+\) chunk 0 shards 0,1,2/)
  const r = await cli(['scrub', m!.mountpoint, '--repair'])
  t.is(r.code, 1)
  t.regex(r.stdout, /3 bad or missing, 0 repaired, 3 unrecoverable/)
  t.regex(r.stderr, /unrecoverable: \/g \(file \d+\) chunk 0 shard 0: no other replica verifies/)
  const st = JSON.parse(await ok(['status', m!.mountpoint, '--json']))
  t.true(st.counters.unrecoverable_reads >= 1)
})
