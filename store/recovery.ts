// Recovery at open (DESIGN §5, issue 3): resolve open write intents block by block
// (the first replica in order whose block verifies is copied to the others), delete
// orphaned inodes' data, trim chunk bytes stored past a file's committed size (prefix
// rule, store/past-size.ts), and remove leftover .tmp. files and shards of versions that
// no chunk map points at. Returns a report of what it did.
import * as nodePath from 'node:path';
import { CHUNKS_DIR, isTempName, parseShardRelPath } from '../src/path';
import { ChunkEnv } from './chunk-env';
import { ChunkRef } from './chunk-ref';
import { Intent } from './chunk-map';
import { FileIo } from './file-io';
import { errnoCode } from './io';
import { classifyShardError } from './shard-encode';

export interface RecoveryReport {
  intentsResolved: number;
  /** Intents left open because a replica's disk could not be written (resolved at a later open). */
  intentsKeptOpen: number;
  blocksRepaired: number;
  blocksUnresolved: number;
  orphansDeleted: number;
  /** Files that lost chunk bytes stored past their committed size (DESIGN §5 prefix rule). */
  filesTrimmed: number;
  tmpFilesRemoved: number;
  garbageShardsRemoved: number;
  errors: string[];
}

const DIR_ENTRIES_MAX = 1_000_000;

export function emptyRecoveryReport(): RecoveryReport {
  return { intentsResolved: 0, intentsKeptOpen: 0, blocksRepaired: 0, blocksUnresolved: 0, orphansDeleted: 0, filesTrimmed: 0, tmpFilesRemoved: 0, garbageShardsRemoved: 0, errors: [] };
}

async function readBlock(env: ChunkEnv, ref: ChunkRef, i: number, start: number, len: number): Promise<Buffer | null> {
  try {
    return await env.shards.readVerified(ref, i, start, len);
  } catch (err) {
    if (classifyShardError(err) === null) throw err;
    return null;
  }
}

/**
 * Make blocks first..last identical on all replicas: the first verifying replica wins.
 * Returns false when a replica could not be brought in line (its disk failing or
 * offline): the intent must stay open, else that replica would keep old blocks that
 * still verify, and a later read could return them (resolved again at the next open).
 */
export async function resolveIntent(env: ChunkEnv, ref: ChunkRef, first: number, last: number, report: RecoveryReport): Promise<boolean> {
  let complete = true;
  const bb = ref.fl.bitrotBlockBytes;
  const replicas = ref.diskIds.length;
  for (let b = first; b <= last; b++) {
    const start = b * bb;
    const len = Math.min(bb, ref.logicalLenBytes - start);
    if (len <= 0) break;
    const blocks: Array<Buffer | null> = [];
    for (let i = 0; i < replicas; i++) blocks.push(await readBlock(env, ref, i, start, len));
    const winner = blocks.find((x) => x !== null) ?? null;
    if (winner === null) {
      report.blocksUnresolved++;
      report.errors.push(`ino ${ref.ino} chunk ${ref.chunkIndex} block ${b}: no replica verifies`);
      for (let i = 0; i < replicas; i++) env.map.queueHeal(ref.ino, ref.chunkIndex, ref.version, i, 'recovery: block verifies nowhere');
      continue;
    }
    for (let i = 0; i < replicas; i++) {
      if (blocks[i] !== null && blocks[i]!.equals(winner)) continue;
      try {
        await env.shards.patchBlocks(ref, i, b, winner);
        report.blocksRepaired++;
      } catch (err) {
        report.errors.push(`ino ${ref.ino} chunk ${ref.chunkIndex} replica ${i}: ${(err as Error).message}`);
        env.map.queueHeal(ref.ino, ref.chunkIndex, ref.version, i, `recovery: could not repair block ${b}`);
        complete = false;
      }
    }
  }
  return complete;
}

async function resolveIntents(env: ChunkEnv, files: FileIo, report: RecoveryReport): Promise<void> {
  for (const intent of env.map.intents() as Intent[]) {
    await files.withChunk(intent.ino, intent.chunkIndex, async (ref) => {
      // A chunk rewritten since (copy-on-write fallback) or gone: nothing to resolve.
      if (ref !== null && ref.version === intent.version && ref.fl.layout.kind === 'replica') {
        if (!(await resolveIntent(env, ref, intent.firstBlock, intent.lastBlock, report))) {
          report.intentsKeptOpen++;
          return;
        }
        env.counters.bump('intents_resolved');
      }
      env.map.removeIntent(intent.id);
      report.intentsResolved++;
    });
  }
}

async function listDir(env: ChunkEnv, dir: string): Promise<string[]> {
  try {
    const names = await env.shards.io.readdir(dir);
    return names.slice(0, DIR_ENTRIES_MAX);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

/** Walk .chunks/p0/p1/fid.vV/cN/ on one disk, removing temp files and unreferenced shards. */
async function collectGarbage(env: ChunkEnv, root: string, live: Set<string>, report: RecoveryReport): Promise<void> {
  const top = nodePath.join(root, CHUNKS_DIR);
  for (const p0 of await listDir(env, top)) {
    for (const p1 of await listDir(env, nodePath.join(top, p0))) {
      for (const vdir of await listDir(env, nodePath.join(top, p0, p1))) {
        const vpath = nodePath.join(top, p0, p1, vdir);
        for (const cdir of await listDir(env, vpath)) {
          const cpath = nodePath.join(vpath, cdir);
          for (const name of await listDir(env, cpath)) {
            const rel = [CHUNKS_DIR, p0, p1, vdir, cdir, name].join('/');
            const parsed = parseShardRelPath(rel);
            const isTemp = isTempName(name);
            const keep = !isTemp && parsed !== null && live.has(`${parsed.fileId}/${parsed.chunkIndex}/${parsed.version}`);
            if (keep || (!isTemp && parsed === null)) continue; // unknown files are left for fsck
            await env.shards.io.unlink(nodePath.join(cpath, name));
            if (isTemp) report.tmpFilesRemoved++;
            else report.garbageShardsRemoved++;
          }
          await env.shards.io.rmdir(cpath).catch(() => undefined); // only if now empty
        }
        await env.shards.io.rmdir(vpath).catch(() => undefined);
      }
    }
  }
}

export async function recover(env: ChunkEnv, files: FileIo, orphans: number[], diskRoots: string[]): Promise<RecoveryReport> {
  const report = emptyRecoveryReport();
  await resolveIntents(env, files, report);
  for (const ino of orphans) {
    try {
      await files.deleteFile(ino);
      report.orphansDeleted++;
    } catch (err) {
      report.errors.push(`orphan ${ino}: ${(err as Error).message}`);
    }
  }
  report.filesTrimmed = await files.trimPastSize(report.errors);
  const live = env.map.liveKeys();
  for (const root of diskRoots) {
    try {
      await collectGarbage(env, root, live, report);
    } catch (err) {
      report.errors.push(`disk ${root}: ${(err as Error).message}`);
    }
  }
  return report;
}
