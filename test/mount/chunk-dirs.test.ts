// Whole-chunk directories through a real mount (DESIGN §5 "Whole-chunk directories"): the mount,
// traced by strace (mkdir), writes a new 64 MiB file and rewrites it (new versions of every chunk).
// Each shard's chunk directory (spec §7) is made by exactly one mkdir that succeeds: the chunks of a
// batch wait for one mkdir of their new version directory instead of each failing on it first
// (ENOENT) and making it again (EEXIST).
import test from 'ava';
import * as path from 'node:path';
import { ChildProcess, spawnSync } from 'node:child_process';
import { storeFixture, run, PYTHON } from '../helpers/mount';
import { straceAttach, straceDetach, straceEvents } from '../helpers/strace';

let tracer: ChildProcess | undefined;
const CHUNKS = 16; // of 4 MiB, the default chunk size
const REPLICAS = 3; // replica:3, the default layout
const WRITES = 2; // the new file, then the rewrite of every chunk

const fixture = storeFixture(test, 'chunk-dirs', {
  beforeStop: () => {
    if (tracer !== undefined && tracer.exitCode === null) tracer.kill('SIGINT');
  },
});

// Random bytes (zeros would be holes of the shard files), 1 MiB per write, fsync'd at the end.
const WRITE = `
import os, sys
p, mib, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(p, mode) as f:
    for _ in range(mib):
        f.write(os.urandom(1 << 20))
    f.flush(); os.fsync(f.fileno())
`;

test.serial(
  'each chunk directory is made by one mkdir; no mkdir fails on a version directory made meanwhile',
  async (t) => {
    t.is(spawnSync('strace', ['-V']).status, 0, 'strace is needed (scripts/setup-test.sh installs it)');
    const m = await fixture.mount();
    const trace = path.join(fixture.dir, 'mount.trace');
    const file = path.join(m.mountpoint, 'big');
    tracer = await straceAttach(m.child.pid!, trace, 'mkdir,mkdirat');
    for (const mode of ['wb', 'r+b']) {
      const w = await run(PYTHON, ['-c', WRITE, file, String(CHUNKS * 4), mode], { timeoutMs: 300_000 });
      t.is(w.code, 0, w.stderr);
    }
    await straceDetach(tracer); // the mount goes on
    await m.stop();

    // Each call once, finished or not (strace -f splits a call that another thread interrupts).
    const calls = straceEvents(trace).flatMap((e) => {
      const mm = /^mkdir(?:at)?\((?:[^,"]+, )?"([^"]+)"/.exec(e.line);
      return mm === null ? [] : [mm[1]];
    });
    const callsOf = (re: RegExp): Map<string, number> => {
      const n = new Map<string, number>();
      for (const dir of calls.filter((d) => re.test(d))) n.set(dir, (n.get(dir) ?? 0) + 1);
      return n;
    };
    const chunkDirs = callsOf(/\.v\d+\/c\d+$/);
    t.is(chunkDirs.size, CHUNKS * REPLICAS * WRITES, 'a chunk directory per shard of every version written');
    t.deepEqual(
      [...chunkDirs].filter(([, n]) => n !== 1).slice(0, 5),
      [],
      'each chunk directory made by one mkdir (none failed first for want of its version directory)',
    );
    const versionDirs = callsOf(/\.v\d+$/);
    t.true(versionDirs.size >= 1, 'version directories were made');
    t.deepEqual(
      [...versionDirs].filter(([, n]) => n > 2).slice(0, 5),
      [],
      'each version directory made once for all its chunks (a second call only after its new fan-out directories)',
    );
  },
);
