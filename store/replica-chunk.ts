// Replica chunk I/O. Reads: replicas in order, each a verified §9 read; a failure
// is counted and queued for heal and the next replica is tried (DESIGN §6).
// Partial writes: §8.2 read-modify-write at bitrot-block granularity under the
// DESIGN §5 protocol: write intent first, then replicas in fixed order, each made
// durable (fdatasync) before the next is touched, so a crash tears at most one.
import { UnrecoverableError, assert } from '../src/errors';
import { ChunkEnv, noteShardFailure, readOrder } from './chunk-env';
import { ChunkRef, siteOf } from './chunk-ref';

export function readReplica(env: ChunkEnv, ref: ChunkRef, offsetBytes: number, lengthBytes: number): Promise<Buffer> {
  return withFailover(env, ref, offsetBytes, lengthBytes, (i) => env.shards.readVerified(ref, i, offsetBytes, lengthBytes));
}

/** readReplica copied into target[targetOffset..] through a pooled scratch buffer (no fresh span buffer). */
export function readReplicaInto(env: ChunkEnv, ref: ChunkRef, offsetBytes: number, lengthBytes: number, target: Buffer, targetOffset: number): Promise<void> {
  return withFailover(env, ref, offsetBytes, lengthBytes, (i) => env.shards.readVerifiedInto(ref, i, offsetBytes, lengthBytes, target, targetOffset));
}

/** Try the replicas in read order until one verifies; count and queue the ones that failed. */
async function withFailover<T>(env: ChunkEnv, ref: ChunkRef, offsetBytes: number, lengthBytes: number, readOne: (shardIndex: number) => Promise<T>): Promise<T> {
  assert(ref.fl.layout.kind === 'replica', 'replica read on a replica layout');
  const failed: number[] = [];
  const order = readOrder(env, ref, ref.diskIds.map((_, i) => i));
  for (const i of order) {
    try {
      const data = await readOne(i);
      env.health.ok(ref.diskIds[i]);
      if (failed.length > 0) env.counters.bump('failovers');
      return data;
    } catch (err) {
      noteShardFailure(env, ref, i, err);
      failed.push(i);
    }
  }
  env.counters.bump('unrecoverable_reads');
  throw new UnrecoverableError(`no replica of [${offsetBytes}, +${lengthBytes}) verifies`, siteOf(ref), failed);
}

/** Block-aligned span [first*bb, min((last+1)*bb, L)) that a chunk range touches. */
export function blockSpan(ref: ChunkRef, offsetBytes: number, lengthBytes: number): { first: number; last: number; start: number; end: number } {
  const bb = ref.fl.bitrotBlockBytes;
  const first = Math.floor(offsetBytes / bb);
  const last = Math.floor((offsetBytes + lengthBytes - 1) / bb);
  return { first, last, start: first * bb, end: Math.min((last + 1) * bb, ref.logicalLenBytes) };
}

/** Write span (blocks first..) into replicas 0..count-1 in order, each durable before the next. */
async function patchInOrder(env: ChunkEnv, ref: ChunkRef, first: number, span: Buffer, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await env.shards.patchBlocks(ref, i, first, span);
}

export class RmwFailed extends Error {
  /** openIntentId: the intent left open when rollback failed (null when rolled back). */
  constructor(readonly reason: unknown, readonly openIntentId: number | null) {
    super(`replica read-modify-write failed: ${reason instanceof Error ? reason.message : String(reason)}`);
  }
}

/**
 * In-place partial overwrite of [offset, offset+data.length) inside the chunk's
 * current length, under intentId: the caller committed that intent (DESIGN §5)
 * durably before calling. On failure the touched replicas are rolled back to the
 * old span (intent removed; kept if the rollback fails too, for recovery at open)
 * and RmwFailed is thrown so the caller can fall back to a copy-on-write of the
 * whole chunk. Errors before any replica is touched are rethrown as they are.
 */
export async function rmwReplica(env: ChunkEnv, ref: ChunkRef, offsetBytes: number, data: Uint8Array, intentId: number): Promise<void> {
  assert(ref.fl.layout.kind === 'replica', 'rmwReplica on a replica layout');
  assert(data.length > 0 && offsetBytes + data.length <= ref.logicalLenBytes, 'RMW stays inside the chunk');
  const s = blockSpan(ref, offsetBytes, data.length);
  // §8.2 step 1: the old blocks, verified (failover if a replica is bad).
  const oldSpan = await readReplica(env, ref, s.start, s.end - s.start);
  const span = Buffer.from(oldSpan);
  span.set(data, offsetBytes - s.start); // step 2
  const replicas = ref.diskIds.length;
  let touched = 0;
  try {
    for (let i = 0; i < replicas; i++) {
      touched = i + 1;
      await env.shards.patchBlocks(ref, i, s.first, span); // steps 3-5
    }
  } catch (err) {
    try {
      await patchInOrder(env, ref, s.first, oldSpan, touched);
      env.map.removeIntent(intentId);
      throw new RmwFailed(err, null);
    } catch (rollbackErr) {
      if (rollbackErr instanceof RmwFailed) throw rollbackErr;
      throw new RmwFailed(err, intentId); // the intent stays; recovery resolves it
    }
  }
  // All replicas agree now; the caller removes the intent (a crash before that leaves
  // an intent whose resolution finds nothing to copy).
}
