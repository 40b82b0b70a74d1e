// `chunkfs inject` (DESIGN §7, like zinject): damage a shard (corrupt a data block, a hash
// entry or the header; drop the file), or set a fault in the live mount's Io (store/io/fault-table.ts):
// a disk offline, EIO, ENOSPC or added latency for N operations or a duration. Every answer says
// what was done, in words, so a user can follow what a read will meet next.
import type { DamageReport } from '../../store/upkeep/shard-damage';
import type { Fault, FaultTable } from '../../store/io/fault-table';
import { FaultTableError } from '../../store/io/fault-table';
import { Action, ActionEnv, ActionError, LiveMount } from './env';
import { InjectArgs } from './inject-args';
import { regularFileIno } from './file-path';
import { FaultListing, faultListing } from './status';

export interface InjectResult {
  message: string;
  damage?: DamageReport & { file: string };
  fault?: FaultListing;
  faults?: FaultListing[];
  cleared?: number;
}

function diskRoot(env: ActionEnv, diskId: number): string {
  const root = env.store.diskPaths().get(diskId);
  if (root === undefined)
    throw new ActionError(`no disk ${diskId} in this store (disks: ${[...env.store.diskPaths().keys()].join(', ')})`);
  return root;
}

function live(env: ActionEnv): LiveMount {
  if (env.live === null) throw new ActionError('faults are injected into a live mount; mount the store first');
  return env.live;
}

function listingOf(faults: FaultTable, f: Fault): FaultListing {
  return (
    faultListing(faults).find((l) => l.id === f.id) ?? {
      id: f.id,
      kind: f.kind,
      diskId: f.diskId,
      ops: f.ops,
      hits: f.hits,
    }
  );
}

function untilText(count: number | undefined, durationMs: number | undefined): string {
  const parts: string[] = [];
  if (count !== undefined) parts.push(`the next ${count} operation(s)`);
  if (durationMs !== undefined) parts.push(`${durationMs} ms`);
  return parts.length === 0
    ? 'until cleared (chunkfs inject --clear)'
    : `for ${parts.join(' or ')}, whichever ends first`;
}

async function damage(env: ActionEnv, a: Extract<InjectArgs, { action: 'corrupt' | 'drop' }>): Promise<InjectResult> {
  await env.live?.flush(); // bytes still in the write-back buffer have no shard yet
  const ino = regularFileIno(env.store, a.file);
  const kind = a.action === 'drop' ? 'drop' : a.what;
  const r = await env.store.damageShard(ino, a.chunk, a.shard, kind, a.action === 'corrupt' ? a.block : 0);
  const file = '/' + a.file;
  const where =
    r.needle === undefined
      ? `shard ${r.shardIndex} of ${file} (file ${r.ino}) chunk ${r.chunkIndex} on disk ${r.diskId}`
      : `shard ${r.shardIndex} of container ${r.ino} chunk ${r.chunkIndex} on disk ${r.diskId}, which holds the needle of the small file ${file} (file ${ino})`;
  const what =
    kind === 'drop'
      ? `dropped ${where}: removed ${r.path}${r.needle === undefined ? '' : ' (every needle in that chunk loses this copy)'}`
      : kind === 'header'
        ? `corrupted the header of ${where}: flipped byte ${r.offsetBytes} of ${r.path}`
        : `corrupted the ${kind === 'hash' ? 'hash entry' : 'data'} of block ${r.blockIndex} of ${where}: flipped byte ${r.offsetBytes} of ${r.path}`;
  // r.ino is the container for a packed file; the report names the file the user gave.
  const first =
    r.readOrder[0] === r.shardIndex
      ? 'a read tries this shard first'
      : `a read tries shard ${r.readOrder[0]} first, so only a scrub or a failover meets this one`;
  return { message: `${what}; ${first}`, damage: { ...r, file } };
}

