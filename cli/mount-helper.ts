// The mount(8) helper (DESIGN §7): `mount -t fuse.chunkfs STORE MNT -o ...` and fstab lines
// of type fuse.chunkfs run /sbin/mount.fuse.chunkfs STORE MNT [-sfnv] [-o OPTIONS] (installed by
// scripts/install-mount-helper.sh). It drops the options that are mount(8)'s own, starts
// `chunkfs mount` in the background with its log in <store>/chunkfs.log (or -o log=PATH), waits until
// it is mounted and returns; a mount that fails says why and leaves nothing running. `umount MNT`
// then works as usual: the mount process sees its mount gone, flushes and exits.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { remount } from './remount';

/**
 * mount(8)'s own options, and flags the kernel already applies to every FUSE mount: not chunkfs's.
 * noatime, relatime and strictatime go on to chunkfs, which keeps atime itself (fs/atime.ts);
 * suid/nosuid and dev/nodev go to chunkfs mount, which sets them (fs/mount-flags.ts).
 */
const MOUNT8_OPTIONS = new Set([
  'defaults',
  'auto',
  'noauto',
  'user',
  'nouser',
  'users',
  'owner',
  'group',
  '_netdev',
  'nofail',
  'exec',
  'noexec',
  'atime',
  'nodiratime',
  'diratime',
  'sync',
  'async',
  'dirsync',
  'lazytime',
  'nolazytime',
  'silent',
  'loud',
  'iversion',
  'noiversion',
  'mand',
  'nomand',
]);
export const READY_TIMEOUT_MS = 60_000;
const READY_POLL_MS = 100;
const LOG_TAIL_BYTES = 4096;
const ARGS_MAX = 256;
const CLI_JS = path.join(__dirname, 'cli.js');

export class HelperUsageError extends Error {}

export interface HelperArgs {
  store: string;
  mountpoint: string;
  /** Options passed on to chunkfs mount. */
  options: string[];
  logPath: string;
  fake: boolean;
  verbose: boolean;
  /** -o remount: change the generic flags of the live mount at mountpoint (cli/remount.ts). */
  remount: boolean;
  /** Every -o option as given (a remount picks its flags from them). */
  rawOptions: string[];
}

/** mount.fuse.chunkfs STORE MNT [-sfnv] [-N NS] [-t TYPE] [-o OPTS]... (util-linux's helper convention). */
export function parseHelperArgs(argv: string[]): HelperArgs {
  if (argv.length > ARGS_MAX) throw new HelperUsageError('too many arguments');
  const pos: string[] = [];
  const opts: string[] = [];
  let sloppy = false;
  let fake = false;
  let verbose = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-o') {
      opts.push(...(argv[++i] ?? '').split(','));
      continue;
    }
    if (a.startsWith('-o') && a.length > 2) {
      opts.push(...a.slice(2).split(','));
      continue;
    }
    if (a === '-t' || a === '-N') {
      i++;
      continue;
    }
    if (/^-[sfnvr]+$/.test(a)) {
      sloppy ||= a.includes('s');
      fake ||= a.includes('f');
      verbose ||= a.includes('v');
      if (a.includes('r')) opts.push('ro');
      continue;
    }
    if (a.startsWith('-')) throw new HelperUsageError(`unknown flag '${a}'`);
    pos.push(a);
  }
  if (pos.length !== 2) throw new HelperUsageError('usage: mount.fuse.chunkfs STORE MOUNTPOINT [-o OPTIONS]');
  const store = path.resolve(pos[0]);
  let logPath = path.join(store, 'chunkfs.log');
  const options: string[] = [];
  const rawOptions = opts.map((x) => x.trim()).filter((x) => x !== '');
  for (const o of rawOptions) {
    if (o.startsWith('log=')) logPath = path.resolve(o.slice(4));
    else if (MOUNT8_OPTIONS.has(o) || o.startsWith('x-') || o.startsWith('comment=')) continue;
    else if (
      !sloppy ||
      /^(buffer_mb|flush_ms|metrics|spin_us)=|^(allow_other|noallow_other|ro|rw|debug|noatime|relatime|strictatime|suid|nosuid|dev|nodev|acl|noacl)$/.test(
        o,
      )
    )
      options.push(o);
  }
  return {
    store,
    mountpoint: path.resolve(pos[1]),
    options,
    logPath,
    fake,
    verbose,
    remount: rawOptions.includes('remount'),
    rawOptions,
  };
}

function tail(file: string, fromBytes: number): string {
  try {
    const text = fs.readFileSync(file).subarray(fromBytes).toString('utf8');
    return text.length > LOG_TAIL_BYTES ? text.slice(-LOG_TAIL_BYTES) : text;
  } catch {
    return '';
  }
}

/** Start chunkfs mount in its own session, logging to a file; resolve when it says it is mounted. */
export async function startBackgroundMount(a: HelperArgs): Promise<string> {
  const fd = fs.openSync(a.logPath, 'a', 0o600);
  const from = fs.fstatSync(fd).size;
  const args = [CLI_JS, 'mount', a.store, a.mountpoint, ...(a.options.length > 0 ? ['-o', a.options.join(',')] : [])];
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  let exited: number | null = null;
  child.on('exit', (code, signal) => {
    exited = code ?? (signal !== null ? 128 : 1);
  });
  for (let waited = 0; waited < READY_TIMEOUT_MS; waited += READY_POLL_MS) {
    const ready = tail(a.logPath, from)
      .split('\n')
      .find((l) => l.startsWith('chunkfs: mounted '));
    if (ready !== undefined) {
      child.unref();
      return ready;
    }
    if (exited !== null) throw new Error(`chunkfs mount failed (exit ${exited}): ${tail(a.logPath, from).trim()}`);
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
  child.kill('SIGTERM');
  throw new Error(`chunkfs mount did not come up in ${READY_TIMEOUT_MS / 1000} s; see ${a.logPath}`);
}

export async function helperMain(argv: string[]): Promise<number> {
  let a: HelperArgs;
  try {
    a = parseHelperArgs(argv);
  } catch (err) {
    process.stderr.write(`mount.fuse.chunkfs: ${(err as Error).message}\n`);
    return 1;
  }
  if (a.fake) return 0;
  if (a.remount) {
    try {
      await remount(a.mountpoint, a.rawOptions);
      return 0;
    } catch (err) {
      process.stderr.write(`mount.fuse.chunkfs: ${(err as Error).message}\n`);
      return 32;
    }
  }
  if (!fs.existsSync(path.join(a.store, 'chunkfs.json'))) {
    process.stderr.write(`mount.fuse.chunkfs: ${a.store} is not a chunkfs store (chunkfs mkfs makes one)\n`);
    return 32;
  }
  try {
    const ready = await startBackgroundMount(a);
    if (a.verbose) process.stdout.write(`${ready} (log: ${a.logPath})\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`mount.fuse.chunkfs: ${(err as Error).message}\n`);
    return 32; // mount(8): mount failure
  }
}

if (require.main === module) {
  helperMain(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`mount.fuse.chunkfs: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
