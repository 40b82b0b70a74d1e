// The chunkfs command line (DESIGN §7, issue 4): mkfs, mount, umount, status, scrub. Parsing is pure
// (src/cli-args.ts); store/ and fs/ are loaded lazily, at the point of use, so src/ stays free of
// disk and FUSE code at import time (dependencies flow fs/ -> store/ -> src/).
import { execFile } from 'node:child_process';
import { promises as fsp, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command, HELP, MountCliOptions, UsageError, parseArgs } from './cli-args';

// The store's shard writes and fsyncs run on libuv's thread pool (4 threads by default); a mount
// writing several chunks' replicas at once waits on it. Set before the pool's first use.
if (process.env.UV_THREADPOOL_SIZE === undefined) process.env.UV_THREADPOOL_SIZE = '16';

export const DEFAULT_DISKS = 6;
export const DEFAULT_LAYOUT = 'replica:3';
const PROBE_TIMEOUT_MS = 5000;
const UNMOUNT_POLL_MS = 500;
const EC_BLOCK_DEFAULT_BYTES = 1 << 20; // spec §10

/** The part of store/store.ts the CLI uses (store-api.md). */
interface StoreLike {
  close(): Promise<void>;
  status(): Promise<unknown>;
  scrub(opts: { repair?: boolean }): Promise<ScrubReport>;
}
/** store/heal.ts HealReport. */
interface ScrubReport {
  examined: number;
  healed: number;
  failed: Array<{ ino: number; chunkIndex: number; shardIndex: number; error: string }>;
  badCount: number;
  bad: ShardRef[]; // bounded list; badCount is exact
  /** store/private-modes.ts LooseModes: paths other users can access (issue 12). */
  looseModes: { count: number; paths: Array<{ path: string; permBits: number }>; fixed: number };
}
interface ShardRef { ino: number; chunkIndex: number; shardIndex: number }
interface StoreModule {
  Store: {
    create(dir: string, opts: { disks?: number | string[]; layout?: string; chunkSizeBytes?: number; bitrotBlockBytes?: number; ecBlockSizeBytes?: number }): Promise<StoreLike>;
    open(dir: string, opts?: { readOnly?: boolean; healer?: boolean }): Promise<StoreLike>;
  };
}

class CliError extends Error {}

function loadStore(): StoreModule {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../store/store') as StoreModule;
}

/** $XDG_DATA_HOME/chunkfs/default, else ~/.local/share/chunkfs/default. */
export function defaultStorePath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_DATA_HOME !== undefined && env.XDG_DATA_HOME !== '' ? env.XDG_DATA_HOME : path.join(os.homedir(), '.local', 'share');
  return path.join(base, 'chunkfs', 'default');
}

function run(file: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: PROBE_TIMEOUT_MS, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1;
      resolve({ code, out: `${stdout}${stderr}` });
    });
  });
}

