// Command-line parsing for the chunkfs CLI: pure (strings in, a typed command out), so every usage
// error is found before anything touches a disk. Errors name the problem; the CLI prints them and
// exits non-zero.

import { UsageError } from './usage-error';
import { parseSize } from './sizes';
import { MOUNT_TOOL_OPTIONS_TEXT, MountToolOptions, parseMountToolOption } from './mount-tool-options';
import { TOOL_HELP, TOOL_SYNOPSIS, TOOL_VERBS, ToolCommand, parseToolVerb } from './tool-args';
import { META_HELP, META_SYNOPSIS, MetaCommand, parseMetaVerb } from './meta-args';
import { SPIN_US_DEFAULT, SPIN_US_MAX } from '../fs/fuse/transport';

export { UsageError, parseSize };

export type Command =
  | { verb: 'help'; topic?: string }
  | { verb: 'version' }
  | {
      verb: 'mkfs';
      store: string;
      disks?: number | string[];
      layout?: string;
      chunkSizeBytes?: number;
      bitrotBlockBytes?: number;
      keyFile?: string;
      meta?: string;
    }
  | { verb: 'mount'; store?: string; mountpoint: string; options: MountCliOptions }
  | { verb: 'umount'; mountpoint: string; lazy: boolean }
  | ToolCommand
  | MetaCommand;

export type TransportChoice = 'fuse3' | 'fuse-native';
export interface MountCliOptions extends MountToolOptions {
  bufferBytesMax?: number;
  flushDelayMs?: number;
  allowOther?: boolean;
  transport?: TransportChoice;
  writebackCache?: boolean;
  /** -o spin_us=N: microseconds the JS thread keeps reading /dev/fuse after answering (fs/fuse/transport.ts). */
  spinUs?: number;
  /** -o relatime (default) / strictatime / noatime: when reads move atime (fs/atime.ts). */
  atime?: 'relatime' | 'strictatime' | 'noatime';
  /** suid / nosuid, dev / nodev (default: on when mounted by root, fs/mount.ts). */
  suid?: boolean;
  dev?: boolean;
  /** acl (default) / noacl: POSIX ACLs (fuse3 only; fs/acl.ts). */
  acl?: boolean;
  /** -o keyfile=PATH: the store key of encrypted layouts (store/store-key.ts). */
  keyFile?: string;
  /** -o lease_ms=N: how long the store's lease on PostgreSQL lasts unrenewed (DESIGN §9 "Lease and fencing"). */
  leaseMs?: number;
}
const TRANSPORT_CHOICES: readonly TransportChoice[] = ['fuse3', 'fuse-native'];

export const VERBS = ['mkfs', 'mount', 'umount', ...TOOL_VERBS, 'meta'] as const;
const DISKS_MAX = 256;
/** -o dispatch=threads was a second way to read FUSE requests; it measured slower (native/fuse3/session.h). */
const DISPATCH_REMOVED =
  "mount option 'dispatch' was removed (the JS thread always reads the requests): drop it from the options";
const ARGS_MAX = 1024;

function positiveInt(verb: string, flag: string, text: string, max: number): number {
  if (!/^[0-9]+$/.test(text)) throw new UsageError(verb, `${flag}: '${text}' is not a whole number`);
  const n = Number(text);
  if (n < 1 || n > max) throw new UsageError(verb, `${flag}: ${n} is out of range 1..${max}`);
  return n;
}

function nonNegativeInt(verb: string, flag: string, text: string, max: number): number {
  if (!/^[0-9]+$/.test(text)) throw new UsageError(verb, `${flag}: '${text}' is not a whole number`);
  const n = Number(text);
  if (n > max) throw new UsageError(verb, `${flag}: ${n} is out of range 0..${max}`);
  return n;
}

/** Splits argv into flags (with their values) and positionals, per verb. */
function takeValue(verb: string, args: string[], i: number, flag: string): string {
  const v = args[i + 1];
  if (v === undefined || (v.startsWith('-') && v.length > 1)) throw new UsageError(verb, `${flag} needs a value`);
  return v;
}

