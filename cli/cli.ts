// The chunkfs command line (DESIGN §7): mkfs, mount, umount here; the verbs that
// work on a store (status, scrub, heal, fsck, inspect, replace-disk, inject) in cli/verbs/. Parsing
// is pure (cli/cli-args.ts, cli/tool-args.ts); store/ and fs/ are loaded lazily, at the point of use,
// so --help and usage errors start fast (dependencies flow cli/ -> fs/ -> store/ -> src/).
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { Command, HELP, MountCliOptions, UsageError, parseArgs } from './cli-args';
import { fsnameOption, mountedAt } from './mounts';
import { chunkfsDevAt, connectionMounts, mountInfoTable } from './mount-info';
import { SPIN_US_DEFAULT } from '../fs/fuse/transport';
import { guardStdio, keepRunningWithoutStdout } from './stdio';
import { limitHeapGrowth } from './mount-memory';
import type { MountMemory } from './actions/env';
import { defaultStorePath } from './target';
import { processStopped } from './process-state';
import { mountpointInsideStore } from './mountpoint-place';
import { mkdirTree } from '../store/io/mkdir-tree';
import type { MountedFs } from '../fs/mount';

// The store's shard writes and fsyncs run on libuv's thread pool (4 threads by default); a mount
// writing several chunks' replicas at once waits on it. Set before the pool's first use.
if (process.env.UV_THREADPOOL_SIZE === undefined) process.env.UV_THREADPOOL_SIZE = '16';

export const DEFAULT_DISKS = 6;
export const DEFAULT_LAYOUT = 'replica:3';
const PROBE_TIMEOUT_MS = 5000;
const UNMOUNT_POLL_MS = 500;
const EC_BLOCK_DEFAULT_BYTES = 1 << 20; // spec §10
/** A mount point the CLI makes: as mkdir(1) would, the umask narrowing it. */
const MOUNTPOINT_MODE = 0o777;

/** The part of store/store.ts mkfs and mount use (docs/store-api.md). */
interface StoreLike {
  close(): Promise<void>;
}
interface StoreModule {
  Store: {
    create(
      dir: string,
      opts: {
        disks?: number | string[];
        layout?: string;
        chunkSizeBytes?: number;
        bitrotBlockBytes?: number;
        ecBlockSizeBytes?: number;
        keyFile?: string;
        meta?: string;
      },
    ): Promise<StoreLike>;
  };
}

class CliError extends Error {}

function loadStore(): StoreModule {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../store/store') as StoreModule;
}

export { defaultStorePath };

/** timedOut: killed after PROBE_TIMEOUT_MS (what it waited on did not answer). */
function run(file: string, args: string[]): Promise<{ code: number; out: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: PROBE_TIMEOUT_MS, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const code =
        err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1;
      resolve({ code, out: `${stdout}${stderr}`, timedOut: err !== null && err.killed === true });
    });
  });
}

/** The levels of dir that do not exist, deepest first (what mkdirTree will make). */
async function missingLevels(dir: string): Promise<string[]> {
  const exists = (d: string): Promise<boolean> =>
    fsp.stat(d).then(
      () => true,
      () => false,
    );
  const out: string[] = [];
  for (let d = dir; d !== path.dirname(d) && !(await exists(d)); d = path.dirname(d)) out.push(d);
  return out;
}

/** A mount that failed leaves no mount point it made (DESIGN §7): each level, deepest first, if still empty. */
async function removeMade(made: readonly string[]): Promise<void> {
  for (const d of made) await fsp.rmdir(d).catch(() => undefined);
}

/**
 * A live mount point is refused; a stale one (crash: ENOTCONN) is unmounted. Returns the directories
 * made for it (deepest first), for a failed mount to remove.
 */
