// DESIGN §5 "One view": a randomized model test through the mount. Three processes each take random steps on
// their own files (write, pwrite at random offsets with descriptors held open, truncate, punch hole,
// fallocate, fsync, close, cp, mv, unlink; test/helpers/copy-model.py); every cp's copy is compared
// with the model at once, so a copy of bytes still in the mount's memory that reads zeros fails here,
// and every fsync must leave size, st_blocks, st_blksize and SEEK answers as they were. Then a
// kill -9 of the mount and a remount: a file fsync'd since its last change reads its bytes, no file
// holds bytes nobody wrote there; then more steps, and every file is compared at the end.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, run, PYTHON, TRANSPORT } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';

const MODEL = path.join(REPO_ROOT, 'test', 'helpers', 'copy-model.py');
const WORKERS = 3;
const STEPS = 300;
/** fuse-native has no fallocate: no punch or fallocate steps there. */
const PUNCH = TRANSPORT !== 'fuse-native' ? '1' : '0';

const shared = sharedMount(test, 'copy-model');

async function model(
  phase: string,
  seed: number,
): Promise<{ ok: boolean; failures: string[]; steps: number; copies: number }> {
  const r = await run(
    PYTHON,
    [
      MODEL,
      phase,
      shared.path('model'),
      path.join(shared.dir, 'state'),
      String(WORKERS),
      String(STEPS),
      String(seed),
      PUNCH,
    ],
    { timeoutMs: 240_000 },
  );
  if (r.code !== 0) throw new Error(`copy-model ${phase} failed (code ${r.code}, signal ${r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

test.serial(
  'random steps by three processes match the model after every cp, across a kill -9 and a remount, and at the end',
  async (t) => {
    const before = await model('run-before-crash', 1);
    t.deepEqual(before.failures, [], 'before the crash');
    t.true(before.copies > 0);
    await shared.mount.kill9();
    await shared.remount();
    const after = await model('run-after-crash', 2);
    t.deepEqual(after.failures, [], 'after the crash, and at the end');
    t.log(`${before.steps + after.steps} steps, ${before.copies + after.copies} copies checked`);
  },
);