export function parseArgs(argv: string[]): Command {
  if (argv.length > ARGS_MAX) throw new UsageError('', 'too many arguments');
  const [verb, ...rest] = argv;
  if (verb === undefined || verb === '--help' || verb === '-h' || verb === 'help')
    return { verb: 'help', topic: rest[0] };
  if (verb === '--version' || verb === '-V' || verb === 'version') return { verb: 'version' };
  if (!(VERBS as readonly string[]).includes(verb))
    throw new UsageError('', `unknown command '${verb}' (expected one of: ${VERBS.join(', ')})`);
  if (rest.includes('--help') || rest.includes('-h')) return { verb: 'help', topic: verb };
  switch (verb) {
    case 'mkfs':
      return parseMkfs(rest);
    case 'mount':
      return parseMount(rest);
    case 'umount':
      return parseUmount(rest);
    case 'meta':
      return parseMetaVerb(rest);
    default:
      return parseToolVerb(verb as (typeof TOOL_VERBS)[number], rest);
  }
}

function parseMkfs(args: string[]): Command {
  const pos: string[] = [];
  const disks: string[] = [];
  let diskCount: number | undefined;
  const cmd: Extract<Command, { verb: 'mkfs' }> = { verb: 'mkfs', store: '' };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--disks') {
      diskCount = positiveInt('mkfs', a, takeValue('mkfs', args, i, a), DISKS_MAX);
      i++;
    } else if (a === '--disk') {
      disks.push(takeValue('mkfs', args, i, a));
      i++;
    } else if (a === '--layout') {
      cmd.layout = takeValue('mkfs', args, i, a);
      i++;
    } else if (a === '--chunk-size') {
      cmd.chunkSizeBytes = parseSize('mkfs', a, takeValue('mkfs', args, i, a));
      i++;
    } else if (a === '--bitrot-block') {
      cmd.bitrotBlockBytes = parseSize('mkfs', a, takeValue('mkfs', args, i, a));
      i++;
    } else if (a === '--keyfile') {
      cmd.keyFile = takeValue('mkfs', args, i, a);
      i++;
    } else if (a === '--meta') {
      cmd.meta = takeValue('mkfs', args, i, a);
      i++;
    } else if (a.startsWith('-')) throw new UsageError('mkfs', `unknown option '${a}'`);
    else pos.push(a);
  }
  if (pos.length !== 1)
    throw new UsageError('mkfs', pos.length === 0 ? 'missing <store> directory' : `unexpected argument '${pos[1]}'`);
  if (diskCount !== undefined && disks.length > 0)
    throw new UsageError('mkfs', 'use either --disks N or --disk PATH, not both');
  if (disks.length > DISKS_MAX) throw new UsageError('mkfs', `at most ${DISKS_MAX} disks`);
  if (cmd.layout !== undefined && !/^(replica:[0-9]+|ec:[0-9]+\+[0-9]+)(,[a-z0-9:]+)*$/.test(cmd.layout)) {
    throw new UsageError(
      'mkfs',
      `--layout: '${cmd.layout}' is not replica:R or ec:K+M, then transforms (,zstd ,lz4 ,aes256gcm)`,
    );
  }
  cmd.store = pos[0];
  if (disks.length > 0) cmd.disks = disks;
  else if (diskCount !== undefined) cmd.disks = diskCount;
  return cmd;
}

