// Command-line parsing for the chunkfs CLI: pure (strings in, a typed command out), so every usage
// error is found before anything touches a disk. Errors name the problem; the CLI prints them and
// exits non-zero.

export class UsageError extends Error {
  constructor(readonly verb: string, message: string) {
    super(message);
  }
}

export type Command =
  | { verb: 'help'; topic?: string }
  | { verb: 'mkfs'; store: string; disks?: number | string[]; layout?: string; chunkSizeBytes?: number; bitrotBlockBytes?: number }
  | { verb: 'mount'; store?: string; mountpoint: string; options: MountCliOptions }
  | { verb: 'umount'; mountpoint: string; lazy: boolean }
  | { verb: 'status'; store: string; json: boolean }
  | { verb: 'scrub'; store: string; repair: boolean; json: boolean };

export type TransportChoice = 'fuse3' | 'fuse-native';
export interface MountCliOptions {
  bufferBytesMax?: number; flushDelayMs?: number; allowOther?: boolean;
  transport?: TransportChoice; writebackCache?: boolean;
}
const TRANSPORT_CHOICES: readonly TransportChoice[] = ['fuse3', 'fuse-native'];

export const VERBS = ['mkfs', 'mount', 'umount', 'status', 'scrub'] as const;
const DISKS_MAX = 256;
const ARGS_MAX = 1024;

const SIZE_RE = /^([0-9]+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?$/i;
const SIZE_UNIT: Record<string, number> = { b: 1, k: 1024, kb: 1024, kib: 1024, m: 1 << 20, mb: 1 << 20, mib: 1 << 20, g: 1 << 30, gb: 1 << 30, gib: 1 << 30 };

/** "4M", "16KiB", "4194304" -> bytes (binary units). */
export function parseSize(verb: string, flag: string, text: string): number {
  const m = SIZE_RE.exec(text.trim());
  if (m === null) throw new UsageError(verb, `${flag}: '${text}' is not a size (e.g. 4M, 16K, 65536)`);
  const n = Number(m[1]) * SIZE_UNIT[(m[2] ?? 'b').toLowerCase()];
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(verb, `${flag}: '${text}' is out of range`);
  return n;
}

function positiveInt(verb: string, flag: string, text: string, max: number): number {
  if (!/^[0-9]+$/.test(text)) throw new UsageError(verb, `${flag}: '${text}' is not a whole number`);
  const n = Number(text);
  if (n < 1 || n > max) throw new UsageError(verb, `${flag}: ${n} is out of range 1..${max}`);
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
  if (verb === undefined || verb === '--help' || verb === '-h' || verb === 'help') return { verb: 'help', topic: rest[0] };
  if (!(VERBS as readonly string[]).includes(verb)) throw new UsageError('', `unknown command '${verb}' (expected one of: ${VERBS.join(', ')})`);
  if (rest.includes('--help') || rest.includes('-h')) return { verb: 'help', topic: verb };
  switch (verb) {
    case 'mkfs': return parseMkfs(rest);
    case 'mount': return parseMount(rest);
    case 'umount': return parseUmount(rest);
    case 'scrub': return parseScrub(rest);
    default: return parseStatus(rest);
  }
}

function parseMkfs(args: string[]): Command {
  const pos: string[] = [];
  const disks: string[] = [];
  let diskCount: number | undefined;
  const cmd: Extract<Command, { verb: 'mkfs' }> = { verb: 'mkfs', store: '' };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--disks') { diskCount = positiveInt('mkfs', a, takeValue('mkfs', args, i, a), DISKS_MAX); i++; }
    else if (a === '--disk') { disks.push(takeValue('mkfs', args, i, a)); i++; }
    else if (a === '--layout') { cmd.layout = takeValue('mkfs', args, i, a); i++; }
    else if (a === '--chunk-size') { cmd.chunkSizeBytes = parseSize('mkfs', a, takeValue('mkfs', args, i, a)); i++; }
    else if (a === '--bitrot-block') { cmd.bitrotBlockBytes = parseSize('mkfs', a, takeValue('mkfs', args, i, a)); i++; }
    else if (a.startsWith('-')) throw new UsageError('mkfs', `unknown option '${a}'`);
    else pos.push(a);
  }
  if (pos.length !== 1) throw new UsageError('mkfs', pos.length === 0 ? 'missing <store> directory' : `unexpected argument '${pos[1]}'`);
  if (diskCount !== undefined && disks.length > 0) throw new UsageError('mkfs', 'use either --disks N or --disk PATH, not both');
  if (disks.length > DISKS_MAX) throw new UsageError('mkfs', `at most ${DISKS_MAX} disks`);
  if (cmd.layout !== undefined && !/^(replica:[0-9]+|ec:[0-9]+\+[0-9]+)$/.test(cmd.layout)) {
    throw new UsageError('mkfs', `--layout: '${cmd.layout}' is not replica:R or ec:K+M`);
  }
  cmd.store = pos[0];
  if (disks.length > 0) cmd.disks = disks;
  else if (diskCount !== undefined) cmd.disks = diskCount;
  return cmd;
}