function mountedAt(mountpoint: string): boolean {
  const escaped = mountpoint.replace(/ /g, '\\040');
  return readFileSync('/proc/self/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === escaped);
}

/** A live mount point is refused; a stale one (crash: ENOTCONN) is unmounted. */
async function prepareMountpoint(mountpoint: string): Promise<void> {
  if (mountedAt(mountpoint)) {
    // Probe in a child with a timeout: a hung mount must not hang the CLI.
    const probe = await run('stat', ['-c', '%i', mountpoint]);
    if (probe.code === 0) throw new CliError(`${mountpoint} is already mounted (a live mount); unmount it first`);
    process.stderr.write(`chunkfs: ${mountpoint} is a stale mount (${probe.out.trim()}); recovering with fusermount -uz\n`);
    const r = await run('fusermount', ['-uz', mountpoint]);
    if (r.code !== 0 || mountedAt(mountpoint)) throw new CliError(`cannot recover stale mount ${mountpoint}: ${r.out.trim()}`);
  }
  await fsp.mkdir(mountpoint, { recursive: true });
  const st = await fsp.stat(mountpoint);
  if (!st.isDirectory()) throw new CliError(`${mountpoint} is not a directory`);
  // libfuse 2 refuses a non-empty mount point; say so before the store is opened.
  if ((await fsp.readdir(mountpoint)).length > 0) throw new CliError(`${mountpoint} is not empty (mount on an empty directory)`);
}

async function isStore(dir: string): Promise<boolean> {
  try { await fsp.access(path.join(dir, 'chunkfs.json')); return true; } catch { return false; }
}

async function cmdMkfs(c: Extract<Command, { verb: 'mkfs' }>): Promise<void> {
  const dir = path.resolve(c.store);
  if (await isStore(dir)) throw new CliError(`${dir} already holds a chunkfs store`);
  const { Store } = loadStore();
  const disks = c.disks ?? DEFAULT_DISKS;
  // The erasure block (1 MiB by default, spec §10) must divide the chunk: a smaller chunk uses itself.
  const ecBlockSizeBytes = c.chunkSizeBytes !== undefined && c.chunkSizeBytes < EC_BLOCK_DEFAULT_BYTES ? c.chunkSizeBytes : undefined;
  const store = await Store.create(dir, { disks, layout: c.layout ?? DEFAULT_LAYOUT, chunkSizeBytes: c.chunkSizeBytes, bitrotBlockBytes: c.bitrotBlockBytes, ecBlockSizeBytes });
  await store.close();
  const n = typeof disks === 'number' ? disks : disks.length;
  process.stdout.write(`chunkfs: created store ${dir} (${n} disks, layout ${c.layout ?? DEFAULT_LAYOUT})\n`);
}

async function cmdMount(c: Extract<Command, { verb: 'mount' }>): Promise<void> {
  const mountpoint = path.resolve(c.mountpoint);
  const storeDir = path.resolve(c.store ?? defaultStorePath());
  const { Store } = loadStore();
  if (!(await isStore(storeDir))) {
    if (c.store !== undefined) throw new CliError(`${storeDir} is not a chunkfs store (run 'chunkfs mkfs ${c.store}' first)`);
    await fsp.mkdir(path.dirname(storeDir), { recursive: true, mode: 0o700 }); // issue 12: private
    const created = await Store.create(storeDir, { disks: DEFAULT_DISKS, layout: DEFAULT_LAYOUT });
    await created.close();
    process.stderr.write(`chunkfs: created the default store ${storeDir} (${DEFAULT_DISKS} disks, ${DEFAULT_LAYOUT})\n`);
  }
  await prepareMountpoint(mountpoint);
  const store = await Store.open(storeDir, { healer: true }); // heal what reads served around, in the background
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { mountFs } = require('../fs/mount') as typeof import('../fs/mount');
  let mounted: Awaited<ReturnType<typeof mountFs>>;
  try {
    mounted = await mountFs(store as unknown as Parameters<typeof mountFs>[0], mountpoint, mountOptions(c.options));
  } catch (err) {
    await store.close();
    throw new CliError(`cannot mount ${storeDir} on ${mountpoint}: ${(err as Error).message}`);
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`chunkfs: ${signal}: flushing, unmounting ${mountpoint} and closing the store\n`);
    mounted.unmount(signal === 'unmounted').then(() => store.close()).then(() => process.exit(0), (err) => {
      process.stderr.write(`chunkfs: unmount failed: ${(err as Error).message}\n`);
      process.exit(1);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // A bug in a background task is logged; it must not take the mount down (issue 4).
  process.on('uncaughtException', (err) => process.stderr.write(`chunkfs: uncaught: ${err.stack ?? err.message}\n`));
  process.on('unhandledRejection', (err) => process.stderr.write(`chunkfs: unhandled rejection: ${String(err)}\n`));
  // Keeps the process alive (the FUSE thread's handles are unref'd), and notices an unmount from
  // outside (chunkfs umount, fusermount -u): then flush, close the store and exit.
  setInterval(() => { if (!stopping && !mountedAt(mountpoint)) stop('unmounted'); }, UNMOUNT_POLL_MS);
  process.stdout.write(`chunkfs: mounted ${storeDir} on ${mountpoint} (pid ${process.pid}, transport ${mounted.transport})\n`);
}

function mountOptions(o: MountCliOptions): import('../fs/mount').MountOptions {
  return {
    bufferBytesMax: o.bufferBytesMax, flushDelayMs: o.flushDelayMs, allowOther: o.allowOther,
    transport: o.transport, writebackCache: o.writebackCache,
  };
}

async function cmdUmount(c: Extract<Command, { verb: 'umount' }>): Promise<void> {
  const mountpoint = path.resolve(c.mountpoint);
  if (!mountedAt(mountpoint)) throw new CliError(`${mountpoint} is not mounted`);
  const r = await run('fusermount', [c.lazy ? '-uz' : '-u', mountpoint]);
  if (r.code !== 0) throw new CliError(`cannot unmount ${mountpoint}: ${r.out.trim()}${c.lazy ? '' : ' (busy? try --lazy)'}`);
  process.stdout.write(`chunkfs: unmounted ${mountpoint}\n`);
}

async function cmdStatus(c: Extract<Command, { verb: 'status' }>): Promise<void> {
  const dir = path.resolve(c.store);
  if (!(await isStore(dir))) throw new CliError(`${dir} is not a chunkfs store`);
  const { Store } = loadStore();
  const store = await Store.open(dir, { readOnly: true });
  try {
    const report = await store.status();
    const json = JSON.stringify(report, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    process.stdout.write(c.json ? `${json}\n` : (require('./status-text') as typeof import('./status-text')).statusText(JSON.parse(json)));
  } finally {
    await store.close();
  }
}


/** "file 3 chunk 0 shards 1,2; file 5 chunk 2 shard 0" */
export function shardList(refs: ShardRef[]): string {
  const byChunk = new Map<string, number[]>();
  for (const r of refs) {
    const k = `file ${r.ino} chunk ${r.chunkIndex}`;
    byChunk.set(k, [...(byChunk.get(k) ?? []), r.shardIndex]);
  }
  return [...byChunk].map(([k, v]) => `${k} shard${v.length > 1 ? 's' : ''} ${v.sort((a, b) => a - b).join(',')}`).join('; ');
}

/** Exit 1 when anything is unrecoverable, or (without --repair) when anything is bad. */
async function cmdScrub(c: Extract<Command, { verb: 'scrub' }>): Promise<number> {
  const dir = path.resolve(c.store);
  if (!(await isStore(dir))) throw new CliError(`${dir} is not a chunkfs store`);
  const { Store } = loadStore();
  const store = await Store.open(dir); // read-write: the lock refuses it while mounted, naming the holder
  let report: ScrubReport;
  try {
    report = await store.scrub({ repair: c.repair });
  } finally {
    await store.close();
  }
  const unrecoverable = report.failed.map((f) => ({ ino: f.ino, chunkIndex: f.chunkIndex, shardIndex: f.shardIndex, error: f.error }));
  const badCount = report.badCount;
  const bad = report.bad;
  const loose = report.looseModes;
  const summary = { store: dir, repair: c.repair, shardsChecked: report.examined, badFound: badCount, repaired: report.healed,
    unrecoverable, bad: c.repair ? undefined : bad,
    looseModes: { count: loose.count, fixed: loose.fixed, paths: loose.paths.map((p) => ({ path: p.path, mode: `0${p.permBits.toString(8)}` })) } };
  if (c.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    process.stdout.write(`chunkfs scrub: ${dir}: ${report.examined} shards checked, ${badCount} bad or missing, ` +
      `${report.healed} repaired, ${unrecoverable.length} unrecoverable, ${loose.count} path(s) with loose modes\n`);
  }
  if (unrecoverable.length > 0) {
    const why = unrecoverable.map((f) => `file ${f.ino} chunk ${f.chunkIndex} shard ${f.shardIndex}: ${f.error}`).join('; ');
    process.stderr.write(`chunkfs scrub: unrecoverable: ${why}\n`);
    return 1;
  }
  if (loose.count > 0) {
    const listed = loose.paths.map((p) => `${p.path} (0${p.permBits.toString(8)})`).join(', ');
    const more = loose.count > loose.paths.length ? ` and ${loose.count - loose.paths.length} more` : '';
    process.stderr.write(c.repair
      ? `chunkfs scrub: made ${loose.fixed} path(s) owner-only that other users could access: ${listed}${more}\n`
      : `chunkfs scrub: ${loose.count} path(s) in the store are accessible to other users (run with --repair to make them owner-only): ${listed}${more}\n`);
  }
  if (!c.repair && (bad.length > 0 || loose.count > 0)) {
    if (bad.length > 0) process.stderr.write(`chunkfs scrub: bad or missing (queued for heal; run with --repair): ${shardList(bad)}\n`);
    return 1;
  }
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  let cmd: Command;
  try {
    cmd = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`chunkfs${err.verb ? ' ' + err.verb : ''}: ${err.message}\n${HELP[err.verb] ?? HELP['']}\n`);
    return 2;
  }
  try {
    switch (cmd.verb) {
      case 'help': process.stdout.write(`${HELP[cmd.topic ?? ''] ?? HELP['']}\n`); return 0;
      case 'mkfs': await cmdMkfs(cmd); return 0;
      case 'mount': await cmdMount(cmd); return -1; // keeps running until a signal
      case 'umount': await cmdUmount(cmd); return 0;
      case 'status': await cmdStatus(cmd); return 0;
      case 'scrub': return await cmdScrub(cmd);
    }
  } catch (err) {
    const msg = err instanceof CliError ? err.message : err instanceof Error ? err.message : String(err);
    process.stderr.write(`chunkfs ${cmd.verb}: ${msg}\n`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => { if (code >= 0) process.exitCode = code; }, (err) => {
    process.stderr.write(`chunkfs: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
