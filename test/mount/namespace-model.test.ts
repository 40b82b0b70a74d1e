// Randomized model test of namespace operations through a real mount, from several processes, with a
// kill -9 in the middle (DESIGN §5 "What is durable when"). WORKERS client processes (test/helpers/
// fsclient.py --serve), each drawing its operations from its own seeded generator, take turns: create
// (open O_CREAT|O_TRUNC, write, close), link, rename (plain, RENAME_NOREPLACE, RENAME_EXCHANGE), unlink,
// chmod, utimens, mkdir, rmdir and an fsync of a file or directory. Each operation runs on the mount,
// through the mount point or a second mount of the store (a bind of the first, one FUSE connection),
// and on the model: a directory of the local file system, so the kernel's own rules (errno and their
// order included) are the reference. After every step the tree is read through the other mount point
// than the change went through (the kernel's cached attributes and names must follow) and compared
// with the model's: names, kinds, permission bits, link counts, which names share an inode, times set
// by utimens, sizes and contents. In the middle, right after an fsync, a few more steps, then kill -9
// of the mount, fusermount3 -uz, remount: the tree must be one the model went through at or after
// the fsync'd step (a file's bytes not fsync'd may be a prefix: DESIGN §5 prefix rule). Run twice:
// with the default metadata groups, and with groups of 5 s (DESIGN §5 "Group commit"), where the
// steps after the fsync are in the open group. fuse-native: no rename flags (libfuse 2).
// Seed: CHUNKFS_NSMODEL_SEED (printed with every failure).
import test, { ExecutionContext } from 'ava';
import { spawn, ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  storeFixture,
  mkfs,
  ChunkfsMount,
  ClientOp,
  ClientResult,
  PYTHON,
  TRANSPORT,
  isMounted,
  run,
  shOk,
} from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';
import { testMetaEngine } from '../helpers/pg-meta';
import { configOf, writeConfig } from '../helpers/meta-swap';

const SEED = Number(process.env.CHUNKFS_NSMODEL_SEED ?? 20261207);
const WORKERS = 3;
/** fuse-native (libfuse 2: no attribute cache, slower requests) takes several times longer per step. */
const STEPS = TRANSPORT === 'fuse-native' ? 300 : 1000;
/** The crash comes this many steps after the fsync that precedes it, at most. */
const STEPS_AFTER_FSYNC_MAX = 6;
/** Times set by utimens are before 2001; anything later came from "now" and differs between the two trees. */
const OLD_TIME_NS_MAX = 1e18;
const OP_TIMEOUT_MS = 30_000;
/** Waits for the processes of a stopped mount to end (100 ms apart: 10 s). */
const GONE_WAITS_MAX = 100;
const GONE_WAIT_MS = 100;
const FSCLIENT = path.join(REPO_ROOT, 'test', 'helpers', 'fsclient.py');
const NAMES = ['a', 'b', 'c', 'f', 'g'];
/** libfuse 2 (fuse-native) speaks a protocol without rename flags: the kernel refuses them there (posix.test.ts). */
const RENAME_FLAGS = TRANSPORT !== 'fuse-native';
const MODES = [0o600, 0o644, 0o755, 0o700, 0o640, 0o444];

const fixture = storeFixture(test, 'nsmodel', { mkfs: false });

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

