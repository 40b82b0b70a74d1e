// Helpers of the read-grant mount tests (test/mount/read-grants*.test.ts): status and grant
// counters of a shared mount, Python programs of O_DIRECT reads (each one reaches the mount, not
// the kernel's page cache) compared with a reference copy, and damage behind the store's back.
import { ExecutionContext } from 'ava';
import * as fs from 'node:fs';
import { SharedMount, CLI_JS, PYTHON, run, shOk } from './mount';

export interface GrantCounters {
  servedReads: number;
  failedReads: number;
  grantedChunks: number;
}

/**
 * Runs a Python program in a child process with the file's path, the reference copy's path and
 * a seed; it prints one JSON line.
 */
export async function py(program: string, args: string[]): Promise<any> {
  const r = await run(PYTHON, ['-c', program, ...args], { timeoutMs: 120_000 });
  if (r.code !== 0) throw new Error(`python failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');
}

// Random O_DIRECT preads over the file (inside chunks, across chunk boundaries, past the end),
// each compared with the reference; twice over the same offsets (the second pass meets the grants).
// An optional fourth argument: more [offset, length] reads, as JSON.
export const READS = `
import os, sys, json, random
f, ref, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
want = open(ref, 'rb').read()
fd = os.open(f, os.O_RDONLY | os.O_DIRECT)
r = random.Random(seed)
ops = [(r.randrange(0, len(want) + 8192), r.choice([1, 100, 4096, 16384, 65536, 131072])) for _ in range(400)]
ops += [(4 * 1048576 - 5000, 10000), (8 * 1048576 - 1, 2), (len(want) - 10, 4096)]
ops += [tuple(o) for o in json.loads(sys.argv[4] if len(sys.argv) > 4 else '[]')]
bad = 0
for _ in range(2):
    for off, n in ops:
        if os.pread(fd, n, off) != want[off:off + n]: bad += 1
print(json.dumps({'bad': bad, 'reads': 2 * len(ops)}))
`;

// A model run on one file: random writes, truncates and punched holes through one descriptor, each
// followed by O_DIRECT reads of what it touched and of random ranges, compared with the model.
export const MODEL = `
import os, sys, json, random, ctypes
f, ref, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
model = bytearray(open(ref, 'rb').read())
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
w = os.open(f, os.O_RDWR)
rd = os.open(f, os.O_RDONLY | os.O_DIRECT)
r = random.Random(seed)
bad = []
def check(off, n, what):
    got = os.pread(rd, n, off)
    if got != bytes(model[off:off + n]): bad.append(what)
for step in range(300):
    size = len(model)
    for _ in range(3):
        o = r.randrange(0, size + 1); check(o, r.choice([512, 4096, 20000]), 'before %d' % step)
    k = r.random()
    if k < 0.6:
        off = r.randrange(0, size + 1); data = os.urandom(r.choice([1, 700, 4096, 30000]))
        os.pwrite(w, data, off)
        if off + len(data) > len(model): model.extend(b'\\0' * (off + len(data) - len(model)))
        model[off:off + len(data)] = data
        check(off, len(data), 'write %d' % step)
    elif k < 0.75:
        n = max(0, size - r.randrange(0, 200000))
        os.ftruncate(w, n); del model[n:]
        check(max(0, n - 3000), 6000, 'truncate %d' % step)
    elif k < 0.9 and size > 0:
        off = r.randrange(0, size); n = r.randrange(1, 100000)
        if libc.fallocate(w, 3, off, n) != 0: raise OSError(ctypes.get_errno(), 'punch hole')
        end = min(size, off + n); model[off:end] = b'\\0' * (end - off)
        check(off, n, 'punch %d' % step)
    else:
        os.fsync(w)
for off in range(0, len(model), 65536): check(off, 65536, 'final')
print(json.dumps({'bad': bad[:10], 'badCount': len(bad), 'size': len(model)}))
`;

/** What the read-grant tests ask of a shared mount. */
export function grantHelpers(shared: SharedMount) {
  const cli = async (args: string[]): Promise<string> => {
    const r = await run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 });
    if (r.code !== 0) throw new Error(`chunkfs ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const status = async (): Promise<any> => JSON.parse(await cli(['status', shared.mount.mountpoint, '--json']));
  const grants = async (): Promise<GrantCounters> => (await status()).mount.readGrants;

  /** Shard i's file of chunk c of a file in the store (one version: the file was written once). */
  async function shardOf(name: string, c: number, i: number): Promise<string> {
    const ino = fs.statSync(shared.path(name)).ino;
    const found = (
      await shOk(
        `find ${shared.dir}/store/disks -path '*/${ino.toString(16).padStart(16, '0')}.v*/c${c}/${i}.shard' || true`,
      )
    )
      .trim()
      .split('\n')
      .filter(Boolean);
    if (found.length !== 1) throw new Error(`shard ${i} of chunk ${c} of ${name}: ${found.join(', ') || 'none'}`);
    return found[0];
  }

  /** XOR one byte of shard i (default 0) of chunk c of a file at shard file offset atBytes, behind the store's back. */
  async function flipStoredByte(name: string, c: number, atBytes: number, mask: number, i = 0): Promise<void> {
    const fd = fs.openSync(await shardOf(name, c, i), 'r+');
    try {
      const b = Buffer.alloc(1);
      fs.readSync(fd, b, 0, 1, atBytes);
      b[0] ^= mask;
      fs.writeSync(fd, b, 0, 1, atBytes);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** READS over a file (extra: more [offset, length] reads): every read right, most answered from grants, none handed back. */
  async function readsRightFromGrants(
    t: ExecutionContext,
    name: string,
    seed: string,
    extra: Array<[number, number]> = [],
  ): Promise<void> {
    const before = await grants();
    const r = await py(READS, [shared.path(name), `${shared.dir}/ref`, seed, JSON.stringify(extra)]);
    t.is(r.bad, 0, `${r.bad} of ${r.reads} reads differ`);
    const after = await grants();
    t.true(
      after.servedReads - before.servedReads > r.reads / 4,
      `only ${after.servedReads - before.servedReads} of ${r.reads} reads answered from grants`,
    );
    t.is(after.failedReads, before.failedReads);
  }

  return { cli, status, grants, shardOf, flipStoredByte, readsRightFromGrants };
}
