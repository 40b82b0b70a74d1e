// fsck (DESIGN §7): the metadata against the shards, fast (a header read per shard, no
// data verified: that is scrub). Finds shards of live chunks that are missing or whose header
// disagrees with the inode Layout and chunk map (spec §1: a corruption signal), shard and temp files
// nothing accounts for (orphans, stale versions: store/upkeep/leak-scan.ts), inodes left unlinked, the
// reclaim backlog and open intents. With repair: rebuilds the shards, removes the leaked files,
// drains the reclaim queue and (offline only: a live mount may still hold them open) deletes the
// unlinked inodes.
import type { Skipped } from '../disk-ids';
import { HEADER_BYTES, decodeHeader } from '../../src/header';
import { ChunkEnv } from '../chunks/chunk-env';
import { ChunkRef } from '../chunks/chunk-ref';
import { FileIo } from '../file-io';
import { Healer } from './heal';
import { errnoCode } from '../io/io';
import { LeakReport, emptyLeakReport, scanLeaks } from './leak-scan';
import { shardCount } from '../../src/layout';
import { CHECKED_FIELDS } from '../chunks/shard-store';
import { containerRowsWithoutInode, liveChunks, unaccountedInodes } from '../meta/surveys';

/** Shard problems listed; the counts stay exact. */
export const FSCK_LISTED_MAX = 1_000;

export interface FsckOptions {
  repair?: boolean;
  /** The store is not mounted: unlinked inodes may be deleted. */
  offline?: boolean;
  onProgress?(p: { doneItems: number; totalItems: number }): void;
  signal?: AbortSignal;
  /** With repair: the leak scan removes freed files even past its share limit (store/upkeep/leak-scan.ts). */
  force?: boolean;
}

export type ShardProblemKind = 'missing' | 'header' | 'io';

export interface ShardProblem {
  ino: number;
  chunkIndex: number;
  version: string;
  shardIndex: number;
  diskId: number;
  path: string;
  kind: ShardProblemKind;
  detail: string;
}

export interface FsckReport {
  chunks: number;
  shardsChecked: number;
  /** Shards on offline disks: not looked at (scrub and heal rebuild them when the disk is back or replaced). */
  shardsOnOfflineDisks: number;
  missing: number;
  badHeaders: number;
  ioErrors: number;
  problems: ShardProblem[];
  rebuilt: number;
  rebuildFailed: number;
  leaks: LeakReport;
  orphanInodes: number;
  orphansDeleted: number;
  /**
   * Inodes no name, orphan entry or container row accounts for (a leaked container or file), and
   * container rows whose inode is gone (spec §11.1: a container is an inode plus its row). Listed
   * (bounded), not repaired: which one to keep is the operator's call.
   */
  unaccountedInodes: number[];
  containerRowsWithoutInode: number[];
  reclaimBacklog: number;
  reclaimed: number;
  openIntents: number;
  healQueueLength: number;
  cancelled: boolean;
}

export interface FsckHost {
  env: ChunkEnv;
  files: FileIo;
  healer: Healer;
  /** Disk directories of the disks that are online. */
  onlineRoots(): string[];
  orphans(): number[];
  deleteFile(ino: number): Promise<void>;
  reclaimNow(): Promise<{ versionsDeleted: number }>;
  /** How long the leak scan's quarantine keeps what it removed (store/upkeep/quarantine.ts). */
  quarantineGraceMs: number;
  /** File ids and versions skipped after a restore (store/restored-meta.ts): their shards are unknown. */
  skippedIds(): Skipped;
}

/** What is wrong with shard i's file, or null when it is there and its header agrees (spec §3, §1). */
async function shardProblem(
  env: ChunkEnv,
  ref: ChunkRef,
  i: number,
  path: string,
): Promise<{ kind: ShardProblemKind; detail: string } | null> {
  let bytes: Buffer;
  try {
    // A cached descriptor of a file removed or replaced from outside would hide it (as in readWhole).
    await env.shards.io.revalidate(path);
    const f = await env.shards.io.open(path, 'read');
    try {
      bytes = await f.pread(HEADER_BYTES, 0);
    } finally {
      await f.close();
    }
  } catch (err) {
    return errnoCode(err) === 'ENOENT'
      ? { kind: 'missing', detail: 'no shard file' }
      : { kind: 'io', detail: (err as Error).message };
  }
  try {
    const h = decodeHeader(bytes);
    const want = env.shards.expectedHeader(ref, i);
    const wrong = CHECKED_FIELDS.find((f) => h[f] !== want[f]);
    return wrong === undefined
      ? null
      : { kind: 'header', detail: `header ${wrong} is ${String(h[wrong])}, the metadata says ${String(want[wrong])}` };
  } catch (err) {
    return { kind: 'header', detail: (err as Error).message };
  }
}

