// xfstests generic/451: a buffered read that races an asynchronous (AIO) O_DIRECT
// write of the same range must not leave old bytes in the kernel's page cache once the write has
// completed. scripts/test/aio-dio-cycle.py writes a whole file with io_submit (a new byte each round)
// while two processes re-read it buffered, and after each write reads it through a new descriptor.
// Before the fix it read stale bytes within 15 to 132 rounds on fuse3. fuse3 turns the kernel's
// async_dio off (native/fuse3/lowlevel_ops.cc); fuse-native's libfuse 2 never asks for it, so the
// same test runs on both transports.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, run, PYTHON } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';

const CYCLE = path.join(REPO_ROOT, 'scripts', 'test', 'aio-dio-cycle.py');
const FILE_BYTES = 655360; // generic/451's file size
const ROUNDS = 400;
const READERS = 2;

const shared = sharedMount(test, 'aiodio');

test.serial('buffered reads never see old bytes after an AIO O_DIRECT write completed', async (t) => {
  const r = await run(PYTHON, [CYCLE, shared.path('cycle'), String(FILE_BYTES), String(ROUNDS), String(READERS)], {
    timeoutMs: 300_000,
  });
  t.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { rounds: number; stale: unknown };
  t.is(out.stale, null, `stale read: ${JSON.stringify(out.stale)}`);
  t.is(out.rounds, ROUNDS);
});
