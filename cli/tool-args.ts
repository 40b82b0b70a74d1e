// Parsing of the verbs that work on a store, mounted or not: each takes an optional
// TARGET (store directory, mount point, or nothing for the default store). Pure.
import { UsageError } from './usage-error';
import { SplitArgs, flagValue, optionalTarget, parseDuration, splitArgs, wholeNumber } from './verb-args';
import { parseSize } from './sizes';
import { INJECT_ACTIONS, InjectArgs } from './actions/inject-args';

export const TOOL_VERBS = ['status', 'scrub', 'heal', 'fsck', 'inspect', 'compact', 'replace-disk', 'inject'] as const;
export type ToolVerb = (typeof TOOL_VERBS)[number];

export type ToolCommand =
  | { verb: 'status'; target?: string; json: boolean }
  | { verb: 'scrub'; target?: string; repair: boolean; force: boolean; json: boolean; rateBytesPerSec?: number }
  | { verb: 'heal'; target?: string; list: boolean; json: boolean }
  | { verb: 'fsck'; target?: string; repair: boolean; force: boolean; json: boolean }
  | { verb: 'compact'; target?: string; json: boolean }
  /** path: a shard file, or a file in a chunkfs mount; or ino with the target's store. */
  | { verb: 'inspect'; target?: string; path?: string; ino?: number; chunk: number; json: boolean }
  | { verb: 'replace-disk'; target?: string; diskId: number; newPath: string; json: boolean }
  /** file: FILE as given (corrupt, drop); the verb resolves it to a store and a path inside it. */
  | { verb: 'inject'; target?: string; json: boolean; args: InjectArgs; file?: string };

const INDEX_MAX = 2 ** 31;
const DISK_ID_MAX = 2 ** 31;
const FAULT_COUNT_MAX = 2 ** 31;
const LATENCY_MS_MAX = 60_000;

function parseStatus(args: string[]): ToolCommand {
  const s = splitArgs('status', args, { '--json': 'bool' });
  return { verb: 'status', target: optionalTarget('status', s.positionals), json: s.flags.has('--json') };
}

function parseScrub(args: string[]): ToolCommand {
  const s = splitArgs('scrub', args, { '--repair': 'bool', '--force': 'bool', '--json': 'bool', '--rate': 'value' });
  const rate = flagValue(s, '--rate');
  return {
    verb: 'scrub',
    target: optionalTarget('scrub', s.positionals),
    repair: s.flags.has('--repair'),
    force: s.flags.has('--force'),
    json: s.flags.has('--json'),
    rateBytesPerSec: rate === undefined ? undefined : parseSize('scrub', '--rate', rate.replace(/\/s$/, '')),
  };
}

function parseHeal(args: string[]): ToolCommand {
  const s = splitArgs('heal', args, { '--list': 'bool', '--json': 'bool' });
  return {
    verb: 'heal',
    target: optionalTarget('heal', s.positionals),
    list: s.flags.has('--list'),
    json: s.flags.has('--json'),
  };
}

function parseFsck(args: string[]): ToolCommand {
  const s = splitArgs('fsck', args, { '--repair': 'bool', '--force': 'bool', '--json': 'bool' });
  return {
    verb: 'fsck',
    target: optionalTarget('fsck', s.positionals),
    repair: s.flags.has('--repair'),
    force: s.flags.has('--force'),
    json: s.flags.has('--json'),
  };
}

/** inspect SHARD [TARGET] | inspect FILE [--chunk N] | inspect --ino N [--chunk N] [TARGET] */
function parseInspect(args: string[]): ToolCommand {
  const s = splitArgs('inspect', args, { '--chunk': 'value', '--ino': 'value', '--json': 'bool' });
  const chunkText = flagValue(s, '--chunk');
  const chunk = chunkText === undefined ? 0 : wholeNumber('inspect', '--chunk', chunkText, 0, INDEX_MAX);
  const inoText = flagValue(s, '--ino');
  const json = s.flags.has('--json');
  if (inoText !== undefined) {
    return {
      verb: 'inspect',
      ino: wholeNumber('inspect', '--ino', inoText, 1, Number.MAX_SAFE_INTEGER),
      chunk,
      json,
      target: optionalTarget('inspect', s.positionals),
    };
  }
  const [path, ...rest] = s.positionals;
  if (path === undefined) throw new UsageError('inspect', 'name a shard file, a file in a chunkfs mount, or --ino N');
  return { verb: 'inspect', path, chunk, json, target: optionalTarget('inspect', rest) };
}

