// Space under stress, on a real mount on the pass's transport: several client
// processes create, write, append, truncate, rename, unlink and rewrite small files at random for a
// few seconds (test/helpers/stress.py); once they stop, the store's disks must come down to at most
// 3.3x the live logical bytes (replica:3 plus 10%) plus a fixed slack, within a generous time.
// Before the fix the dead needles of the open small-file container stayed until it filled (256 MiB):
// their space was never given back while the container stayed open.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, PYTHON, run, shOk } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';

const STRESS = path.join(REPO_ROOT, 'test', 'helpers', 'stress.py');
const WORKERS = 4;
const STRESS_SECONDS = 15;
const STRESS_BYTES_MAX = 1 << 30;
/** replica:3 stores each live byte three times; 10% for shard headers, hash tables and block rounding. */
const STORED_PER_LIVE_MAX = 3.3;
/**
 * Directories of the shard fan-out (spec §7: 256 x 256 per disk at most, 4 KiB each) and the
 * compaction threshold (store/small/compactor.ts COMPACT_DEAD_BYTES_MIN, 4 MiB x 3 replicas).
 */
const SLACK_BYTES = 32 << 20;
/** Polls of 1 s for reclaim and compaction to catch up (each runs at least once a second when busy). */
const SETTLE_POLLS_MAX = 90;

const shared = sharedMount(test, 'space');

/** Bytes the disk directories take (allocated blocks, directories included). */
async function storedBytes(): Promise<number> {
  return Number((await shOk(`du -sk ${shared.dir}/store/disks | cut -f1`)).trim()) * 1024;
}

/** Logical bytes of the files in the mount: what they hold, at most their size (holes are not data). */
async function liveBytes(): Promise<number> {
  const script = `import os,sys
t=0
for r,ds,fs in os.walk(sys.argv[1]):
    for f in fs:
        s=os.lstat(os.path.join(r,f)); t+=min(s.st_size, s.st_blocks*512)
print(t)`;
  return Number((await shOk(`${PYTHON} -c '${script}' ${shared.mount.mountpoint}`)).trim());
}

test.serial(
  'after a multi-process stress stops, the disks hold at most 3.3x the live bytes plus a fixed slack',
  async (t) => {
    await shOk(`mkdir ${shared.mount.mountpoint}/d`);
    const r = await run(
      PYTHON,
      [STRESS, `${shared.mount.mountpoint}/d`, String(WORKERS), String(STRESS_SECONDS), String(STRESS_BYTES_MAX), '15'],
      { timeoutMs: 120_000 },
    );
    t.is(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { writtenBytes: number; ops: Record<string, number> };
    t.log(`stress: ${(report.writtenBytes / 2 ** 20).toFixed(0)} MiB written, ops ${JSON.stringify(report.ops)}`);
    let stored = 0;
    let live = 0;
    let bound = 0;
    for (let poll = 0; poll < SETTLE_POLLS_MAX; poll++) {
      live = await liveBytes();
      stored = await storedBytes();
      bound = STORED_PER_LIVE_MAX * live + SLACK_BYTES;
      if (poll === 0)
        t.log(
          `right after the stress: ${(stored / 2 ** 20).toFixed(1)} MiB stored for ${(live / 2 ** 20).toFixed(1)} MiB live`,
        );
      if (stored <= bound) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    t.log(
      `settled: ${(stored / 2 ** 20).toFixed(1)} MiB stored for ${(live / 2 ** 20).toFixed(1)} MiB live (bound ${(bound / 2 ** 20).toFixed(1)} MiB)`,
    );
    t.true(report.writtenBytes > 8 * live, 'the stress wrote many times what stays');
    t.true(
      stored <= bound,
      `${stored} bytes stored for ${live} live bytes: over ${STORED_PER_LIVE_MAX}x + ${SLACK_BYTES}`,
    );
  },
);
