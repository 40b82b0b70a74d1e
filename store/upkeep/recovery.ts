// Recovery at open (DESIGN §5): its work is proportional to what was in flight, never to the
// store's size. It applies every journaled write intent the log holds (onto every replica, or into
// a new EC version: an intent row holds the new bytes of its block span, so any number of torn
// replicas are repaired; an intent log file record holds the bytes written, laid over the block
// read from a replica that verifies, store/upkeep/log-replay.ts), drops the metadata of orphaned inodes (their chunks go on the reclaim
// queue), and trims chunk bytes stored past a file's committed size (prefix rule, store/meta/past-size.ts). Shards a crash left behind are found through the reclaim queue (store/upkeep/reclaim.ts), not
// by walking the disks; scrub's leak scan (store/upkeep/leak-scan.ts) checks that nothing escaped it.
import { ChunkEnv } from '../chunks/chunk-env';
import { CompactReport, emptyCompactReport } from '../small/compactor';
import { ChunkRef, patchedInPlace } from '../chunks/chunk-ref';
import { Applier } from '../chunks/applier';
import { Intent } from '../meta/chunk-map';
import { FileIo } from '../file-io';
import { classifyShardError } from '../chunks/shard-encode';
import { LogRecord } from '../../src/intent-record';
import { replayLog } from './log-replay';
import { refusePlainIntent } from '../chunks/plain-intent';

export interface RecoveryReport {
  intentsResolved: number;
  /** Intents left open because a replica's disk could not be written (resolved at a later open). */
  intentsKeptOpen: number;
  blocksRepaired: number;
  blocksUnresolved: number;
  orphansDeleted: number;
  /** Files that lost chunk bytes stored past their committed size (DESIGN §5 prefix rule). */
  filesTrimmed: number;
  /** Containers sealed at open (left full by a crash), spec §11.5. */
  containers: CompactReport;
  errors: string[];
}

export function emptyRecoveryReport(): RecoveryReport {
  return {
    intentsResolved: 0,
    intentsKeptOpen: 0,
    blocksRepaired: 0,
    blocksUnresolved: 0,
    orphansDeleted: 0,
    filesTrimmed: 0,
    containers: emptyCompactReport(),
    errors: [],
  };
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
 * An intent of an older build holds no bytes: make blocks first..last identical on all replicas,
 * the first verifying replica wins (that build patched replicas in order, each durable first).
 */
export async function resolveLegacyIntent(
  env: ChunkEnv,
  ref: ChunkRef,
  first: number,
  last: number,
  report: RecoveryReport,
): Promise<boolean> {
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
      for (let i = 0; i < replicas; i++)
        env.map.queueHeal(ref.ino, ref.chunkIndex, ref.version, i, 'recovery: block verifies nowhere');
      continue;
    }
    for (let i = 0; i < replicas; i++) {
      if (blocks[i] !== null && blocks[i]!.equals(winner)) continue;
      try {
        await env.shards.patchBlocks(ref, i, [{ firstBlock: b, span: winner }]);
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

/** Each intent into the backlog, or settled now: its chunk was rewritten since or is gone; legacy intents the old way. */
async function loadIntents(env: ChunkEnv, files: FileIo, intents: Intent[], report: RecoveryReport): Promise<void> {
  for (const intent of intents) {
    await files.withChunk(intent.ino, intent.chunkIndex, async (ref) => {
      if (ref === null || ref.version !== intent.version) {
        env.map.removeIntent(intent.id);
        report.intentsResolved++;
        return;
      }
      if (intent.span !== null) {
        refusePlainIntent(ref, intent.sealed, { row: intent.id });
        env.backlog.add(
          {
            id: intent.id,
            ino: intent.ino,
            chunkIndex: intent.chunkIndex,
            version: intent.version,
            firstBlock: intent.firstBlock,
            span: intent.span,
            inPlace: patchedInPlace(ref),
          },
          ref.fl.bitrotBlockBytes,
        );
        report.blocksRepaired += intent.lastBlock - intent.firstBlock + 1;
        return;
      }
      if (patchedInPlace(ref) && !(await resolveLegacyIntent(env, ref, intent.firstBlock, intent.lastBlock, report))) {
        report.intentsKeptOpen++;
        return;
      }
      env.map.removeIntent(intent.id);
      report.intentsResolved++;
    });
  }
}

/**
 * Every intent the log holds goes back into the backlog and the applier drains it (DESIGN §5):
 * rows first, then the intent log file's records in order; each replica patched with every pending
 * span of its chunk, or one new version per EC chunk. An intent whose chunk was
 * rewritten since, or is gone, holds nothing to replay. What cannot be applied now (a disk failing)
 * stays in the log for the next open.
 */
async function resolveIntents(
  env: ChunkEnv,
  files: FileIo,
  applier: Applier,
  logRecords: readonly LogRecord[],
  report: RecoveryReport,
): Promise<void> {
  const intents = env.map.intents();
  // Free last (DESIGN §5): a process kill can leave an intent committed but not yet flushed (its
  // writer died before its flush); it is made durable before its bytes overwrite the replicas, so
  // a power loss during recovery cannot leave new bytes the log forgot.
  if (intents.length > 0) await env.commits.flushIfDirty();
  const appliedBefore = env.backlog.appliedIntents;
  applier.loading = true; // each chunk applied once, with all its intents
  try {
    await loadIntents(env, files, intents, report);
    await replayLog(env, files, logRecords, report);
  } finally {
    applier.loading = false;
  }
  await applier.drain();
  const applied = env.backlog.appliedIntents - appliedBefore;
  env.counters.bump('intents_resolved', applied);
  report.intentsResolved += applied;
  report.intentsKeptOpen += env.backlog.lengthIntents;
  if (env.backlog.lengthIntents > 0)
    report.errors.push(
      `${env.backlog.lengthIntents} intent(s) could not be applied now (${applier.lastError}); kept in the log`,
    );
}

/** logRecords: what replay of the intent log file found (store/chunks/intent-log.ts), in order. */
export async function recover(
  env: ChunkEnv,
  files: FileIo,
  applier: Applier,
  orphans: number[],
  logRecords: readonly LogRecord[] = [],
): Promise<RecoveryReport> {
  const report = emptyRecoveryReport();
  await resolveIntents(env, files, applier, logRecords, report);
  for (const ino of orphans) {
    try {
      await files.deleteFile(ino);
      report.orphansDeleted++;
    } catch (err) {
      report.errors.push(`orphan ${ino}: ${(err as Error).message}`);
    }
  }
  report.filesTrimmed = await files.trimPastSize(report.errors);
  // The replays and reclaim entries above become durable with the first full commit.
  await env.commits.flushIfDirty();
  return report;
}
