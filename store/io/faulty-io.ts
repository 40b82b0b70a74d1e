// A fault-injecting Io for tests: fail chosen calls with EIO or ENOSPC,
// add latency, and simulate a crash (power loss) by putting the disk back into
// its last durable state. The durability model, per file and per directory entry:
//   - file bytes become durable at fsync/fdatasync of that file;
//   - a directory entry (create, rename, unlink) becomes durable at fsyncDir of
//     its parent directory; until then a crash undoes it (unlinksDurable: an unlink
//     is durable at once);
//   - a torn crash keeps each 4 KiB page of non-durable file data either old or new
//     at random (and the file length either old or new);
//   - directories themselves (mkdir/rmdir) are treated as durable at once (the store
//     fsyncs the parents of the chunk directories it creates anyway);
//   - syncfs of a path makes durable every tracked file's bytes and every directory entry on
//     that path's file system (same st_dev), and the external files noted there; before it
//     returns, a crash loses all of them as it would without it.
// After crash() every call throws CrashedError; reopen the store with a new Io.
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { Io, IoFile, IoStat, OpenMode, StatfsResult } from './io';
import { PRIVATE_FILE_MODE } from './sync-io';
import { assert } from '../../src/errors';
import { Tracked, prng, tear } from './crash-model';
import { FaultyFile } from './faulty-file';

export type IoOp =
  | 'open'
  | 'pread'
  | 'pwrite'
  | 'fsync'
  | 'fdatasync'
  | 'size'
  | 'truncate'
  | 'close'
  | 'rename'
  | 'unlink'
  | 'rmdir'
  | 'mkdir'
  | 'readdir'
  | 'fsyncDir'
  | 'syncfs'
  | 'statfs'
  | 'exists'
  | 'stat'
  | 'chmod';

const MUTATING: ReadonlySet<IoOp> = new Set<IoOp>([
  'pwrite',
  'fsync',
  'fdatasync',
  'truncate',
  'rename',
  'unlink',
  'rmdir',
  'mkdir',
  'fsyncDir',
  'syncfs',
]);
/** The calls that change what a power loss leaves: the crash points of a power-loss sweep. */
const SYNCS: ReadonlySet<IoOp> = new Set<IoOp>(['fsync', 'fdatasync', 'fsyncDir', 'syncfs']);
const TRACKED_FILES_MAX = 100_000;

export interface FaultRule {
  op: IoOp | '*' | IoOp[];
  /** Substring of the path, or a predicate; absent = every path. */
  path?: string | ((path: string) => boolean);
  error: 'EIO' | 'ENOSPC';
  /** Let this many matching calls pass first. */
  skip?: number;
  /** Fail this many matching calls, then stop (default: forever). */
  count?: number;
}

export class InjectedIoError extends Error {
  constructor(
    readonly code: string,
    op: IoOp,
    path: string,
  ) {
    super(`${code}: injected fault on ${op} ${path}`);
  }
}

export class CrashedError extends Error {
  readonly code = 'EIO';
  constructor(op: string) {
    super(`io crashed: ${op} refused until a new Io is used`);
  }
}

export { prng };

/** st_dev of the file system path is on: that of its nearest existing ancestor (path may be gone). */
function deviceOf(path: string): number {
  let at = path;
  for (;;) {
    const st = fs.statSync(at, { throwIfNoEntry: false });
    if (st !== undefined) return st.dev;
    const up = nodePath.dirname(at);
    assert(up !== at, `FaultyIo: no existing ancestor of ${path}`);
    at = up;
  }
}

export class FaultyIo implements Io {
  private rules: Array<FaultRule & { seen: number; failed: number }> = [];
  private crashed = false;
  private mutations = 0;
  private crashAtMutation = 0;
  private syncs = 0;
  private crashAtSync = 0;
  private crashTorn = false;
  private crashSeed = 1;
  private readonly nsCurrent = new Map<string, Tracked | null>();
  private readonly nsDurable = new Map<string, Tracked | null>();
  latencyMs = 0;
  /**
   * Power loss for files written outside the Io (SQLite's meta.db-wal): their content at their
   * last fdatasync through the Io is put back by crash(). Sound only while SQLite does not
   * checkpoint on its own (tests set wal_autocheckpoint = 0), since a checkpoint syncs the WAL
   * without this Io seeing it.
   */
  restoreExternal = false;
  /**
   * Unlinks durable at once, without an fsync of the directory: a power loss keeps them (as a
   * journaling filesystem may, having committed its journal on its own timer). With restoreExternal,
   * the case seen once: shard files deleted for good while the commit that freed them is lost.
   */
  unlinksDurable = false;
  private readonly externalDurable = new Map<string, Buffer>();
  /**
   * What crash() put back into those files, by path. The process goes on after the crash and SQLite
   * may commit after it (a write whose other shards were done commits degraded, the refused one
   * queued for heal), appending to the file put back: a power loss keeps none of that, so the
   * store is reopened with these contents (test/store/crash-harness.ts reopenAfterCrash).
   */
  readonly externalRestored = new Map<string, Buffer>();
  /** Called as the crash happens, before any call fails: a test ends there what else the process writes (its metadata). */
  onCrash: () => void = () => undefined;
  /** Count of calls by op, for tests. */
  readonly calls = new Map<IoOp, number>();