/** -o buffer_mb=N,flush_ms=N,allow_other,noallow_other */
export function parseMountOptions(text: string): MountCliOptions {
  const o: MountCliOptions = {};
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)) {
    const [key, value] = item.split('=', 2);
    if (key === 'buffer_mb') o.bufferBytesMax = positiveInt('mount', 'buffer_mb', value ?? '', 1 << 16) << 20;
    else if (key === 'flush_ms') o.flushDelayMs = positiveInt('mount', 'flush_ms', value ?? '', 3_600_000);
    else if (key === 'allow_other' && value === undefined) o.allowOther = true;
    else if (key === 'noallow_other' && value === undefined) o.allowOther = false;
    else if (key === 'transport') o.transport = transportChoice(value ?? '');
    else if (key === 'writeback_cache' && value === undefined) o.writebackCache = true;
    else if (key === 'nowriteback_cache' && value === undefined) o.writebackCache = false;
    else if (key === 'dispatch') throw new UsageError('mount', DISPATCH_REMOVED);
    else if (key === 'spin_us') o.spinUs = nonNegativeInt('mount', 'spin_us', value ?? '', SPIN_US_MAX);
    else if ((key === 'relatime' || key === 'strictatime' || key === 'noatime') && value === undefined) o.atime = key;
    else if ((key === 'suid' || key === 'nosuid') && value === undefined) o.suid = key === 'suid';
    else if ((key === 'dev' || key === 'nodev') && value === undefined) o.dev = key === 'dev';
    else if ((key === 'acl' || key === 'noacl') && value === undefined) o.acl = key === 'acl';
    else if (key === 'keyfile' && value !== undefined && value !== '') o.keyFile = value;
    else if (key === 'lease_ms') o.leaseMs = leaseMsOf(value ?? '');
    else if (parseMountToolOption(key, value) !== null) Object.assign(o, parseMountToolOption(key, value));
    // An unknown option must not reach FUSE: it would leave a stale mount behind.
    else
      throw new UsageError(
        'mount',
        `unknown mount option '${item}' (known: buffer_mb=N, flush_ms=N, allow_other, noallow_other, transport=fuse3|fuse-native, writeback_cache, nowriteback_cache, spin_us=N, relatime, strictatime, noatime, suid, nosuid, dev, nodev, acl, noacl, keyfile=PATH, lease_ms=N, ${MOUNT_TOOL_OPTIONS_TEXT})`,
      );
  }
  return o;
}

/** The shortest lease -o lease_ms takes: renewals run every third of it, each a round trip. */
const LEASE_MS_MIN = 1000;
/** The longest: a fail-over waits this long for a holder that is gone. */
const LEASE_MS_MAX = 600_000;

function leaseMsOf(text: string): number {
  const ms = positiveInt('mount', 'lease_ms', text, LEASE_MS_MAX);
  if (ms < LEASE_MS_MIN) throw new UsageError('mount', `lease_ms: ${ms} is below ${LEASE_MS_MIN}`);
  return ms;
}

function transportChoice(text: string): TransportChoice {
  const t = TRANSPORT_CHOICES.find((c) => c === text);
  if (t === undefined)
    throw new UsageError('mount', `transport: '${text}' is not one of ${TRANSPORT_CHOICES.join(', ')}`);
  return t;
}

function parseMount(args: string[]): Command {
  const pos: string[] = [];
  let options: MountCliOptions = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '-o') {
      options = { ...options, ...parseMountOptions(takeValue('mount', args, i, a)) };
      i++;
    } else if (a.startsWith('-o') && a.length > 2) options = { ...options, ...parseMountOptions(a.slice(2)) };
    else if (a.startsWith('-')) throw new UsageError('mount', `unknown option '${a}'`);
    else pos.push(a);
  }
  if (pos.length === 0) throw new UsageError('mount', 'missing <mountpoint>');
  if (pos.length > 2) throw new UsageError('mount', `unexpected argument '${pos[2]}'`);
  return pos.length === 2
    ? { verb: 'mount', store: pos[0], mountpoint: pos[1], options }
    : { verb: 'mount', mountpoint: pos[0], options };
}

function parseUmount(args: string[]): Command {
  const lazy = args.includes('--lazy') || args.includes('-z');
  const pos = args.filter((a) => a !== '--lazy' && a !== '-z');
  const bad = pos.find((a) => a.startsWith('-'));
  if (bad !== undefined) throw new UsageError('umount', `unknown option '${bad}'`);
  if (pos.length !== 1)
    throw new UsageError('umount', pos.length === 0 ? 'missing <mountpoint>' : `unexpected argument '${pos[1]}'`);
  return { verb: 'umount', mountpoint: pos[0], lazy };
}