/** One client process that lives across the steps: one op per line in, one result per line out. */
class Client {
  private readonly child: ChildProcess;
  private readonly waiting: Array<(r: ClientResult | Error) => void> = [];
  private buf = '';
  private stderr = '';
  constructor(readonly name: string) {
    this.child = spawn(PYTHON, [FSCLIENT, '--serve'], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (b: Buffer) => {
      this.buf += b.toString();
      let nl;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        this.waiting.shift()?.(JSON.parse(line) as ClientResult);
      }
    });
    this.child.stderr!.on('data', (b: Buffer) => (this.stderr += b.toString()));
    this.child.on('exit', (code, signal) => {
      const err = new Error(`client ${name} ended (code ${code}, signal ${signal}): ${this.stderr}`);
      for (const w of this.waiting.splice(0)) w(err);
    });
  }

  call(op: ClientOp): Promise<ClientResult> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        reject(new Error(`client ${this.name}: no answer to ${JSON.stringify(op)} in ${OP_TIMEOUT_MS} ms`));
      }, OP_TIMEOUT_MS);
      this.waiting.push((r) => {
        clearTimeout(timer);
        if (r instanceof Error) reject(r);
        else resolve(r);
      });
      this.child.stdin!.write(JSON.stringify(op) + '\n');
    });
  }

  async ok(op: ClientOp): Promise<any> {
    const r = await this.call(op);
    if (r.err !== undefined) throw new Error(`client ${this.name}: ${JSON.stringify(op)}: ${r.err}`);
    return r.ok;
  }

  /** Ends the process (stdin closed, SIGKILL if it lingers) and waits for it. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const gone = new Promise((resolve) => this.child.on('exit', resolve));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }
}

/** An operation with paths relative to the tree's root, written '@/...'. */
type Op = ClientOp;

/**
 * One worker's operation generator: its own stream of choices from its own seed. Paths: mostly a
 * name that exists (a source) or a new name in a directory that exists (a target), else any path
 * of up to three names, so that every error path (ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR,
 * EINVAL) is taken too.
 */
function generator(seed: number, content: () => string): (tree: Entry[]) => Op {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const any = (): string => {
    const depth = r() < 0.5 ? 1 : r() < 0.8 ? 2 : 3;
    return '@/' + Array.from({ length: depth }, () => pick(NAMES)).join('/');
  };
  return (tree) => {
    const dirs = ['', ...tree.filter((e) => e.kind === 'dir').map((e) => e.path)];
    const src = (): string => (tree.length > 0 && r() < 0.7 ? '@/' + pick(tree).path : any());
    const dst = (): string => (r() < 0.7 ? '@/' + path.posix.join(pick(dirs), pick(NAMES)) : any());
    const k = r();
    if (k < 0.16) return ['writefile', dst(), content()];
    if (k < 0.24) return ['link', src(), dst()];
    if (k < 0.38) return ['rename', src(), dst()];
    if (k < 0.44) return RENAME_FLAGS ? ['renameat2', src(), dst(), ['noreplace']] : ['rename', src(), dst()];
    if (k < 0.5) return RENAME_FLAGS ? ['renameat2', src(), src(), ['exchange']] : ['rename', src(), src()];
    if (k < 0.6) return ['unlink', src()];
    if (k < 0.7) return ['chmod', src(), pick(MODES)];
    if (k < 0.77) return ['utime', src(), 900_000_000_000_000_000 + Math.floor(r() * 1e9), 800_000_000_123_456_789];
    if (k < 0.87) return ['mkdir', dst(), pick([0o755, 0o700, 0o750])];
    if (k < 0.97) return ['rmdir', src()];
    // fsync of something that exists (a file or a directory), so that it marks a point
    return ['fsyncpath', tree.length === 0 ? '@/' : '@/' + pick(tree).path];
  };
}

function resolved(op: Op, root: string): ClientOp {
  return op.map((x) => (typeof x === 'string' && x.startsWith('@/') ? path.join(root, x.slice(2)) : x)) as ClientOp;
}

interface Entry {
  path: string;
  kind: string;
  perm: number;
  nlink: number;
  ino: number;
  mtime_ns: number;
  size?: number;
  sha256?: string;
  /** A small file's bytes (latin-1). */
  data?: string;
}

/** An entry as compared: Entry with the inode number replaced by the first name of its inode. */
type Seen = Omit<Entry, 'ino' | 'mtime_ns'> & { ino: string | undefined; mtime_ns: number | 'now' };

/**
 * A tree as compared: inode numbers become the first name of each inode (the two trees number
 * inodes differently), times from "now" become 'now', a directory's size is left out (its own
 * rule on each file system).
 */