/** -o buffer_mb=N,flush_ms=N,allow_other,noallow_other,transport=T,writeback_cache,nowriteback_cache */
export function parseMountOptions(text: string): MountCliOptions {
  const o: MountCliOptions = {};
  for (const item of text.split(',').map((s) => s.trim()).filter((s) => s.length > 0)) {
    const [key, value] = item.split('=', 2);
    if (key === 'buffer_mb') o.bufferBytesMax = positiveInt('mount', 'buffer_mb', value ?? '', 1 << 16) << 20;
    else if (key === 'flush_ms') o.flushDelayMs = positiveInt('mount', 'flush_ms', value ?? '', 3_600_000);
    else if (key === 'allow_other' && value === undefined) o.allowOther = true;
    else if (key === 'noallow_other' && value === undefined) o.allowOther = false;
    else if (key === 'transport') o.transport = transportChoice(value ?? '');
    else if (key === 'writeback_cache' && value === undefined) o.writebackCache = true;
    else if (key === 'nowriteback_cache' && value === undefined) o.writebackCache = false;
    // An unknown option must not reach FUSE: it would leave a stale mount behind.
    else throw new UsageError('mount', `unknown mount option '${item}' (known: buffer_mb=N, flush_ms=N, allow_other, noallow_other, transport=fuse3|fuse-native, writeback_cache, nowriteback_cache)`);
  }
  return o;
}

function transportChoice(text: string): TransportChoice {
  const t = TRANSPORT_CHOICES.find((c) => c === text);
  if (t === undefined) throw new UsageError('mount', `transport: '${text}' is not one of ${TRANSPORT_CHOICES.join(', ')}`);
  return t;
}

function parseMount(args: string[]): Command {
  const pos: string[] = [];
  let options: MountCliOptions = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '-o') { options = { ...options, ...parseMountOptions(takeValue('mount', args, i, a)) }; i++; }
    else if (a.startsWith('-o') && a.length > 2) options = { ...options, ...parseMountOptions(a.slice(2)) };
    else if (a.startsWith('-')) throw new UsageError('mount', `unknown option '${a}'`);
    else pos.push(a);
  }
  if (pos.length === 0) throw new UsageError('mount', 'missing <mountpoint>');
  if (pos.length > 2) throw new UsageError('mount', `unexpected argument '${pos[2]}'`);
  return pos.length === 2 ? { verb: 'mount', store: pos[0], mountpoint: pos[1], options } : { verb: 'mount', mountpoint: pos[0], options };
}

function parseUmount(args: string[]): Command {
  const lazy = args.includes('--lazy') || args.includes('-z');
  const pos = args.filter((a) => a !== '--lazy' && a !== '-z');
  const bad = pos.find((a) => a.startsWith('-'));
  if (bad !== undefined) throw new UsageError('umount', `unknown option '${bad}'`);
  if (pos.length !== 1) throw new UsageError('umount', pos.length === 0 ? 'missing <mountpoint>' : `unexpected argument '${pos[1]}'`);
  return { verb: 'umount', mountpoint: pos[0], lazy };
}

