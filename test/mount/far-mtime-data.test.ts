// xfstests generic/634: a file whose mtime lies far from now (before 1677 or
// after 2262, kept in the *_far columns: store/meta/far-times.ts) keeps its bytes. The mtime is set
// while the bytes are still buffered (futimens before close, as tar and cp -a do: the close batch
// commits the bytes with it, fs/write-buffer.ts) and after close (touch -d). Small files are
// needles (store/small/small-files.ts), larger ones chunks. fuse-native carries times as unsigned
// milliseconds, so it refuses times before 1970 (EINVAL, test/mount/posix-details.test.ts): there
// only a far-future time it can carry is checked.
import test from 'ava';
import { sharedMount, run, PYTHON, TRANSPORT } from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
const NS_PER_S = 1_000_000_000n;
const Y1901 = -2177452800n * NS_PER_S + 5n; // 1901-01-01 (xfstests generic/634: inside int64 ns)
const Y1600 = -11676096000n * NS_PER_S + 5n; // 1600-01-01: outside int64 nanoseconds
const Y2446 = 15085152000n * NS_PER_S + 7n; // 2448-01-01 (xfstests generic/634 goes to 2446): outside int64 ns
// Beyond 2^53 s the seconds cross the libfuse3 binding in two parts (native/fuse3/time_split.h):
// the last second of year 2147483647 (generic/634's latest date) and the largest time the kernel has
// (at its limit the kernel zeroes the nanoseconds itself: timestamp_truncate).
const Y2147483647 = 67767976233532799n * NS_PER_S + 999_999_999n;
const S63_MAX = (2n ** 63n - 1n) * NS_PER_S;
const TIMES = FUSE3 ? [Y1901, Y1600, Y2446, Y2147483647, S63_MAX] : [Y2446];
const SIZES = [1000, 64 * 1024, 3 * 1024 * 1024]; // needle, largest needle, chunks

const shared = sharedMount(test, 'farmtime');
const P = shared.path;

// For each case: write a file of seeded bytes; set its mtime before close (futimens) or after.
const WRITE = `
import json, os, random, sys
for name, size, t, before in json.loads(sys.argv[1]):
    data = random.Random(name).randbytes(size)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, data)
    if before: os.utime(fd, ns=(int(t), int(t)))
    os.close(fd)
    if not before: os.utime(name, ns=(int(t), int(t)))
`;
// Each file's bytes match and its mtime is the one set: [name, ok, mtime_ns] or [name, errno name].
const CHECK = `
import json, os, random, sys
out = []
for name, size, t, before in json.loads(sys.argv[1]):
    try:
        ok = open(name, 'rb').read() == random.Random(name).randbytes(size)
        out.append([name, ok, str(os.stat(name).st_mtime_ns)])
    except OSError as e:
        out.append([name, os.strerror(e.errno)])
print(json.dumps(out))
`;

test.serial(
  'files with an mtime far from now keep their bytes and mtime (set before and after close), also after a remount',
  async (t) => {
    const cases: Array<[string, number, string, boolean]> = [];
    for (const size of SIZES) {
      for (const time of TIMES) {
        for (const before of [true, false])
          cases.push([P(`f-${size}-${time}-${before ? 'open' : 'closed'}`), size, time.toString(), before]);
      }
    }
    cases.push([P('near'), 1000, (1_000_000_000n * NS_PER_S).toString(), true]); // a file of the same close batch, near time
    const arg = JSON.stringify(cases);
    const w = await run(PYTHON, ['-c', WRITE, arg], { timeoutMs: 120_000 });
    t.is(w.code, 0, w.stderr);
    const expected = cases.map(([name, , time]) => [name, true, time]);
    for (const pass of ['mounted', 'after a remount']) {
      const c = await run(PYTHON, ['-c', CHECK, arg], { timeoutMs: 120_000 });
      t.is(c.code, 0, c.stderr);
      t.deepEqual(JSON.parse(c.stdout), expected, pass);
      if (pass === 'mounted') await shared.remount();
    }
    t.notRegex(shared.mount.output(), /RangeError|failed/);
  },
);
