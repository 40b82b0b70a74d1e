// Harness for mounted tests. The test process never serves the mount it touches (a synchronous call
// from the serving process into its own FUSE mount deadlocks): the mount runs in a CHILD process, and
// clients run as further children with async exec and a timeout. Every mount is unmounted and its
// child killed, even on failure: callers register `teardown` (t.teardown / test.after.always), and a
// process 'exit' hook does `fusermount -uz` for anything still registered.
import { spawn, execFile, execFileSync, ChildProcess } from 'node:child_process';
import { promises as fsp, readFileSync, readdirSync, mkdirSync, existsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestFn } from 'ava';
import { REPO_ROOT } from './root';
import { testDatabase, testMetaEngine } from './pg-meta';

export const CLI_JS = path.join(REPO_ROOT, 'dist', 'cli', 'cli.js');
export const NOBODY_UID = 65534;
export const NOBODY_GID = 65534;

const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;
const OUTPUT_KEEP_BYTES = 64 * 1024;

export interface RunResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}
export interface RunOptions {
  timeoutMs?: number;
  cwd?: string;
  input?: string | Buffer;
  /** run as this uid/gid (setpriv), e.g. NOBODY_UID */
  asUid?: number;
  asGid?: number;
  env?: NodeJS.ProcessEnv;
}