async function prepareMountpoint(mountpoint: string): Promise<string[]> {
  if (mountedAt(mountpoint)) {
    // Probe in a child with a timeout: a hung mount must not hang the CLI. It opens the directory:
    // a stat can be answered from attributes the kernel still caches (1 s) after the server died.
    const probe = await run('sh', ['-c', ': < "$1"', 'sh', mountpoint]);
    if (probe.code === 0) throw new CliError(`${mountpoint} is already mounted (a live mount); unmount it first`);
    // No answer is a stopped or hung mount process (a paused VM), not a dead one: never unmount it.
    if (probe.timedOut) throw new CliError(notAnswering(mountpoint));
    process.stderr.write(
      `chunkfs: ${mountpoint} is a stale mount (${probe.out.trim()}); recovering with fusermount -uz\n`,
    );
    const r = await run('fusermount', ['-uz', mountpoint]);
    if (r.code !== 0 || mountedAt(mountpoint))
      throw new CliError(`cannot recover stale mount ${mountpoint}: ${r.out.trim()}`);
  }
  const made = await missingLevels(mountpoint);
  if (made.length > 0) await mkdirTree(mountpoint, MOUNTPOINT_MODE);
  const st = await fsp.stat(mountpoint);
  if (!st.isDirectory()) throw new CliError(`${mountpoint} is not a directory`);
  // libfuse 2 refuses a non-empty mount point; say so before the store is opened.
  if ((await fsp.readdir(mountpoint)).length > 0)
    throw new CliError(`${mountpoint} is not empty (mount on an empty directory)`);
  return made;
}

function notAnswering(mountpoint: string): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { mountHolderOf } = require('./umount-wait') as typeof import('./umount-wait');
  const pid = mountInfoTable()
    .filter((m) => m.mountpoint === mountpoint)
    .map(
      (m) =>
        mountHolderOf(
          m.source,
          connectionMounts(m.dev, m.source).map((c) => c.mountpoint),
        )?.pid,
    )
    .pop();
  const who = pid === undefined ? 'its mount process' : `its mount process ${pid}`;
  const what = pid !== undefined && processStopped(pid) ? `is stopped: kill -CONT ${pid}` : 'is stopped or hung';
  return (
    `${mountpoint} is mounted but not answering (${PROBE_TIMEOUT_MS / 1000} s; ${who} ${what}, ` +
    `or 'chunkfs umount --lazy ${mountpoint}'); nothing was done`
  );
}

async function isStore(dir: string): Promise<boolean> {
  try {
    await fsp.access(path.join(dir, 'chunkfs.json'));
    return true;
  } catch {
    return false;
  }
}

async function cmdMkfs(c: Extract<Command, { verb: 'mkfs' }>): Promise<void> {
  const dir = path.resolve(c.store);
  if (await isStore(dir)) throw new CliError(`${dir} already holds a chunkfs store`);
  const { Store } = loadStore();
  const disks = c.disks ?? DEFAULT_DISKS;
  // The erasure block (1 MiB by default, spec §10) must divide the chunk: a smaller chunk uses itself.
  const ecBlockSizeBytes =
    c.chunkSizeBytes !== undefined && c.chunkSizeBytes < EC_BLOCK_DEFAULT_BYTES ? c.chunkSizeBytes : undefined;
  const store = await Store.create(dir, {
    disks,
    layout: c.layout ?? DEFAULT_LAYOUT,
    chunkSizeBytes: c.chunkSizeBytes,
    bitrotBlockBytes: c.bitrotBlockBytes,
    ecBlockSizeBytes,
    keyFile: c.keyFile,
    meta: c.meta,
  }).catch((err: Error & { code?: unknown }) => {
    // A full file system while building: the bare ENOSPC or SQLite's "database or disk is full"
    // names no file; say which store, and that mkfs undid what it made (DESIGN §4 "mkfs").
    if (err.code === 'SQLITE_FULL' || err.code === 'ENOSPC')
      throw new CliError(`${dir}: no space left to make it (${err.message}); nothing was made: free space, retry`);
    throw err;
  });
  await store.close();
  const n = typeof disks === 'number' ? disks : disks.length;
  const meta = c.meta === undefined ? `${dir}/meta.db` : c.meta;
  process.stdout.write(
    `chunkfs: created store ${dir} (${n} disks, layout ${c.layout ?? DEFAULT_LAYOUT}, metadata in ${meta})\n`,
  );
}