function ioFault(env: ActionEnv, a: Extract<InjectArgs, { action: 'eio' | 'enospc' | 'latency' }>): InjectResult {
  const faults = live(env).faults;
  const root = diskRoot(env, a.disk);
  const ops = a.action === 'enospc' ? 'write' : a.ops;
  const f = faults.add({
    kind: a.action,
    diskId: a.disk,
    root,
    ops,
    count: a.count,
    durationMs: a.durationMs,
    latencyMs: a.latencyMs,
  });
  const what = a.action === 'latency' ? `adds ${a.latencyMs} ms to` : `fails with ${a.action.toUpperCase()}`;
  return {
    message: `fault #${f.id}: disk ${a.disk} (${root}) ${what} ${ops === 'all' ? 'every' : `each ${ops}`} operation ${untilText(a.count, a.durationMs)}`,
    fault: listingOf(faults, f),
  };
}

function offline(env: ActionEnv, disk: number): InjectResult {
  const faults = live(env).faults;
  const root = diskRoot(env, disk);
  if (faults.offline(disk)) throw new ActionError(`disk ${disk} is already held offline (chunkfs inject --list)`);
  const f = faults.add({ kind: 'offline', diskId: disk, root, ops: 'all' });
  env.store.refreshDisks(); // its identity check now fails: offline at once, served around, never written
  return {
    message: `fault #${f.id}: disk ${disk} (${root}) is offline: every operation on it fails with ENODEV until 'chunkfs inject online ${disk}'`,
    fault: listingOf(faults, f),
  };
}

async function online(env: ActionEnv, disk: number): Promise<InjectResult> {
  diskRoot(env, disk);
  const cleared = live(env).faults.clear({ diskId: disk, kind: 'offline' });
  if (cleared === 0) throw new ActionError(`disk ${disk} is not held offline by inject (chunkfs inject --list)`);
  env.store.refreshDisks();
  const state = (await env.store.status()).disks.find((d) => d.id === disk)?.state ?? '?';
  return { message: `disk ${disk} is back (state ${state}); the healer rebuilds what was written around it`, cleared };
}

function clear(env: ActionEnv, id: number | undefined): InjectResult {
  const faults = live(env).faults;
  const cleared = faults.clear(id === undefined ? {} : { id });
  if (id !== undefined && cleared === 0) throw new ActionError(`no fault #${id} (chunkfs inject --list)`);
  env.store.refreshDisks(); // a disk held offline comes back
  return { message: `cleared ${cleared} fault(s)`, cleared };
}

async function run(env: ActionEnv, a: InjectArgs): Promise<InjectResult> {
  const r = await runOne(env, a);
  if (a.action !== 'list') await env.live?.dropKernelCache();
  return r;
}

async function runOne(env: ActionEnv, a: InjectArgs): Promise<InjectResult> {
  switch (a.action) {
    case 'corrupt':
    case 'drop':
      return damage(env, a);
    case 'eio':
    case 'enospc':
    case 'latency':
      return ioFault(env, a);
    case 'offline':
      return offline(env, a.disk);
    case 'online':
      return online(env, a.disk);
    case 'list': {
      const faults = faultListing(live(env).faults);
      return { message: `${faults.length} fault(s) set`, faults };
    }
    case 'clear':
      return clear(env, a.id);
  }
}

export const injectAction: Action = {
  storeAccess: () => 'write',
  needsLiveMount: (args) =>
    (args as InjectArgs).action === 'corrupt' || (args as InjectArgs).action === 'drop'
      ? null
      : 'faults are injected into a live mount; mount the store first',
  async run(env, args) {
    try {
      return await run(env, args as InjectArgs);
    } catch (err) {
      if (
        err instanceof FaultTableError ||
        (err as { code?: string }).code === 'EINVAL' ||
        (err as { code?: string }).code === 'ENOENT'
      )
        throw new ActionError((err as Error).message.replace(/^E[A-Z]+: /, ''));
      throw err;
    }
  },
};