/** Run a command as a child process (async, with a timeout). Never throws on a non-zero exit. */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  let file = cmd;
  let argv = args;
  if (opts.asUid !== undefined) {
    const gid = opts.asGid ?? opts.asUid;
    file = 'setpriv';
    argv = [`--reuid=${opts.asUid}`, `--regid=${gid}`, '--clear-groups', '--', cmd, ...args];
  }
  return new Promise((resolve) => {
    const child = execFile(
      file,
      argv,
      {
        timeout: opts.timeoutMs ?? 60_000,
        killSignal: 'SIGKILL',
        cwd: opts.cwd,
        maxBuffer: 64 * 1024 * 1024,
        env: opts.env ?? process.env,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { code?: number | string; signal?: string }) | null;
        const code = e === null ? 0 : typeof e.code === 'number' ? e.code : null;
        resolve({ code, signal: e?.signal ?? null, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/** Polls of `chunkfs status` while waiting for the reclaim queue to drain (100 ms apart: a minute). */
const BACKLOG_WAITS_MAX = 600;
const BACKLOG_WAIT_MS = 100;

/** Wait (bounded) until the mounted store's reclaim queue is empty; returns the last backlog seen. */
/** This build's chunkfs CLI in a child process (a call into our own mount from this process would deadlock). */
export function chunkfsCli(args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return run(process.execPath, [CLI_JS, ...args], { timeoutMs: 120_000, ...opts });
}

/** chunkfsCli that must exit 0: its stdout; else an error naming the command, its exit code and output. */
export async function chunkfsOk(args: string[], opts: RunOptions = {}): Promise<string> {
  const r = await chunkfsCli(args, opts);
  if (r.code !== 0) throw new Error(`chunkfs ${args.join(' ')}: exit ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

export async function reclaimDrained(store: string): Promise<number> {
  let backlog = -1;
  for (let i = 0; i < BACKLOG_WAITS_MAX && backlog !== 0; i++) {
    const st = await run(process.execPath, [CLI_JS, 'status', store, '--json'], { timeoutMs: 120_000 });
    backlog = st.code === 0 ? Number(JSON.parse(st.stdout).reclaimBacklog) : -1;
    if (backlog !== 0) await new Promise((resolve) => setTimeout(resolve, BACKLOG_WAIT_MS));
  }
  return backlog;
}

/**
 * Wait until the heal queue of a store or mount is empty: an entry leaves the queue only after its
 * rebuild was read back (store/upkeep/heal.ts), so an empty queue means the healer touches no disk.
 * Tests that inject disk faults wait for it first: a healer still mending an earlier test's damage
 * would spend a counted fault on its own reads (seen once in CI on a loaded machine).
 */
export async function healDrained(target: string): Promise<number> {
  let queued = -1;
  for (let i = 0; i < BACKLOG_WAITS_MAX && queued !== 0; i++) {
    const st = await chunkfsCli(['status', target, '--json']);
    queued = st.code === 0 ? Number(JSON.parse(st.stdout).healQueueLength) : -1;
    if (queued !== 0) await new Promise((resolve) => setTimeout(resolve, BACKLOG_WAIT_MS));
  }
  return queued;
}

/** Run a shell script (bash -c) as a child process. */
export function sh(script: string, opts: RunOptions = {}): Promise<RunResult> {
  return run('bash', ['-euo', 'pipefail', '-c', script], opts);
}

/** Like sh but throws with the output when the script fails. */
export async function shOk(script: string, opts: RunOptions = {}): Promise<string> {
  const r = await sh(script, opts);
  if (r.code !== 0)
    throw new Error(`script failed (code ${r.code}, signal ${r.signal}): ${script}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

// ---- mount children ----

export interface MountChild {
  mountpoint: string;
  child: ChildProcess;
  readyLine: string;
  /** everything the child printed so far (bounded) */
  output(): string;
  /** SIGTERM, wait, then make sure nothing is left (SIGKILL + fusermount -uz). Idempotent. */
  stop(): Promise<void>;
  /** kill -9 the server (crash test); leaves the mount stale until stop()/recover. */
  kill9(): Promise<void>;
  exited(): boolean;
}

const live = new Set<{ mountpoint: string; child: ChildProcess }>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort: the test process is exiting (crash, timeout); nothing may be left behind.
  process.on('exit', () => {
    for (const m of live) {
      try {
        m.child.kill('SIGKILL');
      } catch {
        /* already gone */
      }
      try {
        execFileSync('fusermount', ['-uz', m.mountpoint], { stdio: 'ignore', timeout: 5000 });
      } catch {
        /* not mounted */
      }
    }
  });
}

/** Direct children of a process (from /proc, so no procps is needed): [pid, command name]. */
export function childProcesses(pid: number): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      if (ppid === pid) out.push([Number(entry), comm]);
    } catch {
      /* the process ended meanwhile */
    }
  }
  return out;
}

export function isMounted(mountpoint: string): boolean {
  const abs = path.resolve(mountpoint);
  const mounts = readFileSync('/proc/self/mounts', 'utf8');
  return mounts.split('\n').some((line) => line.split(' ')[1] === abs.replace(/ /g, '\\040'));
}

export interface StartOptions {
  /** e.g. process.execPath */
  command: string;
  args: string[];
  mountpoint: string;
  readyPattern?: RegExp;
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
}

/** Start a mount server as a child process and wait for its ready line. */
export function startMount(opts: StartOptions): Promise<MountChild> {
  installExitHook();
  try {
    mkdirSync(opts.mountpoint, { recursive: true });
  } catch {
    /* exists, or a stale mount the server recovers */
  }
  const readyPattern = opts.readyPattern ?? /mounted/;
  const child = spawn(opts.command, opts.args, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
  const entry = { mountpoint: path.resolve(opts.mountpoint), child };
  live.add(entry);
  let out = '';
  let exitedFlag = false;
  const append = (b: Buffer): void => {
    out = (out + b.toString()).slice(-OUTPUT_KEEP_BYTES);
  };
  const exitPromise = new Promise<void>((resolve) =>
    child.on('exit', () => {
      exitedFlag = true;
      resolve();
    }),
  );

  let stopAsked = false;
  const stop = async (): Promise<void> => {
    stopAsked = true;
    if (!exitedFlag) {
      child.kill('SIGTERM');
      const timer = new Promise<void>((resolve) => setTimeout(resolve, STOP_TIMEOUT_MS).unref());
      await Promise.race([exitPromise, timer]);
      if (!exitedFlag) {
        child.kill('SIGKILL');
        await exitPromise;
      }
    }
    if (isMounted(entry.mountpoint)) await run('fusermount', ['-uz', entry.mountpoint], { timeoutMs: 10_000 });
    live.delete(entry);
  };
  const kill9 = async (): Promise<void> => {
    stopAsked = true;
    if (!exitedFlag) {
      child.kill('SIGKILL');
      await exitPromise;
    }
  };

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop().then(() =>
        reject(new Error(`mount not ready after ${opts.readyTimeoutMs ?? READY_TIMEOUT_MS} ms:\n${out}`)),
      );
    }, opts.readyTimeoutMs ?? READY_TIMEOUT_MS);
    let resolved = false;
    const onData = (b: Buffer): void => {
      append(b);
      if (resolved) return;
      const line = out.split('\n').find((l) => readyPattern.test(l));
      if (line === undefined) return;
      resolved = true;
      clearTimeout(timer);
      resolve({
        mountpoint: entry.mountpoint,
        child,
        readyLine: line,
        output: () => out,
        stop,
        kill9,
        exited: () => exitedFlag,
      });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (b: Buffer) => append(b));
    child.on('exit', (code, signal) => {
      // A mount that ends unasked fails the tests after it with "not a mount": say why, once, here.
      const bindHelper = /\(a bind of /.test(out); // it ends once the bind is made, by design
      if (resolved && !stopAsked && !bindHelper)
        process.stderr.write(
          `mount of ${entry.mountpoint} ended without stop() (code ${code}, signal ${signal}; an unmount from outside, or a crash); its last output:\n${out.slice(-2000)}\n`,
        );
      if (resolved) return;
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`mount exited (code ${code}, signal ${signal}) before ready:\n${out}`)));
    });
  });
}

