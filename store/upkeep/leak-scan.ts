// Scrub's leak scan (DESIGN §4 "Identity", §5): walk every disk's .chunks tree and find shard files that
// nothing accounts for, i.e. whose (file, chunk, version) is neither live in the chunk map nor on the
// reclaim queue, and temp files outside queued versions (a heal cut off by a crash). Recovery no longer
// walks the disks, so this is where anything that escaped the reclaim queue shows up. Files that are not
// shard or temp names are left for fsck.
//
// Nothing is removed on evidence of absence alone (DESIGN §4): a file is removable only when the metadata
// proves it freed (store/meta/freed-evidence.ts); the others are unknown (reported, never removed: the
// metadata may be older than the disks). A scan that would remove more than LEAK_SHARE_MAX of the shard
// files it found stops and removes nothing unless forced, naming the share. What it removes is moved to
// the disk's quarantine (store/upkeep/quarantine.ts), deleted by a later run once past its grace period.
import * as nodePath from 'node:path';
import { CHUNKS_DIR, isTempName, parseShardRelPath } from '../../src/path';
import { ChunkEnv } from '../chunks/chunk-env';
import { errnoCode } from '../io/io';
import { FreedEvidence } from '../meta/freed-evidence';
import { Quarantine, emptyExpiredQuarantine } from './quarantine';
import type { Skipped } from '../disk-ids';

const DIR_ENTRIES_MAX = 1_000_000;
/** Leaked paths listed by name; the counts stay exact. */
const LEAKS_LISTED_MAX = 100;
/**
 * Share of the shard files found that one scan removes without --force: more means the metadata is
 * probably not what wrote these disks (another store's, an old copy), and removing would lose data.
 */
export const LEAK_SHARE_MAX = 0.05;
/** Removable files held for the decision at the end of the walk; past it the scan removes nothing. */
const REMOVABLE_HELD_MAX = 1_000_000;

export interface LeakScanOptions {
  /** Move the removable files to the quarantine (and delete expired quarantine). */
  repair: boolean;
  /** Remove even past LEAK_SHARE_MAX. */
  force?: boolean;
  /** File ids and versions skipped after a restore (store/restored-meta.ts): never proven freed. */
  skippedIds?: Skipped;
  /** How long quarantined files are kept (store tunable quarantineGraceDays). */
  graceMs: number;
  nowMs?: number;
}

export interface LeakReport {
  /** Shard and temp files the metadata proves freed (removable). */
  leakedShards: number;
  leakedTemps: number;
  /** Shard and temp files nothing accounts for and the metadata does not prove freed: never removed. */
  unknown: number;
  /** Moved to the quarantine (quarantinePath) by this run. */
  removed: number;
  /** Every leaked and unknown file (at most LEAKS_LISTED_MAX); unknownPaths: the unknown ones among them. */
  paths: string[];
  unknownPaths: string[];
  /** Shard and temp files found on the disks scanned. */
  shardFiles: number;
  /** Why nothing was removed although repair was asked (the share past LEAK_SHARE_MAX), else null. */
  refused: string | null;
  /** The quarantine folder of this run on each disk (<disk>/ + this), when it removed anything. */
  quarantine: string | null;
  /** Files deleted from quarantine folders past their grace period. */
  quarantineEmptied: number;
}

export function emptyLeakReport(): LeakReport {
  return {
    leakedShards: 0,
    leakedTemps: 0,
    unknown: 0,
    removed: 0,
    paths: [],
    unknownPaths: [],
    shardFiles: 0,
    refused: null,
    quarantine: null,
    quarantineEmptied: 0,
  };
}

