// xfstests generic/615: st_blocks of a file with data is never 0, also while the
// file is overwritten again and again (buffered, O_SYNC, O_DIRECT) and another process stats it:
// bytes on their way to the store still count (fs/core.ts blocksOf). A needle (64 KiB) and a file
// in chunks (1 MiB). Both transports carry it.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, run, PYTHON } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';

const SCRIPT = path.join(REPO_ROOT, 'test', 'helpers', 'blocks-overwrite.py');
const ROUNDS = 150; // per mode

const shared = sharedMount(test, 'blocksow');

for (const sizeBytes of [64 * 1024, 1024 * 1024]) {
  test.serial(`a ${sizeBytes}-byte file never shows 0 blocks while overwritten`, async (t) => {
    const r = await run(PYTHON, [SCRIPT, shared.path(`f${sizeBytes}`), String(sizeBytes), String(ROUNDS)], {
      timeoutMs: 300_000,
    });
    t.is(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { stats: number; zero: number; rounds: number };
    t.is(out.rounds, 3 * ROUNDS);
    t.true(out.stats > 0);
    t.is(out.zero, 0, `${out.zero} of ${out.stats} stats saw st_blocks 0`);
  });
}
