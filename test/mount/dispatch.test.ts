// Who reads FUSE requests on the libfuse3 transport: the JS thread itself, polling /dev/fuse from
// the event loop (native/fuse3/session.cc; libfuse's reader threads were a second mode, removed for
// what it measured, native/fuse3/session.h). Four processes at once read back exactly what they
// wrote, and an unmount while thousands of requests are in flight ends cleanly (no mount, no process
// left, and what was fsync'd reads back after a remount). fuse-native reads requests its own way.
import test from 'ava';
import { tempDir, removeDir, mkfs, mountChunkfs, isMounted, run, sh, shOk, TRANSPORT, PYTHON } from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
const t3 = FUSE3 ? test.serial : test.serial.skip;

/** A mixed workload of 4 processes: create, write, fsync, stat, rename, read back, compare. */
const WORKLOAD = (dir: string): string => `
import os, sys, hashlib, random
from multiprocessing import Pool
def work(w):
    rng = random.Random(w); d = os.path.join(${JSON.stringify(dir)}, 'w%d' % w); os.makedirs(d, exist_ok=True)
    for i in range(150):
        p = os.path.join(d, 'f%d' % i); data = rng.randbytes(rng.choice([10, 5000, 70000, 300000]))
        with open(p, 'wb') as f:
            f.write(data); f.flush(); os.fsync(f.fileno())
        os.stat(p); os.rename(p, p + '.r')
        with open(p + '.r', 'rb') as f:
            if f.read() != data: return 'w%d f%d differs' % (w, i)
    return None
with Pool(4) as pool:
    bad = [r for r in pool.map(work, range(4)) if r]
print(bad[0] if bad else 'ok')
`;

t3('four processes write, fsync, rename and read back exactly', async (t) => {
  const dir = await tempDir('dispatch-');
  t.teardown(() => removeDir(dir));
  await mkfs(dir + '/store');
  const m = await mountChunkfs(dir + '/store', dir + '/mnt');
  t.teardown(() => m.stop());
  const r = await run(PYTHON, ['-c', WORKLOAD(dir + '/mnt')], { timeoutMs: 240_000 });
  t.is(r.code, 0, r.stderr);
  t.is(r.stdout.trim(), 'ok');
});

t3("unmount with thousands of requests in flight ends cleanly; fsync'd files read back after a remount", async (t) => {
  const dir = await tempDir('dispatch-');
  t.teardown(() => removeDir(dir));
  await mkfs(dir + '/store');
  let m = await mountChunkfs(dir + '/store', dir + '/mnt');
  t.teardown(() => m.stop());
  const mnt = dir + '/mnt';
  await shOk(`head -c 3000000 /dev/urandom > ${dir}/ref && cp ${dir}/ref ${mnt}/kept && sync ${mnt}/kept`);
  // Eight clients in a stat and read storm; the unmount comes in the middle of it.
  const storm = sh(
    `for i in 1 2 3 4 5 6 7 8; do (for j in $(seq 3000); do stat ${mnt}/kept >/dev/null 2>&1; cat ${mnt}/kept >/dev/null 2>&1 || true; done) & done; wait`,
    { timeoutMs: 120_000 },
  );
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await m.stop();
  await storm;
  t.false(isMounted(mnt), 'nothing left mounted');
  t.true(m.exited(), 'the mount process ended');
  t.notRegex(m.output(), /Error|Assertion|Segmentation/, 'a clean teardown');
  m = await mountChunkfs(dir + '/store', mnt);
  await shOk(`cmp ${dir}/ref ${mnt}/kept`);
});
