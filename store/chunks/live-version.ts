// How a chunk's live version changes (DESIGN §5), in the commit transaction: a whole write made
// live, or the chunk retired (punch, truncate). The replaced version goes to the reclaim queue, and
// its pending intents go with it: a new version was made from the chunk as the file showed it (so
// it holds their bytes), a retired chunk has no bytes. The caller drops them from the backlog
// after the transaction (env.backlog.dropChunk), so a rolled-back commit keeps them.
import { assert } from '../../src/errors';
import { ChunkEnv } from './chunk-env';
import { ChunkRef, FileLayout } from './chunk-ref';
import { StoredForm } from '../meta/chunk-map';

/** A whole write whose shards are durable, waiting for the chunk map commit. */
export interface WholeWrite {
  chunkIndex: number;
  version: bigint;
  logicalLenBytes: number;
  /** Shards that could not be written (queued for heal). */
  failed: number[];
  /** Its stored form when its layout transformed it (store/chunks/chunk-transform.ts). */
  stored: StoredForm | null;
  old: ChunkRef | null;
}

/**
 * Make w live (data first: its shards are durable). replaced: the committed version it replaces, to
 * reclaim (free last); a grouped write names it apart (store/chunks/tx-group.ts: its old may be a row
 * an earlier group left out, never live).
 */
export function repoint(
  env: ChunkEnv,
  ino: number,
  fl: FileLayout,
  w: WholeWrite,
  replaced: bigint | null = w.old?.version ?? null,
): void {
  env.map.setLive(ino, w.chunkIndex, w.version, w.logicalLenBytes, w.stored);
  env.reclaim.remove(ino, w.chunkIndex, w.version);
  if (replaced !== null) {
    env.reclaim.add(ino, w.chunkIndex, replaced, fl);
    dropIntents(env, ino, w.chunkIndex);
  }
  for (const i of w.failed) env.map.queueHeal(ino, w.chunkIndex, w.version, i, 'write failed on this shard');
}

/**
 * Make an intents rewrite live (store/chunks/intent-rewrite.ts; data first): the pending intents it
 * holds go, those logged while it was written go over it; the replaced version goes to reclaim.
 */
export function repointRewrite(env: ChunkEnv, ino: number, fl: FileLayout, w: WholeWrite): void {
  assert(w.old !== null, 'a rewrite replaces a version');
  env.map.setLive(ino, w.chunkIndex, w.version, w.logicalLenBytes, w.stored);
  env.reclaim.remove(ino, w.chunkIndex, w.version);
  env.reclaim.add(ino, w.chunkIndex, w.old.version, fl);
  env.map.rebaseIntents(ino, w.chunkIndex, w.version, fl.layout.transforms.encryption !== null);
  for (const i of w.failed) env.map.queueHeal(ino, w.chunkIndex, w.version, i, 'write failed on this shard');
}

/** The chunk becomes a hole; its version goes to reclaim. */
export function retireChunk(env: ChunkEnv, ino: number, chunkIndex: number, version: bigint, fl: FileLayout): void {
  env.map.retire(ino, chunkIndex);
  env.reclaim.add(ino, chunkIndex, version, fl);
  dropIntents(env, ino, chunkIndex);
}

function dropIntents(env: ChunkEnv, ino: number, chunkIndex: number): void {
  if (env.backlog.of(ino, chunkIndex).length > 0) env.map.dropIntentsOfChunk(ino, chunkIndex);
}