function comparable(entries: Entry[]): Seen[] {
  const firstName = new Map<number, string>();
  for (const e of entries) if (!firstName.has(e.ino)) firstName.set(e.ino, e.path);
  return entries.map((e) => ({
    ...e,
    ino: firstName.get(e.ino),
    mtime_ns: e.mtime_ns < OLD_TIME_NS_MAX ? e.mtime_ns : 'now',
  }));
}

/**
 * Whether the tree a remount shows after kill -9 is the model's state: the namespace exactly, a
 * file's bytes a prefix of the model's (DESIGN §5 prefix rule: bytes written but not fsync'd may be
 * lost with the mount process, and the times they carried with them).
 */
function crashMatches(after: Seen[], state: Seen[]): boolean {
  if (after.length !== state.length) return false;
  return after.every((a, i) => {
    const m = state[i];
    if (a.data === m.data || a.data === undefined || m.data === undefined || !m.data.startsWith(a.data))
      return JSON.stringify(a) === JSON.stringify(m);
    const { data: _ad, size: _as, mtime_ns: _at, ...restA } = a;
    const { data: _md, size: _ms, mtime_ns: _mt, ...restM } = m;
    return a.size === a.data.length && JSON.stringify(restA) === JSON.stringify(restM);
  });
}

/** Processes whose command line names dir (the mount, its helpers, clients): none may be left. */
function processesNaming(dir: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((e) => /^[0-9]+$/.test(e))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(dir) && Number(pid) !== process.pid) out.push(`${pid}: ${cmd}`);
    } catch {
      /* ended meanwhile */
    }
  }
  return out;
}

/**
 * The whole run on a new store in fixture.dir/name whose metadata groups last groupMs (chunkfs.json
 * metaGroupMs; undefined: the default).
 */