function parseReplaceDisk(args: string[]): ToolCommand {
  const s = splitArgs('replace-disk', args, { '--json': 'bool' });
  const [id, newPath, ...rest] = s.positionals;
  if (id === undefined || newPath === undefined)
    throw new UsageError('replace-disk', 'give the old DISK id and the NEW_PATH of its replacement');
  return {
    verb: 'replace-disk',
    diskId: wholeNumber('replace-disk', 'DISK', id, 0, DISK_ID_MAX),
    newPath,
    json: s.flags.has('--json'),
    target: optionalTarget('replace-disk', rest),
  };
}

function injectFlagsFor(action: string): Record<string, 'bool' | 'value'> {
  const common = { '--json': 'bool' } as const;
  switch (action) {
    case 'corrupt':
      return { ...common, '--chunk': 'value', '--shard': 'value', '--block': 'value', '--what': 'value' };
    case 'drop':
      return { ...common, '--chunk': 'value', '--shard': 'value' };
    case 'eio':
      return { ...common, '--ops': 'value', '--count': 'value', '--for': 'value' };
    case 'enospc':
      return { ...common, '--count': 'value', '--for': 'value' };
    case 'latency':
      return { ...common, '--ms': 'value', '--ops': 'value', '--count': 'value', '--for': 'value' };
    case '--clear':
      return { ...common, '--clear': 'bool', '--id': 'value' };
    case '--list':
      return { ...common, '--list': 'bool' };
    default:
      return common;
  }
}

function num(s: SplitArgs, flag: string, max: number): number | undefined {
  const v = flagValue(s, flag);
  return v === undefined ? undefined : wholeNumber('inject', flag, v, 0, max);
}

function injectDisk(s: SplitArgs, action: string): { disk: number; rest: string[] } {
  const [diskText, ...rest] = s.positionals;
  if (diskText === undefined) throw new UsageError('inject', `${action} needs a DISK id (see chunkfs status)`);
  return { disk: wholeNumber('inject', 'DISK', diskText, 0, DISK_ID_MAX), rest };
}

function injectFaultArgs(action: 'eio' | 'enospc' | 'latency', s: SplitArgs): { args: InjectArgs; rest: string[] } {
  const { disk, rest } = injectDisk(s, action);
  const ops = flagValue(s, '--ops') ?? 'all';
  if (ops !== 'read' && ops !== 'write' && ops !== 'all')
    throw new UsageError('inject', `--ops: '${ops}' is not read, write or all`);
  const count =
    flagValue(s, '--count') === undefined
      ? undefined
      : wholeNumber('inject', '--count', flagValue(s, '--count')!, 1, FAULT_COUNT_MAX);
  const durationMs =
    flagValue(s, '--for') === undefined ? undefined : parseDuration('inject', '--for', flagValue(s, '--for')!);
  let latencyMs: number | undefined;
  if (action === 'latency') {
    const ms = flagValue(s, '--ms');
    if (ms === undefined) throw new UsageError('inject', 'latency needs --ms N (added milliseconds per operation)');
    latencyMs = wholeNumber('inject', '--ms', ms, 1, LATENCY_MS_MAX);
  }
  return { args: { action, disk, ops, count, durationMs, latencyMs }, rest };
}

function injectShardArgs(action: 'corrupt' | 'drop', s: SplitArgs): { args: InjectArgs; rest: string[]; file: string } {
  const [file, ...rest] = s.positionals;
  if (file === undefined) throw new UsageError('inject', `${action} needs a FILE (a path in a chunkfs mount)`);
  const chunk = num(s, '--chunk', INDEX_MAX) ?? 0;
  const shard = num(s, '--shard', INDEX_MAX);
  if (action === 'drop') return { args: { action, file, chunk, shard }, rest, file };
  const what = flagValue(s, '--what') ?? 'data';
  if (what !== 'data' && what !== 'hash' && what !== 'header')
    throw new UsageError('inject', `--what: '${what}' is not data, hash or header`);
  if (what === 'header' && s.flags.has('--block'))
    throw new UsageError('inject', '--block does not apply to --what header');
  return { args: { action, file, chunk, shard, block: num(s, '--block', INDEX_MAX) ?? 0, what }, rest, file };
}

