// Scrub's leak scan (DESIGN §5, issue 8): walk every disk's .chunks tree and find shard files that
// nothing accounts for, i.e. whose (file, chunk, version) is neither live in the chunk map nor on
// the reclaim queue, and temp files outside queued versions (a heal cut off by a crash). Recovery
// no longer walks the disks, so this is where anything that escaped the reclaim queue shows up;
// with repair, such files are removed. Files that are not shard or temp names are left for fsck.
import * as nodePath from 'node:path';
import { CHUNKS_DIR, isTempName, parseShardRelPath } from '../../src/path';
import { ChunkEnv } from '../chunks/chunk-env';
import { errnoCode } from '../io/io';

const DIR_ENTRIES_MAX = 1_000_000;
/** Leaked paths listed by name; the count stays exact. */
const LEAKS_LISTED_MAX = 100;

export interface LeakReport {
  leakedShards: number;
  leakedTemps: number;
  removed: number;
  paths: string[];
}

export function emptyLeakReport(): LeakReport {
  return { leakedShards: 0, leakedTemps: 0, removed: 0, paths: [] };
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

/** Walk .chunks/p0/p1/fid.vV/cN/ on each disk. */
export async function scanLeaks(env: ChunkEnv, roots: string[], repair: boolean): Promise<LeakReport> {
  const report = emptyLeakReport();
  const accounted = accountedKeys(env);
  for (const root of roots) {
    const top = nodePath.join(root, CHUNKS_DIR);
    for (const p0 of await listDir(env, top)) {
      for (const p1 of await listDir(env, nodePath.join(top, p0))) {
        for (const vdir of await listDir(env, nodePath.join(top, p0, p1))) {
          for (const cdir of await listDir(env, nodePath.join(top, p0, p1, vdir))) {
            const cpath = nodePath.join(top, p0, p1, vdir, cdir);
            for (const name of await listDir(env, cpath)) {
              await checkEntry(env, [CHUNKS_DIR, p0, p1, vdir, cdir, name].join('/'), nodePath.join(cpath, name), accounted, repair, report);
            }
          }
        }
      }
    }
  }
  return report;
}

async function checkEntry(env: ChunkEnv, rel: string, path: string, accounted: Set<string>, repair: boolean, report: LeakReport): Promise<void> {
  const temp = isTempName(rel);
  const parsed = parseShardRelPath(temp ? rel.replace(/\.tmp\.[0-9a-f]{16}$/, '') : rel);
  if (parsed === null) return; // not ours to judge
  // The snapshot is from the scan's start: on a live mount a version written since is live now.
  const known = accounted.has(`${parsed.fileId}/${parsed.chunkIndex}/${parsed.version}`) || accountedNow(env, parsed);
  if (!temp && known) return;
  if (temp && env.inflight.has(Number(parsed.fileId), Number(parsed.chunkIndex), parsed.version)) return; // being written now
  if (temp && known && !isLiveVersion(env, parsed)) return; // in a queued version: the reclaimer takes it
  if (temp) report.leakedTemps++;
  else report.leakedShards++;
  if (report.paths.length < LEAKS_LISTED_MAX) report.paths.push(path);
  if (!repair) return;
  env.shards.writeGate(); // an opener that lost the lease removes nothing (DESIGN §9 "Lease and fencing")
  await env.shards.io.unlink(path);
  report.removed++;
}

function accountedNow(env: ChunkEnv, p: { fileId: bigint; chunkIndex: bigint; version: bigint }): boolean {
  const ino = Number(p.fileId);
  const c = Number(p.chunkIndex);
  return isLiveVersion(env, p) || env.reclaim.has(ino, c, p.version) || env.inflight.has(ino, c, p.version);
}

function isLiveVersion(env: ChunkEnv, p: { fileId: bigint; chunkIndex: bigint; version: bigint }): boolean {
  return env.map.get(Number(p.fileId), Number(p.chunkIndex))?.version === p.version;
}
