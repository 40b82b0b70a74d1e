// Model-based random test: one seeded random sequence of operations (create, write at random offsets,
// truncate, rename, link, unlink, mkdir, rmdir, symlink, chmod, utimens, xattrs) is applied to the mount
// and to a plain directory; every op's result (value or errno) and the whole tree (contents and
// metadata) are compared after each step. Seeds: CHUNKFS_MODEL_SEEDS="1,2" (default below).
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, fsClient, ClientOp, shOk } from '../helpers/mount';

const STEPS = Number(process.env.CHUNKFS_MODEL_STEPS ?? 150);
const SEEDS = (process.env.CHUNKFS_MODEL_SEEDS ?? '11,23').split(',').map(Number);
const OLD_TIME_NS_MAX = 1e18; // explicit times are set before 2001; anything later came from "now"

const shared = sharedMount(test, 'model', {
  mkfs: ['--disks', '6', '--layout', 'replica:3', '--chunk-size', '256K'],
  mountArgs: ['-o', 'buffer_mb=2,flush_ms=200'],
});

/** mulberry32: small, seedable, good enough to pick operations. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Step = ClientOp[]; // relative paths, prefixed with '@/' and resolved per side

function generate(seed: number, steps: number): Step[] {
  const r = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const int = (n: number): number => Math.floor(r() * n);
  const dirs = ['', 'd1', 'd2', 'd1/e'];
  const names = ['a', 'b', 'c', 'd1', 'd2', 'e'];
  const p = (): string => '@/' + path.posix.join(pick(dirs), pick(names));
  const out: Step[] = [];
  let seedN = seed * 100_000;
  for (let i = 0; i < steps; i++) {
    const k = int(14);
    const len = pick([1, 100, 4096, 5000, 70_000, 300_000]);
    const off = pick([0, 1, 4095, 16_384, 250_000, 262_144, 600_000]);
    switch (k) {
      case 0:
      case 1:
      case 2: {
        const f = p();
        out.push([
          ['open', 'f', f, ['creat', 'wronly'], 0o644],
          ['pwrite', 'f', off, { seed: seedN++, len }],
          ['close', 'f'],
        ]);
        break;
      }
      case 3:
        out.push([['truncate', p(), pick([0, 10, 5000, 262_144, 400_000])]]);
        break;
      case 4:
        out.push([['rename', p(), p()]]);
        break;
      case 5:
        out.push([['link', p(), p()]]);
        break;
      case 6:
        out.push([['unlink', p()]]);
        break;
      case 7:
        out.push([['mkdir', '@/' + pick(dirs.slice(1)), 0o755]]);
        break;
      case 8:
        out.push([['rmdir', p()]]);
        break;
      case 9:
        out.push([['chmod', p(), pick([0o600, 0o644, 0o755, 0o700, 0o640])]]);
        break;
      case 10:
        out.push([['utime', p(), 900_000_000_000_000_000 + int(1e9), 800_000_000_000_000_000 + int(1e9) * 1000]]);
        break;
      case 11:
        out.push([['setxattr', p(), pick(['user.k0', 'user.k1']), pick(['v', 'value-2', ''])]]);
        break;
      case 12:
        out.push([['removexattr', p(), pick(['user.k0', 'user.k1'])]]);
        break;
      default:
        out.push([['symlink', pick(['a', '../b', 'd1/c']), p()]]);
        break;
    }
  }
  return out;
}

function resolve(step: Step, root: string): ClientOp[] {
  return step.map(
    (op) => op.map((x) => (typeof x === 'string' && x.startsWith('@/') ? path.join(root, x.slice(2)) : x)) as ClientOp,
  );
}

interface Entry {
  path: string;
  kind: string;
  mtime_ns: number;
  [k: string]: unknown;
}

function comparable(entries: Entry[], startNs: number): unknown[] {
  // Times set by utimens are exact; times set by "now" differ between the two trees, so only check
  // that both are recent. Directory mtimes move with every entry change: same rule.
  return entries.map((e) => ({
    ...e,
    mtime_ns: e.mtime_ns < OLD_TIME_NS_MAX ? e.mtime_ns : e.mtime_ns >= startNs - 5e9 ? 'recent' : e.mtime_ns,
  }));
}

for (const seed of SEEDS) {
  test.serial(`seed ${seed}: mount matches a plain directory after every step`, async (t) => {
    const mountRoot = path.join(shared.mount.mountpoint, `seed${seed}`);
    const plainRoot = path.join(shared.dir, `plain${seed}`);
    await shOk(`mkdir -p ${mountRoot} ${plainRoot}`);
    const steps = generate(seed, STEPS);
    const startNs = Date.now() * 1e6;
    const program = (root: string): ClientOp[] =>
      steps.flatMap((s) => [...resolve(s, root), ['snapshot', root] as ClientOp]);
    const [onMount, onPlain] = await Promise.all([
      fsClient(program(mountRoot), { timeoutMs: 240_000 }),
      fsClient(program(plainRoot), { timeoutMs: 240_000 }),
    ]);
    t.is(onMount.length, onPlain.length);
    let at = 0;
    for (let i = 0; i < steps.length; i++) {
      const n = steps[i].length;
      const what = `seed ${seed} step ${i}: ${JSON.stringify(steps[i])}`;
      for (let j = 0; j < n; j++) {
        const a = onMount[at + j];
        const b = onPlain[at + j];
        if (JSON.stringify(a) !== JSON.stringify(b)) {
          t.deepEqual(a, b, what);
          return;
        }
      }
      const snapA = comparable(onMount[at + n].ok as Entry[], startNs);
      const snapB = comparable(onPlain[at + n].ok as Entry[], startNs);
      if (JSON.stringify(snapA) !== JSON.stringify(snapB)) {
        t.deepEqual(snapA, snapB, what);
        return;
      }
      at += n + 1;
    }
    t.pass();
  });
}