  constructor(private readonly inner: Io) {}

  addFault(rule: FaultRule): void {
    this.rules.push({ ...rule, seen: 0, failed: 0 });
  }
  clearFaults(): void {
    this.rules = [];
  }
  /** Number of mutating calls made so far (crash points). */
  get mutationCount(): number {
    return this.mutations;
  }
  /** Crash just before the n-th mutating call (1-based) is performed. */
  crashBeforeMutation(n: number, opts: { torn?: boolean; seed?: number } = {}): void {
    assert(n >= 1, 'crashBeforeMutation: n must be >= 1');
    this.crashAtMutation = n;
    this.crashTorn = opts.torn ?? false;
    this.crashSeed = opts.seed ?? 1;
  }
  /** Number of device syncs (fsync, fdatasync, fsyncDir) made so far. */
  get syncCount(): number {
    return this.syncs;
  }
  /** Crash just before the n-th device sync (1-based): every point where durability changes. */
  crashBeforeSync(n: number, opts: { torn?: boolean; seed?: number } = {}): void {
    assert(n >= 1, 'crashBeforeSync: n must be >= 1');
    this.crashAtSync = n;
    this.crashTorn = opts.torn ?? false;
    this.crashSeed = opts.seed ?? 1;
  }
  get isCrashed(): boolean {
    return this.crashed;
  }

  private async gate(op: IoOp, path: string): Promise<void> {
    if (this.crashed) throw new CrashedError(op);
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
    if (this.crashed) throw new CrashedError(op);
    if (MUTATING.has(op)) {
      this.mutations++;
      if (SYNCS.has(op)) this.syncs++;
      if (
        (this.crashAtMutation > 0 && this.mutations >= this.crashAtMutation) ||
        (this.crashAtSync > 0 && this.syncs >= this.crashAtSync)
      ) {
        this.crash({ torn: this.crashTorn, seed: this.crashSeed });
        throw new CrashedError(op);
      }
    }
    for (const rule of this.rules) {
      const ops = Array.isArray(rule.op) ? rule.op : [rule.op];
      if (!ops.includes('*') && !ops.includes(op)) continue;
      if (rule.path !== undefined) {
        const match = typeof rule.path === 'string' ? path.includes(rule.path) : rule.path(path);
        if (!match) continue;
      }
      rule.seen++;
      if (rule.seen <= (rule.skip ?? 0)) continue;
      if (rule.failed >= (rule.count ?? Infinity)) continue;
      rule.failed++;
      throw new InjectedIoError(rule.error, op, path);
    }
  }

  /** Start tracking a path: what is on disk now is durable by assumption. */
  private ensure(path: string): Tracked | null {
    const existing = this.nsCurrent.get(path);
    if (existing !== undefined) return existing;
    assert(this.nsCurrent.size < TRACKED_FILES_MAX, 'FaultyIo: too many tracked files');
    let t: Tracked | null = null;
    if (fs.existsSync(path) && fs.statSync(path).isFile()) {
      const content = fs.readFileSync(path);
      t = { current: content, durable: Buffer.from(content) };
    }
    this.nsCurrent.set(path, t);
    this.nsDurable.set(path, t);
    return t;
  }

  async open(p: string, mode: OpenMode): Promise<IoFile> {
    const path = nodePath.resolve(p);
    await this.gate('open', path);
    if (mode === 'create-exclusive' || mode === 'create-direct') {
      this.ensure(path);
      const file = await this.run(() => this.inner.open(path, mode));
      this.after('open');
      const t: Tracked = { current: Buffer.alloc(0), durable: Buffer.alloc(0) };
      this.nsCurrent.set(path, t);
      return new FaultyFile(this, file, t, path);
    }
    // Reads need no model state; writers get the tracked file so fsync can snapshot it.
    const t = mode === 'read' ? (this.nsCurrent.get(path) ?? null) : this.ensure(path);
    const file = await this.run(() => this.inner.open(path, mode));
    this.after('open');
    assert(mode === 'read' || t !== null, `FaultyIo: opened ${path} that the model thinks is absent`);
    return new FaultyFile(this, file, t, path);
  }

  /** A file this Io does not track was fdatasynced: remember its content as durable. */
  noteExternalSync(path: string): void {
    if (this.restoreExternal && !this.crashed) this.externalDurable.set(path, fs.readFileSync(path));
  }

  /** Called by FaultyFile for its per-file ops. */
  async fileGate(op: IoOp, path: string): Promise<void> {
    await this.gate(op, path);
  }

  /**
   * After the inner call returns: a crash that happened while it was in flight
   * means it never completed (the disk was already put back), so it fails too.
   */
  after(op: string): void {
    if (this.crashed) throw new CrashedError(op);
  }