async function modelRun(t: ExecutionContext, name: string, groupMs: number | undefined): Promise<void> {
  const dir = path.join(fixture.dir, name);
  const store = dir + '/store';
  const m1 = dir + '/m1';
  const m2 = dir + '/m2';
  const model = dir + '/model/ns';
  await mkfs(store);
  if (groupMs !== undefined) {
    const config = configOf(store);
    writeConfig(store, { ...config, defaults: { ...config.defaults, metaGroupMs: groupMs } });
  }
  const clients = Array.from({ length: WORKERS }, (_, w) => new Client(`w${w}`));
  t.teardown(async () => {
    for (const c of clients) await c.stop();
  });
  const mountBoth = async (): Promise<ChunkfsMount> => {
    const first = await fixture.mountAt(store, m1);
    await fixture.mountAt(store, m2); // a bind of m1 (one FUSE connection)
    return first;
  };
  let first = await mountBoth();
  await shOk(`mkdir -p ${model} ${m1}/ns`);
  const master = rng(SEED);
  let contentNo = 0;
  const gens = clients.map((_, w) =>
    generator(SEED * 31 + w, () => `w${w}-${contentNo++}`.repeat(1 + (contentNo % 5))),
  );
  const where = (step: number, w: number, op: Op, via: string): string =>
    `seed ${SEED} (CHUNKFS_NSMODEL_SEED) step ${step}, worker ${w} through ${path.basename(via)}: ` +
    JSON.stringify(op);

  const crashAfter = STEPS / 2;
  let states: Seen[][] = []; // the model's trees since the last fsync, oldest first
  let modelTree: Entry[] = [];
  let crashAt = -1;
  const succeeded = new Map<string, number>();
  for (let step = 0; step < STEPS; step++) {
    const w = Math.floor(master() * WORKERS);
    const c = clients[w];
    const [via, other] = master() < 0.5 ? [m1, m2] : [m2, m1];
    let op = gens[w](modelTree);
    if (step === crashAfter) op = ['fsyncpath', '@/' + (modelTree.find((e) => e.kind === 'file')?.path ?? '')];
    const onMount = await c.call(resolved(op, via + '/ns'));
    const onModel = await c.call(resolved(op, model));
    if (JSON.stringify(onMount) !== JSON.stringify(onModel)) {
      t.deepEqual(onMount, onModel, `${where(step, w, op, via)}: result`);
      return;
    }
    if (onMount.err === undefined) succeeded.set(String(op[0]), (succeeded.get(String(op[0])) ?? 0) + 1);
    // Read by the next worker, through the other mount point than the change went through.
    const reader = clients[(w + 1) % WORKERS];
    const seen = (await reader.ok(['tree', other + '/ns'])) as Entry[];
    modelTree = (await reader.ok(['tree', model])) as Entry[];
    const want = comparable(modelTree);
    if (JSON.stringify(comparable(seen)) !== JSON.stringify(want)) {
      t.deepEqual(comparable(seen), want, `${where(step, w, op, via)}: tree through ${other}`);
      return;
    }
    if (op[0] === 'fsyncpath') states = [];
    states.push(want);
    if (step === crashAfter) crashAt = step + 1 + Math.floor(master() * STEPS_AFTER_FSYNC_MAX);
    if (step !== crashAt) continue;

    // kill -9 of the mount after the fsync and a few steps more; every mount point of it is cleared.
    await first.kill9();
    for (const mp of [m2, m1]) if (isMounted(mp)) await run('fusermount3', ['-uz', mp], { timeoutMs: 10_000 });
    first = await mountBoth();
    const afterRead = await clients[0].call(['tree', m1 + '/ns']);
    if (afterRead.err !== undefined) {
      t.fail(`seed ${SEED}: after kill -9 at step ${step}, the tree's root reads as ${afterRead.err}`);
      return;
    }
    const after = afterRead.ok as Entry[];
    let found = states.length - 1;
    while (found >= 0 && !crashMatches(comparable(after), states[found])) found--;
    t.log(
      `seed ${SEED}: kill -9 at step ${step}, ${states.length - 1} steps after an fsync; remounted at state ${found}`,
    );
    if (found < 0) {
      t.deepEqual(
        comparable(after),
        states[states.length - 1],
        `seed ${SEED}: after kill -9 at step ${step}, the tree is no state the model went through ` +
          `since the fsync ${states.length - 1} steps before`,
      );
      return;
    }
    // The model goes on from the state the mount came back with.
    await shOk(`rm -rf ${model} && cp -a ${m1}/ns ${model}`);
    modelTree = (await clients[0].ok(['tree', model])) as Entry[];
    t.deepEqual(comparable(modelTree), comparable(after), 'the model copied from the remounted tree');
  }
  t.true(crashAt > 0 && crashAt < STEPS, `the crash happened (step ${crashAt})`);
  t.log(`seed ${SEED}: operations that succeeded: ${JSON.stringify([...succeeded])}`);
  if (!RENAME_FLAGS) t.log('fuse-native: no RENAME_NOREPLACE or RENAME_EXCHANGE (libfuse 2 has no rename flags)');
  t.true(modelTree.length > 3, `the tree grew (${modelTree.length} entries)`);
  await fixture.stopAll();
  for (const c of clients) await c.stop();
  // fusermount3's auto_unmount helper ends right after the unmount: give it a moment.
  for (let i = 0; i < GONE_WAITS_MAX && processesNaming(dir).length > 0; i++) await sleep(GONE_WAIT_MS);
  t.deepEqual(processesNaming(dir), [], 'no process of the test is left');
}

test.serial("namespace operations from several processes match the model; a kill -9 keeps the fsync'd state", (t) =>
  modelRun(t, 'default', undefined),
);

// Groups of up to 5 s: the steps between the fsync and the kill are in the open group, so the tree
// after the remount is the fsync's only if fsync committed the group, and the checks between steps
// read the group's uncommitted changes (and the savepoints of failed operations rolled back in it).
// PostgreSQL has no metadata groups (each operation commits, DESIGN §9 "Commit point"): there the run
// would repeat the one above step for step.
const groupsTest = testMetaEngine() === 'postgres' ? test.serial.skip : test.serial;
groupsTest('the same with metadata groups of 5 s: fsync commits the group; kill -9 loses at most the open one', (t) =>
  modelRun(t, 'long-groups', 5000),
);
