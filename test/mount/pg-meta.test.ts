// A mounted store with its metadata on PostgreSQL (issue 22, DESIGN §9), through the same path users
// take: `chunkfs mkfs --meta`, the mount, cp and tar; then kill -9 of the mount during fsync'd writes
// and a remount: every fsync-acknowledged record is there (DESIGN §5 on PostgreSQL: the commit point
// at fsync, store/meta/pg-commit-point.ts). The cluster is a throwaway one (test/helpers/pg-cluster.ts).
import test from 'ava'
import * as path from 'node:path'
import { spawn } from 'node:child_process'
import { storeFixture, mkfs, run, shOk, chunkfsOk, PYTHON } from '../helpers/mount'
import { REPO_ROOT } from '../helpers/root'
import { PgCluster, pgUnavailableReason, startPgCluster } from '../helpers/pg-cluster'

const RECORD_BYTES = 4096
const RECORDS_MAX = 100_000
const ACKS_BEFORE_KILL = 60
const WRITER_WAIT_MS = 120_000
const unavailable = pgUnavailableReason()

let cluster: PgCluster | null = null
const fixture = storeFixture(test, 'pgmeta', { mkfs: false })
test.after.always(() => cluster?.stop())

if (unavailable !== null) {
  test('PostgreSQL mount tests skipped', (t) => { t.log(`skipped: ${unavailable}`); t.pass() })
} else {
  test.serial('cp and tar round trip on a store whose metadata is on PostgreSQL', async (t) => {
    cluster = startPgCluster()
    await mkfs(fixture.store, ['--disks', '4', '--layout', 'replica:2', '--meta', cluster.createDatabase('mounted')])
    const m = await fixture.mount()
    // chunkfs status (through the mount's control socket): the engine, and the mount holding the lease.
    const status = await chunkfsOk(['status', fixture.store])
    t.regex(status, new RegExp(`metadata: postgres postgresql:///mounted\\?host=.*; lease: \\S+ pid ${m.child.pid} \\(mount `))
    const src = path.join(REPO_ROOT, 'store')
    await shOk(`cp -a ${src} ${m.mountpoint}/cp && mkdir ${m.mountpoint}/tar && tar -C ${src} -cf - . | tar -C ${m.mountpoint}/tar -xf -`)
    await shOk(`diff -r ${src} ${m.mountpoint}/cp && diff -r ${src} ${m.mountpoint}/tar`)
    const names = await shOk(`cd ${m.mountpoint}/tar && find . | sort | md5sum && cd ${src} && find . | sort | md5sum`)
    const [a, b] = names.trim().split('\n')
    t.is(a, b, 'the same names')
    await m.stop()
    const again = await fixture.mount()
    await shOk(`diff -r ${src} ${again.mountpoint}/cp`)
    await again.stop()
    t.pass()
  })

  test.serial('kill -9 during fsync\'d writes, remount: every acknowledged record is there', async (t) => {
    const m = await fixture.mount()
    const file = path.join(m.mountpoint, 'log.bin')
    // Record i is (%08d % i) repeated; "ack i" after its fsync returned.
    const child = spawn(PYTHON, ['-c', `
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for i in range(${RECORDS_MAX}):
    os.pwrite(fd, (b'%08d' % i) * ${RECORD_BYTES / 8}, i * ${RECORD_BYTES})
    os.fsync(fd)
    print('ack', i, flush=True)
`, file], { stdio: ['ignore', 'pipe', 'ignore'] })
    let acked = -1
    let killed: Promise<void> | null = null
    child.stdout.on('data', (b: Buffer) => {
      for (const mm of b.toString().matchAll(/ack (\d+)/g)) acked = Math.max(acked, Number(mm[1]))
      if (acked >= ACKS_BEFORE_KILL && killed === null) killed = m.kill9()
    })
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error('writer did not stop')) }, WRITER_WAIT_MS)
      child.on('exit', () => { clearTimeout(timer); resolve() })
    })
    await killed
    t.true(acked >= ACKS_BEFORE_KILL, `acks ${acked}`)
    const again = await fixture.mount()
    const r = await run(PYTHON, ['-c', `
import sys
data = open(sys.argv[1], 'rb').read()
bad = [i for i in range(int(sys.argv[2]) + 1) if data[i*${RECORD_BYTES}:(i+1)*${RECORD_BYTES}] != (b'%08d' % i) * ${RECORD_BYTES / 8}]
print(len(bad), bad[:5])
`, path.join(again.mountpoint, 'log.bin'), String(acked)], { timeoutMs: 60_000 })
    t.is(r.stdout.trim(), '0 []', r.stderr)
  })
}
