// Issue 24 item 2 (xfstests generic/451): a buffered read after an asynchronous O_DIRECT write
// completed sees the written bytes, even while other processes re-read the file buffered. The kernel
// does not drop the pages such a reader cached during an AIO direct write; the libfuse3 transport
// answers a write through an O_DIRECT handle only after dropping them (fs/fuse/page-drops.ts).
// fuse-native (libfuse 2) has no such drop: there the test only runs the writer.
import test from 'ava'
import * as path from 'node:path'
import { sharedMount, run, PYTHON, TRANSPORT } from '../helpers/mount'
import { REPO_ROOT } from '../helpers/root'

const FUSE3 = TRANSPORT !== 'fuse-native'
const shared = sharedMount(test, 'directio')
const CYCLE = path.join(REPO_ROOT, 'test', 'helpers', 'aio-dio-cycle.py')
const FILE_BYTES = 655360 // generic/451's file
const ROUNDS = 500 // the old code read stale bytes within 15-132 rounds (3 runs)
const READERS = 2

test('buffered reads after AIO O_DIRECT writes see the new bytes while others read the file', async (t) => {
  const r = await run(PYTHON, [CYCLE, path.join(shared.mount.mountpoint, 'aio-dio'), String(FILE_BYTES), String(ROUNDS), String(READERS)])
  t.is(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  if (!FUSE3) { t.true(out.rounds >= 1); return }
  t.is(out.stale, null)
  t.is(out.rounds, ROUNDS)
})