function parseStatus(args: string[]): Command {
  const json = args.includes('--json');
  const pos = args.filter((a) => a !== '--json');
  const bad = pos.find((a) => a.startsWith('-'));
  if (bad !== undefined) throw new UsageError('status', `unknown option '${bad}'`);
  if (pos.length !== 1) throw new UsageError('status', pos.length === 0 ? 'missing <store> directory' : `unexpected argument '${pos[1]}'`);
  return { verb: 'status', store: pos[0], json };
}

function parseScrub(args: string[]): Command {
  const flags = ['--repair', '--json'];
  const pos = args.filter((a) => !flags.includes(a));
  const bad = pos.find((a) => a.startsWith('-'));
  if (bad !== undefined) throw new UsageError('scrub', `unknown option '${bad}'`);
  if (pos.length !== 1) throw new UsageError('scrub', pos.length === 0 ? 'missing <store> directory' : `unexpected argument '${pos[1]}'`);
  return { verb: 'scrub', store: pos[0], repair: args.includes('--repair'), json: args.includes('--json') };
}

export const HELP: Record<string, string> = {
  '': `usage: chunkfs <command> [options]

commands:
  mkfs <store> [--disks N | --disk PATH ...] [--layout replica:3|ec:K+M] [--chunk-size SIZE] [--bitrot-block SIZE]
  mount [<store>] <mountpoint> [-o opt,...]
  umount <mountpoint>
  status <store> [--json]
  scrub <store> [--repair] [--json]

Run 'chunkfs <command> --help' for one command.`,
  mkfs: `usage: chunkfs mkfs <store> [--disks N | --disk PATH ...] [--layout replica:3|ec:K+M] [--chunk-size SIZE] [--bitrot-block SIZE]

Create a chunk store in the directory <store>.
  --disks N          make N disk directories inside the store (default 6)
  --disk PATH        use PATH as a disk (repeat; ideally one per device)
  --layout L         default layout of new files: replica:R or ec:K+M (default replica:3)
  --chunk-size SIZE  chunk size, e.g. 4M (default 4 MiB)
  --bitrot-block SIZE  bitrot block, a multiple of 4K (default 16K)`,
  mount: `usage: chunkfs mount [<store>] <mountpoint> [-o opt,...]

Mount a store in the foreground; prints one line when ready; Ctrl-C (SIGINT) or SIGTERM flushes and
unmounts. Without <store>, uses $XDG_DATA_HOME/chunkfs/default (else ~/.local/share/chunkfs/default),
created on first use with 6 disks and replica:3. A stale mount point left by a crash is recovered;
a live one is refused.
  -o buffer_mb=N     write-back buffer limit in MiB (default 5% of RAM, 64..1024)
  -o flush_ms=N      flush a dirty file this long after its first buffered write (default 5000)
  -o allow_other     let other users in (default when run as root); noallow_other to refuse them
  -o transport=T     fuse3 (default: our libfuse3 low-level binding) or fuse-native (libfuse 2, path-based)
  -o writeback_cache let the kernel cache written pages (fuse3 only; nowriteback_cache to turn it off)`,
  umount: `usage: chunkfs umount <mountpoint> [--lazy]

Unmount a chunkfs mount (the mount process flushes and exits). --lazy detaches it even while busy.`,
  status: `usage: chunkfs status <store> [--json]

Disks with capacity and health, layouts in use, heal queue length, and the counters (bitrot errors,
failovers, reconstructions, heals). Works while the store is mounted.`,
  scrub: `usage: chunkfs scrub <store> [--repair] [--json]

Verify every shard of every live chunk of an unmounted store (it opens the store read-write, so it is
refused while the store is mounted). Bad or missing shards are queued for heal; --repair rebuilds them
from the good ones and verifies the result.
  --repair           rebuild bad or missing shards
  --json             print the report as JSON
Exit status: 0 when clean (or, with --repair, everything was repaired); 1 when a shard is unrecoverable,
or without --repair when any shard is bad or missing.`,
};