/** chunkfs inject ACTION ... [TARGET] | --list [TARGET] | --clear [--id N] [TARGET] */
function parseInject(args: string[]): ToolCommand {
  const first = args[0] ?? '';
  const action = (INJECT_ACTIONS as readonly string[]).includes(first)
    ? first
    : ['--list', '--clear'].find((f) => args.includes(f));
  if (action === undefined)
    throw new UsageError('inject', `name what to inject first (${INJECT_ACTIONS.join(', ')}), or --list / --clear`);
  if (args.includes('--list') && args.includes('--clear'))
    throw new UsageError('inject', 'use either --list or --clear');
  const s = splitArgs('inject', action.startsWith('--') ? args : args.slice(1), injectFlagsFor(action));
  const json = s.flags.has('--json');
  let parsed: { args: InjectArgs; rest: string[]; file?: string };
  switch (action) {
    case '--list':
      parsed = { args: { action: 'list' }, rest: s.positionals };
      break;
    case '--clear':
      parsed = { args: { action: 'clear', id: num(s, '--id', FAULT_COUNT_MAX) }, rest: s.positionals };
      break;
    case 'corrupt':
    case 'drop':
      parsed = injectShardArgs(action, s);
      break;
    case 'offline':
    case 'online': {
      const d = injectDisk(s, action);
      parsed = { args: { action, disk: d.disk }, rest: d.rest };
      break;
    }
    default:
      parsed = injectFaultArgs(action as 'eio' | 'enospc' | 'latency', s);
  }
  return { verb: 'inject', target: optionalTarget('inject', parsed.rest), json, args: parsed.args, file: parsed.file };
}

export function parseToolVerb(verb: ToolVerb, args: string[]): ToolCommand {
  switch (verb) {
    case 'status':
      return parseStatus(args);
    case 'scrub':
      return parseScrub(args);
    case 'heal':
      return parseHeal(args);
    case 'fsck':
      return parseFsck(args);
    case 'compact': {
      const s = splitArgs('compact', args, { '--json': 'bool' });
      return { verb: 'compact', target: optionalTarget('compact', s.positionals), json: s.flags.has('--json') };
    }
    case 'inspect':
      return parseInspect(args);
    case 'replace-disk':
      return parseReplaceDisk(args);
    case 'inject':
      return parseInject(args);
  }
  throw new UsageError('', `unknown command '${String(verb)}'`);
}

export const TOOL_SYNOPSIS = `  status [TARGET] [--json]
  scrub [TARGET] [--repair [--force]] [--rate SIZE/s] [--json]
  heal [TARGET] [--list] [--json]
  fsck [TARGET] [--repair [--force]] [--json]
  inspect SHARD_FILE [TARGET] | FILE [--chunk N] | --ino N [--chunk N] [TARGET]   [--json]
  compact [TARGET] [--json]
  replace-disk DISK NEW_PATH [TARGET] [--json]
  inject corrupt|drop FILE [--chunk N] [--shard I] [--block B] [--what data|hash|header]
  inject offline|online|eio|enospc|latency DISK [...] [TARGET]   inject --list|--clear [TARGET]`;