/** Mounts; true while this process serves the mount, false when the mount is a bind of a live one. */
async function cmdMount(c: Extract<Command, { verb: 'mount' }>): Promise<boolean> {
  keepRunningWithoutStdout();
  limitHeapGrowth(); // before the mount serves requests (cli/mount-memory.ts)

  const mountpoint = path.resolve(c.mountpoint);
  const storeDir = path.resolve(c.store ?? defaultStorePath());
  const { Store } = loadStore();
  if (!(await isStore(storeDir))) {
    if (c.store !== undefined)
      throw new CliError(`${storeDir} is not a chunkfs store (run 'chunkfs mkfs ${c.store}' first)`);
    await mkdirTree(path.dirname(storeDir), 0o700); // private (DESIGN §4)
    const created = await Store.create(storeDir, { disks: DEFAULT_DISKS, layout: DEFAULT_LAYOUT });
    await created.close();
    process.stderr.write(
      `chunkfs: created the default store ${storeDir} (${DEFAULT_DISKS} disks, ${DEFAULT_LAYOUT})\n`,
    );
  }
  const inside = mountpointInsideStore(mountpoint, storeDir);
  if (inside !== null) throw new CliError(inside);
  const made = await prepareMountpoint(mountpoint);
  const unmade = async (err: unknown): Promise<never> => {
    await removeMade(made);
    throw err;
  };
  // Said once the mount stands: a failed one removed it and says one line, its error.
  const sayMade = (): void => {
    if (made.length > 0) process.stderr.write(`chunkfs: created the mount point ${mountpoint}\n`);
  };
  const log = (line: string): void => {
    process.stderr.write(`chunkfs: ${line}\n`);
  };
  // A store a live mount here serves already: this mount point becomes a bind of that mount.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const bind = require('./store-bind') as typeof import('./store-bind');
  const bound = await bind
    .bindToLiveMount(storeDir, mountpoint, c.options, log)
    .catch((err: Error) => unmade(err instanceof bind.BindRefusedError ? new CliError(err.message) : err));
  if (bound !== null) {
    sayMade();
    process.stdout.write(`${bound}\n`);
    return false;
  }
  // Heal what reads served around, commit and reclaim in the background (DESIGN §5), on the
  // injectable Io that `chunkfs inject` reaches.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const metrics =
    c.options.metrics === undefined ? null : new (require('./metrics') as typeof import('./metrics')).Metrics();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { store, faults } = await (require('./live-store') as typeof import('./live-store'))
    .openLiveStore(storeDir, mountpoint, {
      onFlush: metrics === null ? undefined : (s) => metrics.observeFlush(s),
      keyFile: c.options.keyFile,
      readOnly: c.options.readOnly,
      leaseMs: c.options.leaseMs,
    })
    .catch(unmade);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { mountFs } = require('../fs/mount') as typeof import('../fs/mount');
  let mounted: Awaited<ReturnType<typeof mountFs>>;
  let metricsPort = 0;
  try {
    if (metrics !== null)
      metricsPort = await metrics.listen(c.options.metrics!.host, c.options.metrics!.port, store, faults);
    const observeOp = metrics === null ? undefined : (op: string, s: number, r: unknown) => metrics.observeOp(op, s, r);
    mounted = await mountFs(store, mountpoint, {
      ...mountOptions(c.options),
      fsname: fsnameOption(storeDir),
      observeOp,
    });
    const m = mounted;
    metrics?.watchGrants(() => m.readGrantStats());
  } catch (err) {
    await metrics?.close();
    await store.close();
    return unmade(new CliError(`cannot mount ${storeDir} on ${mountpoint}: ${(err as Error).message}`));
  }
  // Every mount point of this mount's FUSE connection: the first and its binds (cli/store-bind.ts).
  const dev = chunkfsDevAt(mountpoint);
  if (dev === null) log(`${mountpoint} is not in /proc/self/mountinfo: a bind of it will not keep this mount serving`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const watchdog = (require('./bind-watchdog') as typeof import('./bind-watchdog')).startBindWatchdog(
    dev,
    storeDir,
    log,
  );
  const mountpoints = (): string[] =>
    dev === null
      ? mountedAt(mountpoint)
        ? [mountpoint]
        : []
      : connectionMounts(dev, storeDir).map((m) => m.mountpoint);
  const options = servedOptionTexts(c.options, mounted, metricsPort);
  const live = {
    faults,
    mountpoint,
    mountpoints,
    dev,
    options,
    pid: process.pid,
    readOnly: c.options.readOnly === true,
    flush: () => mounted.core.wb.flushAll(),
    dropKernelCache: () => mounted.dropKernelCache(),
    readGrants: () => mounted.readGrantStats(),
    memory: (): MountMemory => {
      const m = process.memoryUsage();
      const wb = mounted.core.wb;
      return {
        rssBytes: m.rss,
        heapUsedBytes: m.heapUsed,
        externalBytes: m.external,
        writeBufferBytes: wb.bufferedBytes,
        writeBufferHeldBytes: wb.heldBytes,
        writeBufferMaxBytes: wb.opts.bufferBytesMax,
      };
    },
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const control = await (require('./mount-control') as typeof import('./mount-control'))
    .startControl(store, live, log)
    .catch((err: Error) => {
      log(`no control socket (verbs will not reach this mount): ${err.message}`);
      return null;
    });
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`chunkfs: ${signal}: flushing, unmounting ${mountpoint} and closing the store\n`);
    const closed = Promise.all([control?.close(), metrics?.close()]);
    closed
      .then(() => unmountBinds(mountpoint, mountpoints(), log))
      .then((firstGone) => mounted.unmount(signal === 'unmounted' || firstGone))
      .then(() => store.close())
      .then(
        () => {
          watchdog?.standDown(); // every mount point is gone: nothing for it to unmount
          process.exit(0);
        },
        (err) => {
          process.stderr.write(`chunkfs: unmount failed: ${(err as Error).message}\n`);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // A bug in a background task is logged; it must not take the mount down. In words and
  // the frame that threw; the whole stack with -o debug (DESIGN §7 logs).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { describeError } = require('../fs/errno') as typeof import('../fs/errno');
  const debug = c.options.debug === true;
  process.on('uncaughtException', (err) => log(`uncaught: ${describeError(err, debug)}`));
  process.on('unhandledRejection', (err) => log(`unhandled rejection: ${describeError(err, debug)}`));
  // Keeps the process alive (the FUSE thread's handles are unref'd), and notices an unmount from
  // outside (chunkfs umount, fusermount -u) of the last mount point of this connection: then flush,
  // close the store and exit. While a bind remains the kernel keeps the connection (no DESTROY yet).
  setInterval(() => {
    if (!stopping && mountpoints().length === 0) stop('unmounted');
  }, UNMOUNT_POLL_MS);
  const served =
    metrics === null
      ? ''
      : `, metrics on http://${c.options.metrics!.host.includes(':') ? `[${c.options.metrics!.host}]` : c.options.metrics!.host}:${metricsPort}/metrics`;
  sayMade();
  process.stdout.write(
    `chunkfs: mounted ${storeDir} on ${mountpoint} (pid ${process.pid}, transport ${mounted.transport}${live.readOnly ? ', read-only' : ''}${served})\n`,
  );
  return true;
}

/**
 * The options this mount serves with, each as -o spells it (defaults filled in): a second mount of
 * the store is a bind of this one only if it names none that differ (cli/bind-options.ts).
 */
function servedOptionTexts(o: MountCliOptions, mounted: MountedFs, metricsPort: number): Record<string, string> {
  const root = process.getuid?.() === 0;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { setIdDefaults } = require('../fs/mount-flags') as typeof import('../fs/mount-flags');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { optionTexts } = require('./bind-options') as typeof import('./bind-options');
  const core = mounted.core.opts;
  return optionTexts({
    ...o,
    ...setIdDefaults(o, root),
    transport: mounted.transport,
    bufferBytesMax: core.bufferBytesMax,
    flushDelayMs: core.flushDelayMs,
    allowOther: o.allowOther ?? root,
    writebackCache: o.writebackCache ?? false,
    spinUs: o.spinUs ?? SPIN_US_DEFAULT,
    acl: o.acl ?? true,
    atime: core.atime ?? 'relatime',
    readOnly: o.readOnly === true,
    keyFile: o.keyFile === undefined ? undefined : path.resolve(o.keyFile),
    metrics: o.metrics === undefined ? undefined : { ...o.metrics, port: metricsPort },
  });
}

/**
 * At a stop by signal, the binds of this mount are unmounted too (lazily, as the first mount is):
 * left behind they would answer ENOTCONN. True when the first mount point is gone already.
 */
async function unmountBinds(first: string, all: string[], log: (line: string) => void): Promise<boolean> {
  for (const mp of all.filter((m) => m !== first)) {
    const r = await run('fusermount', ['-uz', mp]);
    if (r.code !== 0) log(`cannot unmount the bind ${mp}: ${r.out.trim()}`);
  }
  return !all.includes(first);
}

function mountOptions(o: MountCliOptions): import('../fs/mount').MountOptions {
  return {
    bufferBytesMax: o.bufferBytesMax,
    flushDelayMs: o.flushDelayMs,
    allowOther: o.allowOther,
    debug: o.debug,
    readOnly: o.readOnly,
    transport: o.transport,
    writebackCache: o.writebackCache,
    spinUs: o.spinUs,
    atime: o.atime,
    suid: o.suid,
    dev: o.dev,
    acl: o.acl,
  };
}

async function cmdUmount(c: Extract<Command, { verb: 'umount' }>): Promise<void> {
  const mountpoint = path.resolve(c.mountpoint);
  if (!mountedAt(mountpoint)) throw new CliError(`${mountpoint} is not mounted`);
  const entry = mountInfoTable()
    .filter((m) => m.mountpoint === mountpoint)
    .pop();
  // Read before the unmount: the mount process that holds the store, if this is its last mount point.
  const served = entry === undefined ? [] : connectionMounts(entry.dev, entry.source).map((m) => m.mountpoint);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const closing = require('./umount-wait') as typeof import('./umount-wait');
  const holder = entry === undefined || c.lazy ? null : closing.mountHolderOf(entry.source, served);
  const r = await run('fusermount', [c.lazy ? '-uz' : '-u', mountpoint]);
  if (r.code !== 0)
    throw new CliError(`cannot unmount ${mountpoint}: ${r.out.trim()}${c.lazy ? '' : ' (busy? try --lazy)'}`);
  // The other mount points of its connection (binds, cli/store-bind.ts) keep the mount process serving.
  const rest = entry === undefined ? [] : connectionMounts(entry.dev, entry.source).map((m) => m.mountpoint);
  const closed = rest.length === 0 && holder !== null ? await closing.waitForClose(holder) : 'closed';
  if (closed !== 'closed' && holder !== null) {
    const { pid, storeDir } = holder;
    throw new CliError(
      closed === 'stopped'
        ? `unmounted ${mountpoint}, but its mount process (pid ${pid}) is stopped and cannot close the store ` +
          `${storeDir}: kill -CONT ${pid} lets it finish; the store stays locked until it does`
        : `unmounted ${mountpoint}, but its mount process (pid ${pid}) has not closed the store ${storeDir} ` +
          `after ${closing.UMOUNT_CLOSE_WAIT_MS / 1000} s (still flushing? see its log); ` +
          'the store stays locked until it does',
    );
  }
  process.stdout.write(
    `chunkfs: unmounted ${mountpoint}${rest.length > 0 ? ` (${entry!.source} stays mounted on ${rest.join(' and ')})` : ''}\n`,
  );
}

export async function main(argv: string[]): Promise<number> {
  // `chunkfs inspect ... | head`: a reader that stops early is not an error of ours (cli/stdio.ts).
  guardStdio();
  let cmd: Command;
  try {
    cmd = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    // One line, the error and where the usage is: a page of help after it would bury it.
    const verb = err.verb && HELP[err.verb] !== undefined ? ` ${err.verb}` : '';
    process.stderr.write(`chunkfs${verb}: ${err.message}; 'chunkfs${verb} --help' shows the usage\n`);
    return 2;
  }
  try {
    switch (cmd.verb) {
      case 'help':
        process.stdout.write(`${HELP[cmd.topic ?? ''] ?? HELP['']}\n`);
        return 0;
      case 'mkfs':
        await cmdMkfs(cmd);
        return 0;
      case 'mount':
        return (await cmdMount(cmd)) ? -1 : 0; // -1: keeps running until a signal
      case 'umount':
        await cmdUmount(cmd);
        return 0;
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'status':
        return await (require('./verbs/status') as typeof import('./verbs/status')).statusVerb(cmd);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'scrub':
        return await (require('./verbs/scrub') as typeof import('./verbs/scrub')).scrubVerb(cmd);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'heal':
        return await (require('./verbs/heal') as typeof import('./verbs/heal')).healVerb(cmd);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'fsck':
        return await (require('./verbs/fsck') as typeof import('./verbs/fsck')).fsckVerb(cmd);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'replace-disk':
        return await (require('./verbs/replace-disk') as typeof import('./verbs/replace-disk')).replaceDiskVerb(cmd);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'compact':
        return await (require('./verbs/compact') as typeof import('./verbs/compact')).compactVerb(cmd);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'inspect':
        return await (require('./verbs/inspect') as typeof import('./verbs/inspect')).inspectVerb(cmd);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'version':
        process.stdout.write((require('./verbs/version') as typeof import('./verbs/version')).versionText());
        return 0;
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'inject':
        return await (require('./verbs/inject') as typeof import('./verbs/inject')).injectVerb(cmd);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      case 'meta':
        return await (require('./verbs/meta-copy') as typeof import('./verbs/meta-copy')).metaCopyVerb(cmd);
    }
  } catch (err) {
    const msg = err instanceof CliError ? err.message : err instanceof Error ? err.message : String(err);
    process.stderr.write(`chunkfs ${cmd.verb === 'meta' ? `meta ${cmd.action}` : cmd.verb}: ${msg}\n`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`chunkfs: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