async function listDir(env: ChunkEnv, dir: string): Promise<string[]> {
  try {
    return (await env.shards.io.readdir(dir)).slice(0, DIR_ENTRIES_MAX);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

/** "ino/chunk/version" keys of everything accounted for: live chunks and queued versions. */
function accountedKeys(env: ChunkEnv): Set<string> {
  const keys = env.map.liveKeys();
  for (const e of env.reclaim.all()) keys.add(`${e.ino}/${e.chunkIndex}/${e.version}`);
  return keys;
}

interface Removable {
  root: string;
  rel: string;
}

interface Scan {
  env: ChunkEnv;
  accounted: Set<string>;
  evidence: FreedEvidence;
  report: LeakReport;
  removable: Removable[];
}

/** Walk .chunks/p0/p1/fid.vV/cN/ on each disk; with repair, quarantine what the metadata proves freed. */
export async function scanLeaks(env: ChunkEnv, roots: string[], opts: LeakScanOptions): Promise<LeakReport> {
  const nowMs = opts.nowMs ?? Date.now();
  const report = emptyLeakReport();
  if (opts.repair) report.quarantineEmptied = await emptyExpiredQuarantine(env.shards.io, roots, nowMs, opts.graceMs);
  // The watermark before the snapshot of live keys: a file made during the walk is above it (unknown).
  const scan: Scan = {
    env,
    evidence: new FreedEvidence(env.db, opts.skippedIds),
    accounted: accountedKeys(env),
    report,
    removable: [],
  };
  for (const root of roots) {
    const top = nodePath.join(root, CHUNKS_DIR);
    for (const p0 of await listDir(env, top)) {
      for (const p1 of await listDir(env, nodePath.join(top, p0))) {
        for (const vdir of await listDir(env, nodePath.join(top, p0, p1))) {
          for (const cdir of await listDir(env, nodePath.join(top, p0, p1, vdir))) {
            for (const name of await listDir(env, nodePath.join(top, p0, p1, vdir, cdir))) {
              checkEntry(scan, root, [CHUNKS_DIR, p0, p1, vdir, cdir, name].join('/'));
            }
          }
        }
      }
    }
  }
  if (opts.repair) await removeFreed(scan, opts.force ?? false, nowMs);
  return report;
}

function checkEntry(scan: Scan, root: string, rel: string): void {
  const { env, report } = scan;
  const temp = isTempName(rel);
  const parsed = parseShardRelPath(temp ? rel.replace(/\.tmp\.[0-9a-f]{16}$/, '') : rel);
  if (parsed === null) return; // not ours to judge
  report.shardFiles++;
  // The snapshot is from the scan's start: on a live mount a version written since is live now.
  const known =
    scan.accounted.has(`${parsed.fileId}/${parsed.chunkIndex}/${parsed.version}`) || accountedNow(env, parsed);
  if (!temp && known) return;
  if (temp && env.inflight.has(Number(parsed.fileId), Number(parsed.chunkIndex), parsed.version)) return; // being written now
  if (temp && known && !isLiveVersion(env, parsed)) return; // in a queued version: the reclaimer takes it
  const path = nodePath.join(root, rel);
  // A temp file of the live version is an unfinished write of it (no write is in flight): freed.
  const freed = (temp && known) || scan.evidence.of(parsed.fileId, parsed.chunkIndex, parsed.version) === 'freed';
  if (report.paths.length < LEAKS_LISTED_MAX) report.paths.push(path);
  if (!freed) {
    report.unknown++;
    if (report.unknownPaths.length < LEAKS_LISTED_MAX) report.unknownPaths.push(path);
    return;
  }
  if (temp) report.leakedTemps++;
  else report.leakedShards++;
  if (scan.removable.length < REMOVABLE_HELD_MAX) scan.removable.push({ root, rel });
}

/** Quarantine the freed files, unless they are more than LEAK_SHARE_MAX of the store and not forced. */
async function removeFreed(scan: Scan, force: boolean, nowMs: number): Promise<void> {
  const { report } = scan;
  const leaked = report.leakedShards + report.leakedTemps;
  if (leaked === 0) return;
  const share = leaked / report.shardFiles;
  if (scan.removable.length < leaked) {
    report.refused =
      `${leaked} freed files are more than this scan holds (${REMOVABLE_HELD_MAX}); ` +
      'nothing was removed: report this (the scan would need to run in parts)';
    return;
  }
  if (share > LEAK_SHARE_MAX && !force) {
    report.refused =
      `would remove ${leaked} of ${report.shardFiles} shard files (${(share * 100).toFixed(1)}%), ` +
      `more than ${LEAK_SHARE_MAX * 100}%: check that the metadata is this store's and current (not an older copy), ` +
      'then rerun with --force to move them to the quarantine; nothing was removed';
    return;
  }
  const quarantine = new Quarantine(scan.env.shards.io, nowMs);
  report.quarantine = nodePath.join('.chunks-quarantine', quarantine.stamp);
  scan.env.shards.writeGate(); // an opener that lost the lease moves nothing (DESIGN §9 "Lease and fencing")
  for (const f of scan.removable) {
    try {
      await quarantine.move(f.root, f.rel);
      report.removed++;
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err; // gone meanwhile: nothing to keep
    }
  }
}

function accountedNow(env: ChunkEnv, p: { fileId: bigint; chunkIndex: bigint; version: bigint }): boolean {
  const ino = Number(p.fileId);
  const c = Number(p.chunkIndex);
  return isLiveVersion(env, p) || env.reclaim.has(ino, c, p.version) || env.inflight.has(ino, c, p.version);
}

function isLiveVersion(env: ChunkEnv, p: { fileId: bigint; chunkIndex: bigint; version: bigint }): boolean {
  return env.map.get(Number(p.fileId), Number(p.chunkIndex))?.version === p.version;
}