function emptyReport(): FsckReport {
  return {
    chunks: 0,
    shardsChecked: 0,
    shardsOnOfflineDisks: 0,
    missing: 0,
    badHeaders: 0,
    ioErrors: 0,
    problems: [],
    rebuilt: 0,
    rebuildFailed: 0,
    leaks: emptyLeakReport(),
    orphanInodes: 0,
    orphansDeleted: 0,
    unaccountedInodes: [],
    containerRowsWithoutInode: [],
    reclaimBacklog: 0,
    reclaimed: 0,
    openIntents: 0,
    healQueueLength: 0,
    cancelled: false,
  };
}

/** Check one chunk's shards under its inode's lock; returns whether any shard has a problem. */
async function checkChunk(host: FsckHost, ino: number, chunkIndex: number, report: FsckReport): Promise<boolean> {
  const env = host.env;
  return host.files.withChunk(ino, chunkIndex, async (ref) => {
    if (ref === null) return false;
    let bad = false;
    for (let i = 0; i < shardCount(ref.fl.layout); i++) {
      if (env.health.unavailable(ref.diskIds[i]) !== undefined) {
        report.shardsOnOfflineDisks++;
        continue;
      }
      report.shardsChecked++;
      const path = env.shards.path(ref, i);
      const p = await shardProblem(env, ref, i, path);
      if (p === null) continue;
      bad = true;
      if (p.kind === 'missing') report.missing++;
      else if (p.kind === 'header') report.badHeaders++;
      else report.ioErrors++;
      env.map.queueHeal(ino, chunkIndex, ref.version, i, `fsck: ${p.kind}: ${p.detail}`);
      if (report.problems.length < FSCK_LISTED_MAX) {
        report.problems.push({
          ino,
          chunkIndex,
          version: ref.version.toString(),
          shardIndex: i,
          diskId: ref.diskIds[i],
          path,
          ...p,
        });
      }
    }
    return bad;
  });
}

/** The inode/name/container cross-check (both lists bounded by FSCK_LISTED_MAX). */
function checkInodes(env: ChunkEnv, report: FsckReport): void {
  report.unaccountedInodes = unaccountedInodes(env.db, FSCK_LISTED_MAX);
  report.containerRowsWithoutInode = containerRowsWithoutInode(env.db, FSCK_LISTED_MAX);
}

export async function fsck(host: FsckHost, opts: FsckOptions = {}): Promise<FsckReport> {
  const env = host.env;
  const report = emptyReport();
  const repair = opts.repair ?? false;
  const rows = liveChunks(env.db);
  const damaged: Array<[number, number]> = [];
  for (const r of rows) {
    if (opts.signal?.aborted === true) return { ...report, cancelled: true };
    report.chunks++;
    if (await checkChunk(host, r.ino, r.chunkIndex, report)) damaged.push([r.ino, r.chunkIndex]);
    opts.onProgress?.({ doneItems: report.chunks, totalItems: rows.length });
  }
  if (repair) {
    for (const [ino, c] of damaged) {
      const h = await host.healer.healChunk(ino, c, true);
      report.rebuilt += h.healed;
      report.rebuildFailed += h.failed.length;
    }
  }
  const leakOpts = { repair, force: opts.force, graceMs: host.quarantineGraceMs, skippedIds: host.skippedIds() };
  report.leaks = await scanLeaks(env, host.onlineRoots(), leakOpts);
  const orphans = host.orphans();
  report.orphanInodes = orphans.length;
  if (repair && opts.offline === true) {
    for (const ino of orphans) {
      await host.deleteFile(ino);
      report.orphansDeleted++;
    }
  }
  if (repair) report.reclaimed = (await host.reclaimNow()).versionsDeleted;
  checkInodes(env, report);
  report.reclaimBacklog = env.reclaim.length;
  report.openIntents = env.map.intentCount() + (env.intentLog?.liveRecords ?? 0);
  report.healQueueLength = env.map.healQueueLength();
  return report;
}