  async rename(f: string, t: string): Promise<void> {
    const from = nodePath.resolve(f);
    const to = nodePath.resolve(t);
    await this.gate('rename', `${from} -> ${to}`);
    this.ensure(from);
    this.ensure(to);
    await this.run(() => this.inner.rename(from, to));
    this.after('rename');
    this.nsCurrent.set(to, this.nsCurrent.get(from) ?? null);
    this.nsCurrent.set(from, null);
  }
  async unlink(p: string): Promise<void> {
    const path = nodePath.resolve(p);
    await this.gate('unlink', path);
    this.ensure(path);
    await this.run(() => this.inner.unlink(path));
    this.after('unlink');
    this.nsCurrent.set(path, null);
    if (this.unlinksDurable) this.nsDurable.set(path, null);
  }
  async rmdir(p: string): Promise<void> {
    await this.gate('rmdir', p);
    await this.run(() => this.inner.rmdir(p));
  }
  async mkdir(p: string): Promise<void> {
    await this.gate('mkdir', p);
    await this.run(() => this.inner.mkdir(p));
    this.after('mkdir');
  }
  async stat(p: string): Promise<IoStat | null> {
    await this.gate('stat', p);
    return this.run(() => this.inner.stat(p));
  }
  /** Modes are metadata the crash model treats as durable at once, like mkdir. */
  async chmod(p: string, mode: number): Promise<void> {
    await this.gate('chmod', p);
    await this.run(() => this.inner.chmod(p, mode));
    this.after('chmod');
  }
  async readdir(p: string): Promise<string[]> {
    await this.gate('readdir', p);
    return this.run(() => this.inner.readdir(p));
  }
  async fsyncDir(p: string): Promise<void> {
    const dir = nodePath.resolve(p);
    await this.gate('fsyncDir', dir);
    await this.run(() => this.inner.fsyncDir(dir));
    this.after('fsyncDir');
    for (const [path, t] of this.nsCurrent) {
      if (nodePath.dirname(path) === dir) this.nsDurable.set(path, t);
    }
  }
  async syncfs(paths: readonly string[]): Promise<void> {
    const roots = paths.map((p) => nodePath.resolve(p));
    await this.gate('syncfs', roots.join(' '));
    await this.run(() => this.inner.syncfs(roots));
    this.after('syncfs');
    const dev = fs.statSync(roots[0]).dev;
    for (const [path, t] of this.nsCurrent) {
      if (deviceOf(path) !== dev) continue;
      if (t !== null) t.durable = Buffer.from(t.current); // its bytes, as an fdatasync of it
      this.nsDurable.set(path, t); // its directory entry, as an fsync of its directory
    }
    for (const path of this.externalDurable.keys())
      if (deviceOf(path) === dev) this.externalDurable.set(path, fs.readFileSync(path));
  }
  async statfs(p: string): Promise<StatfsResult> {
    await this.gate('statfs', p);
    return this.run(() => this.inner.statfs(p));
  }
  async exists(p: string): Promise<boolean> {
    await this.gate('exists', p);
    return this.run(() => this.inner.exists(p));
  }

  /** Cache maintenance, not a disk call: no fault or crash point. */
  async revalidate(p: string): Promise<void> {
    if (this.crashed) throw new CrashedError('revalidate');
    await this.inner.revalidate(nodePath.resolve(p));
  }

  private inflight = 0;
  private pendingRestore: { torn?: boolean; seed?: number } | null = null;
  private restored: Promise<void> = Promise.resolve();
  private markRestored: () => void = () => undefined;

  /** Every inner call runs through here so a crash can wait for calls in flight. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    // A call whose gate passed before another call crashed the Io starts nothing on the disk put back.
    if (this.crashed) throw new CrashedError('call after the crash');
    this.inflight++;
    try {
      return await fn();
    } finally {
      this.inflight--;
      if (this.inflight === 0 && this.pendingRestore !== null) this.restore(this.pendingRestore);
    }
  }

  /**
   * Simulated power loss: refuse every later call and put every tracked path back to
   * its durable state (once calls already in flight have landed, so none of them
   * touches the disk after the restore).
   */
  crash(opts: { torn?: boolean; seed?: number } = {}): void {
    if (this.crashed) return;
    this.crashed = true;
    this.onCrash();
    this.restored = new Promise((resolve) => (this.markRestored = resolve));
    if (this.inflight === 0) this.restore(opts);
    else this.pendingRestore = opts;
  }

  /** Resolves when the disk holds the post-crash state. */
  whenRestored(): Promise<void> {
    return this.restored;
  }

  private restore(opts: { torn?: boolean; seed?: number }): void {
    this.pendingRestore = null;
    const random = prng(opts.seed ?? 1);
    for (const path of this.nsCurrent.keys()) {
      const t = this.nsDurable.get(path) ?? null;
      if (t === null) {
        fs.rmSync(path, { force: true });
        continue;
      }
      const content = opts.torn ? tear(t, random) : t.durable;
      fs.mkdirSync(nodePath.dirname(path), { recursive: true, mode: 0o700 });
      fs.writeFileSync(path, content, { mode: PRIVATE_FILE_MODE });
    }
    for (const [path, content] of this.externalDurable) {
      fs.writeFileSync(path, content, { mode: PRIVATE_FILE_MODE });
      this.externalRestored.set(path, content);
    }
    this.markRestored();
  }
}