export const HELP: Record<string, string> = {
  '': `usage: chunkfs <command> [options]

commands:
  mkfs <store> [--disks N | --disk PATH ...] [--layout replica:3|ec:K+M[,zstd|,lz4][,aes256gcm]] [--chunk-size SIZE] [--bitrot-block SIZE] [--keyfile PATH] [--meta CONNINFO]
  mount [<store>] <mountpoint> [-o opt,...]
  umount <mountpoint>
${TOOL_SYNOPSIS}
${META_SYNOPSIS}

TARGET is a store directory, a chunkfs mount point, or nothing (the default store). While the store is
mounted these commands reach the mount through its control socket, else they open the store.
Run 'chunkfs <command> --help' for one command; 'chunkfs --version' for the version.`,
  mkfs: `usage: chunkfs mkfs <store> [--disks N | --disk PATH ...] [--layout replica:3|ec:K+M[,zstd|,lz4][,aes256gcm]] [--chunk-size SIZE] [--bitrot-block SIZE] [--keyfile PATH] [--meta CONNINFO]

Create a chunk store in the directory <store>.
  --disks N          make N disk directories inside the store (default 6)
  --disk PATH        use PATH as a disk (repeat; ideally one per device)
  --layout L         default layout of new files: replica:R or ec:K+M (default replica:3), then transforms:
                     ,zstd (or ,zstd:1..19) or ,lz4 to compress; ,aes256gcm to encrypt (e.g. ec:4+2,zstd,aes256gcm)
  --keyfile PATH     keep the store key (of encrypted layouts) at PATH, made there if absent, instead of
                     <store>/data.key; then mount with -o keyfile=PATH
  --chunk-size SIZE  chunk size, e.g. 4M (default 4 MiB)
  --bitrot-block SIZE  bitrot block, a multiple of 4K (default 16K)
  --meta CONNINFO    keep the metadata in PostgreSQL instead of <store>/meta.db: an empty database named by a
                     libpq connection string, e.g. postgres://user@host/db, postgresql://user@/db?host=/run/postgresql
                     or 'host=/run/postgresql dbname=db'; never with a password (give it in PGPASSWORD or
                     ~/.pgpass); recorded in chunkfs.json`,
  mount: `usage: chunkfs mount [<store>] <mountpoint> [-o opt,...]

Mount a store in the foreground; prints one line when ready; Ctrl-C (SIGINT) or SIGTERM flushes and
unmounts. Without <store>, uses $XDG_DATA_HOME/chunkfs/default (else ~/.local/share/chunkfs/default),
created on first use with 6 disks and replica:3. A stale mount point left by a crash is recovered;
a live one is refused. A store a live mount here serves already is mounted as a bind of that mount
(root; same options or none; -o ro for a read-only one), and the command returns once it is made.
  -o buffer_mb=N     write-back buffer limit in MiB (default 5% of RAM, 64..128)
  -o flush_ms=N      flush a dirty file this long after its first buffered write (default 5000)
  -o allow_other     let other users in (default when run as root); noallow_other to refuse them
  -o ro              read-only: every change is refused (EROFS); the store still heals what reads find
  -o debug           log whole stacks with errors (otherwise one line per event)
  -o metrics=HOST:PORT  serve Prometheus metrics on http://HOST:PORT/metrics (off by default)
  -o transport=T     fuse3 (default: our libfuse3 low-level binding) or fuse-native (libfuse 2, path-based)
  -o writeback_cache let the kernel cache written pages (fuse3 only; nowriteback_cache to turn it off)
  -o spin_us=N       fuse3: after answering every request of a wake-up, the JS thread keeps reading
                     for N microseconds before sleeping (default ${SPIN_US_DEFAULT}; 0: sleep at once)
  -o noatime         reads never move atime; -o strictatime: every read does; default relatime (when
                     atime is not after mtime/ctime or is a day old), written in batches once a second
  -o nosuid,nodev    ignore set-id bits, refuse device files (default when not mounted by root;
                     mounted by root, set-id binaries run and device files work: suid,dev)
  -o noacl           no POSIX ACLs (setfacl answers EOPNOTSUPP); default acl (fuse3 only)
  -o keyfile=PATH    the store key, when mkfs kept it outside the store (--keyfile); a wrong or missing
                     key is refused before anything changes
  -o lease_ms=N      metadata on PostgreSQL: the store's lease lasts N ms unrenewed (default 15000,
                     ${LEASE_MS_MIN}..${LEASE_MS_MAX}): a fail-over mount waits this long for a holder that is
                     gone; a holder paused longer loses the lease and turns read-only (EROFS)
A live mount answers the other chunkfs commands through <store>/chunkfs.sock.`,
  umount: `usage: chunkfs umount <mountpoint> [--lazy]

Unmount a chunkfs mount and wait (up to 60 s) until its mount process has flushed and closed the store.
--lazy detaches it even while busy, and does not wait.`,
  ...TOOL_HELP,
  meta: META_HELP,
};