/** Fresh temporary directory (removed by the caller's teardown via removeDir). */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `chunkfs-${prefix}-`));
  await fsp.chmod(dir, 0o755); // uid 65534 must reach the mount point inside
  return dir;
}

/** Remove a test directory; refuses while something is still mounted beneath it. */
export async function removeDir(dir: string): Promise<void> {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1]);
  if (mounts.some((m) => m !== undefined && m.startsWith(path.resolve(dir) + '/'))) return;
  await fsp.rm(dir, { recursive: true, force: true });
}

// ---- chunkfs specific ----

export interface ChunkfsMount extends MountChild {
  store: string;
}

/**
 * mkfs a store (via the CLI, in a child) and return its path. With CHUNKFS_TEST_META=postgres (npm run
 * test:pg) its metadata goes to a new database of this process's throwaway cluster (test/helpers/pg-meta.ts).
 */
export async function mkfs(store: string, args: string[] = ['--disks', '6', '--layout', 'replica:3']): Promise<void> {
  const meta = testMetaEngine() === 'postgres' && !args.includes('--meta') ? ['--meta', testDatabase()] : [];
  const r = await run(process.execPath, [CLI_JS, 'mkfs', store, ...args, ...meta], { timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`mkfs failed: ${r.stderr}${r.stdout}`);
}

/**
 * The transport mounted tests run on: $CHUNKFS_TRANSPORT (npm test runs the mounted suite once per
 * transport), else the CLI's default.
 */
export const TRANSPORT = process.env.CHUNKFS_TRANSPORT;
/** Extra -o options for every mount of a run ($CHUNKFS_MOUNT_OPTS, e.g. nowriteback_cache). */
const MOUNT_OPTS = process.env.CHUNKFS_MOUNT_OPTS;
export function transportArgs(): string[] {
  const out = TRANSPORT === undefined || TRANSPORT === '' ? [] : ['-o', `transport=${TRANSPORT}`];
  return MOUNT_OPTS === undefined || MOUNT_OPTS === '' ? out : [...out, '-o', MOUNT_OPTS];
}

/** Mount a chunkfs store with the CLI in a child process (on TRANSPORT unless extraArgs names one). */
export async function mountChunkfs(store: string, mountpoint: string, extraArgs: string[] = []): Promise<ChunkfsMount> {
  const named = extraArgs.some((a) => a.includes('transport='));
  const m = await startMount({
    command: process.execPath,
    args: [CLI_JS, 'mount', store, mountpoint, ...(named ? [] : transportArgs()), ...extraArgs],
    mountpoint,
    readyPattern: /^chunkfs: mounted /,
  });
  return { ...m, store };
}

export interface StoreFixtureOptions {
  /** mkfs arguments for <dir>/store, made before the first test (default: mkfs's); false: no store is made. */
  mkfs?: string[] | false;
  /** Runs first in the after hook, before the mounts are stopped (a tracer or writer to end first). */
  beforeStop?: () => unknown;
}

/**
 * A fresh directory for a whole test file, with a store in it (<dir>/store, mount point <dir>/mnt):
 * made before the first test; after the last one, even when one failed, every mount it started or
 * tracked is stopped (newest first: a remount on a stale mount point is stopped before the killed
 * mount it replaced) and the directory removed. Stopping a mount again is harmless (stop() is
 * idempotent), so tests may stop and remount as they like.
 */
export interface StoreFixture {
  readonly dir: string;
  readonly store: string;
  readonly mountpoint: string;
  /** Every mount started or tracked so far, oldest first (stopped ones too). */
  readonly mounts: readonly MountChild[];
  /** Mount the fixture's store on its mount point (extra mount arguments if given). */
  mount(extraArgs?: string[]): Promise<ChunkfsMount>;
  /** Mount another store of the test, or on another mount point. */
  mountAt(store: string, mountpoint: string, extraArgs?: string[]): Promise<ChunkfsMount>;
  /** Stop this mount (started some other way) in the after hook too. */
  track<M extends MountChild>(m: M): M;
  /** Stop every mount started so far, newest first. */
  stopAll(): Promise<void>;
}

export function storeFixture(test: TestFn, prefix: string, opts: StoreFixtureOptions = {}): StoreFixture {
  let dir = '';
  const mounts: MountChild[] = [];
  const fixture: StoreFixture = {
    get dir() {
      return dir;
    },
    get store() {
      return dir + '/store';
    },
    get mountpoint() {
      return dir + '/mnt';
    },
    mounts,
    mount: (extraArgs = []) => fixture.mountAt(fixture.store, fixture.mountpoint, extraArgs),
    mountAt: async (store, mountpoint, extraArgs = []) =>
      fixture.track(await mountChunkfs(store, mountpoint, extraArgs)),
    track: (m) => {
      mounts.push(m);
      return m;
    },
    async stopAll() {
      for (const m of [...mounts].reverse()) await m.stop();
    },
  };
  // Serial hooks: they run in the order declared, so a file's own before hook may use the store.
  test.serial.before(async () => {
    dir = await tempDir(prefix);
    if (opts.mkfs !== false) await mkfs(fixture.store, opts.mkfs);
  });
  test.serial.after.always(async () => {
    try {
      await opts.beforeStop?.();
    } finally {
      try {
        await fixture.stopAll();
      } finally {
        if (dir !== '') await removeDir(dir); // '' if tempDir failed: never the working directory
      }
    }
  });
  return fixture;
}

export interface SharedMountOptions {
  /** mkfs arguments (default: mkfs's) */
  mkfs?: string[];
  /** extra arguments of the first mount */
  mountArgs?: string[];
}

/**
 * One store mounted for a whole test file whose tests run serially on it (a storeFixture): made and
 * mounted before the first test, unmounted and removed after the last, even when one fails.
 * remount() stops it and mounts the same store again (with extra mount arguments if given).
 */
export interface SharedMount {
  readonly dir: string;
  readonly mount: ChunkfsMount;
  /** A path inside the mount. */
  path(rel: string): string;
  remount(extraArgs?: string[]): Promise<void>;
}

export function sharedMount(test: TestFn, prefix: string, opts: SharedMountOptions = {}): SharedMount {
  const fixture = storeFixture(test, prefix, { mkfs: opts.mkfs });
  let m: ChunkfsMount | undefined;
  const shared: SharedMount = {
    get dir() {
      return fixture.dir;
    },
    get mount() {
      if (m === undefined) throw new Error('the shared mount is not mounted');
      return m;
    },
    path: (rel) => path.join(shared.mount.mountpoint, rel),
    async remount(extraArgs = []) {
      await shared.mount.stop();
      m = undefined;
      m = await fixture.mount(extraArgs);
    },
  };
  test.serial.before(async () => {
    m = await fixture.mount(opts.mountArgs);
  });
  return shared;
}

// ---- a POSIX client in a child process (test/helpers/fsclient.py) ----

export const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const FSCLIENT = path.join(REPO_ROOT, 'test', 'helpers', 'fsclient.py');

export type ClientOp = [string, ...unknown[]];
export interface ClientResult {
  ok?: any;
  err?: string;
}

/** Run ops in one client process (descriptors live across its ops); one result per op. */
export async function fsClient(ops: ClientOp[], opts: RunOptions = {}): Promise<ClientResult[]> {
  const r = await run(PYTHON, [FSCLIENT], {
    ...opts,
    input: JSON.stringify({ ops }),
    timeoutMs: opts.timeoutMs ?? 60_000,
  });
  if (r.code !== 0) throw new Error(`fsclient failed (code ${r.code}, signal ${r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout) as ClientResult[];
}

/** What the client's `stat` op answers (test/helpers/fsclient.py st_dict). */
export interface ClientStat {
  mode: number;
  uid: number;
  gid: number;
  size: number;
  nlink: number;
  ino: number;
  atime_ns: number;
  mtime_ns: number;
  ctime_ns: number;
  rdev: number;
  blocks: number;
  blksize: number;
}

/** One op; its value, or throws with the errno name. */
export async function fsOk(op: ClientOp, opts: RunOptions = {}): Promise<any> {
  const [res] = await fsClient([op], opts);
  if (res.err !== undefined) throw new Error(`${op[0]} ${String(op[1])}: ${res.err}`);
  return res.ok;
}

/** One op's errno name (or 'OK'). */
export async function fsErr(op: ClientOp, opts: RunOptions = {}): Promise<string> {
  const [res] = await fsClient([op], opts);
  return res.err ?? 'OK';
}