export const TOOL_HELP: Record<ToolVerb, string> = {
  status: `usage: chunkfs status [TARGET] [--json]

Disks with capacity and health, layouts in use, heal queue, reclaim backlog, open intents and the
counters (bitrot errors, failovers, reconstructions, heals, ...). TARGET is a store directory, a
chunkfs mount point, or nothing (the default store). On a mounted store it asks the mount, which
also lists the faults injected into it (chunkfs inject). While the metadata server (PostgreSQL) is
unreachable it still reports what it can, says since when and why, and shows the fields the database
holds as unknown (null in JSON).
  --json             print the report as JSON

Exit status: 0; 1 when the metadata server is unreachable (the report is printed all the same).`,
  scrub: `usage: chunkfs scrub [TARGET] [--repair [--force]] [--rate SIZE/s] [--json]

Verify every shard of every live chunk, mounted (through the mount) or not. Bad or missing shards are
queued for heal; --repair rebuilds them from the good ones and verifies the result. Also reports shard
or temp files nothing accounts for, and store paths other users could access (--repair fixes the modes,
and moves the files the metadata proves freed to each disk's .chunks-quarantine/, deleted after the
store's quarantineGraceDays; files it cannot prove freed are reported, never removed). Progress
(bytes done of total, rate, ETA) goes to stderr: a bar on a terminal, plain lines otherwise.
  --repair           rebuild bad or missing shards
  --force            with --repair: quarantine freed files even when they are more than 5% of the store
  --rate SIZE/s      read at most this many shard bytes per second, e.g. 50M/s
  --json             print the report as JSON
Exit status: 0 when clean (or, with --repair, everything was repaired); 1 when a shard is unrecoverable,
or without --repair when anything is bad.`,
  heal: `usage: chunkfs heal [TARGET] [--list] [--json]

Rebuild every shard on the heal queue now (reads that were served around a bad or missing shard,
scrubs and degraded writes queue them; the mount's background healer drains the queue slowly and
backs off per shard). Progress goes to stderr. On a mounted store it runs in the mount.
  --list             show the queue instead: each shard's file, attempts, next try and why it is queued
  --json             print the result as JSON
Exit status: 0 when every tried shard was rebuilt or found good; 1 when one could not be rebuilt.`,
  fsck: `usage: chunkfs fsck [TARGET] [--repair [--force]] [--json]

Check the metadata against the shards, quickly (one header read per shard; scrub verifies the data):
shards of live chunks that are missing or whose header disagrees with the metadata, shard and temp
files nothing accounts for, inodes left unlinked, the reclaim backlog and open intents. What it finds
is queued for heal. On a mounted store it runs in the mount. Progress goes to stderr.
  --repair           rebuild those shards, quarantine the leaked files (as scrub), drain the reclaim
                     queue, and (unmounted only) delete the unlinked inodes
  --force            with --repair: quarantine leaked files even when they are more than 5% of the store
  --json             print the report as JSON
Exit status: 0 when consistent (or, with --repair, everything was repaired); 1 otherwise.`,
  inspect: `usage: chunkfs inspect SHARD_FILE [TARGET] [--json]
       chunkfs inspect FILE [--chunk N] [--json]
       chunkfs inspect --ino N [--chunk N] [TARGET] [--json]

Decode and verify shard files without the metadata (they describe themselves): the header and its
CRC, the path against the header, and every block against its hash entry. SHARD_FILE is one shard
file (the store is TARGET, or found above it, or the default store: its bitrot key is needed). FILE
(a file in a chunkfs mount) or --ino N names a file: every shard file of its chunk N (default 0) on
every disk is inspected, every version found.
Exit status: 0 when every shard inspected is sound; 1 otherwise.`,
  compact: `usage: chunkfs compact [TARGET] [--json]

Small files are packed as needles in containers. Seal the full containers (rewrite them once in their
target layout) and compact the sealed ones that are at least 40% dead (copy their live needles out,
then reclaim them), now; the mount also does this in the background. Works mounted (in the mount) or not.
  --json             print the result as JSON
Exit status: 0 unless a container could not be sealed or compacted.`,
  'replace-disk': `usage: chunkfs replace-disk DISK NEW_PATH [TARGET] [--json]

Replace lost disk DISK (an id from chunkfs status; it must be offline) by the directory NEW_PATH
(new, or empty; ideally on the new device), then rebuild every shard placed on it from the others,
with progress. The disk keeps its id and its place in the layout, so nothing else moves. NEW_PATH
may be the disk's old path (a new device mounted there). Works mounted (in the mount) or not.
Exit status: 0 when every shard was rebuilt; 1 otherwise.`,
  inject: `usage: chunkfs inject corrupt FILE [--chunk N] [--shard I] [--block B] [--what data|hash|header] [STORE]
       chunkfs inject drop FILE [--chunk N] [--shard I] [STORE]
       chunkfs inject offline DISK [TARGET]          chunkfs inject online DISK [TARGET]
       chunkfs inject eio DISK [--ops read|write|all] [--count N] [--for DURATION] [TARGET]
       chunkfs inject enospc DISK [--count N] [--for DURATION] [TARGET]
       chunkfs inject latency DISK --ms N [--ops read|write|all] [--count N] [--for DURATION] [TARGET]
       chunkfs inject --list [TARGET]                chunkfs inject --clear [--id N] [TARGET]

Inject faults to test recovery, like zinject. Says what it did.
  corrupt   flip one byte of a shard of FILE's chunk N (default 0): in data block B (default 0), in
            block B's hash entry (--what hash) or in the header (--what header). Without --shard, the
            shard a read tries first, so the next read meets the damage.
  drop      remove that shard file.
  FILE is a path in a chunkfs mount, or with STORE (or the default store) a path inside its
  filesystem such as /dir/file (then the store must not be mounted, or be the mount's).
The rest act on a live mount's I/O, for one disk (ids as in chunkfs status):
  offline   every operation on the disk fails (ENODEV); it is reported offline and served around.
  online    undo offline.
  eio       operations fail with EIO (--ops: read, write or all, default all).
  enospc    writes fail with ENOSPC.
  latency   add --ms N milliseconds to each operation.
  --count N    only the next N matching operations;  --for DURATION  only for 500ms, 30s, 5m, ...
  --list       the faults in force;  --clear  remove them all (--id N: one).
  --json       print the result as JSON`,
};
