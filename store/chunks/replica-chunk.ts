// Replica chunk I/O. Reads: replicas in order, each a verified §9 read; a failure
// is counted and queued for heal and the next replica is tried (DESIGN §6).
// Partial writes: §8.2 read-modify-write at bitrot-block granularity under the
// DESIGN §5 protocol: a durable journaled intent holding the new bytes, then, from the
// applier (store/chunks/applier.ts), the first replica patched, then the others in parallel.
import { UnrecoverableError, assert } from '../../src/errors';
import { ChunkEnv, noteServedAround, noteShardFailure, readOrder } from './chunk-env';
import { ChunkRef, siteOf } from './chunk-ref';
import { Maybe, isPromise } from './maybe-async';

/**
 * Chunk range [offset, +length) of a replica chunk into target[targetOffset..]: the replicas in
 * read order, each one verified §9 read (store/chunks/shard-store.ts readVerifiedWith), until one
 * verifies. The failover happens here, where the failure is seen: a replica that failed is counted
 * and queued for heal once (noteShardFailure) and never read again for this request. Synchronous
 * while every read it needs is (cached data: no promise). inline: as for readVerifiedWith. direct:
 * read into target and verified there (shard-store.ts readVerifiedInto: a replica that fails leaves
 * unverified bytes in the range until the next one overwrites it), for buffers no reader sees
 * until this resolves.
 */
export function readReplicaInto(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
  targetOffset: number,
  inline = true,
  direct = false,
): Maybe<void> {
  assert(ref.fl.layout.kind === 'replica', 'replica read on a replica layout');
  assert(targetOffset >= 0 && targetOffset + lengthBytes <= target.length, 'replica read: target holds the range');
  const order = readOrder(
    env,
    ref,
    ref.diskIds.map((_, i) => i),
  );
  const failed: number[] = [];
  const why: string[] = [];
  const copy = (bytes: Buffer): void => {
    assert(bytes.length === lengthBytes, 'verified view is exactly the range');
    bytes.copy(target, targetOffset);
  };
  const served = (i: number): void => {
    env.health.ok(ref.diskIds[i]);
    if (failed.length > 0) env.counters.bump('failovers');
    if (i !== 0) noteServedAround(env); // replica 0 is read first unless it failed or its disk is suspect
  };
  const fail = (i: number, err: unknown): void => {
    why.push(`${i} ${noteShardFailure(env, ref, i, err)}`);
    failed.push(i);
  };
  const tryFrom = (k: number): Maybe<void> => {
    for (; k < order.length; k++) {
      const i = order[k];
      let r: Maybe<void>;
      try {
        r = direct
          ? env.shards.readVerifiedInto(ref, i, offsetBytes, lengthBytes, target, targetOffset)
          : env.shards.readVerifiedWith(ref, i, offsetBytes, lengthBytes, copy, inline);
      } catch (err) {
        fail(i, err);
        continue;
      }
      if (!isPromise(r)) return served(i);
      const next = k + 1;
      return r.then(
        () => served(i),
        (err: unknown) => {
          fail(i, err);
          return tryFrom(next);
        },
      );
    }
    env.counters.bump('unrecoverable_reads');
    throw new UnrecoverableError(
      `no replica of [${offsetBytes}, +${lengthBytes}) verifies (shard ${why.join(', ')})`,
      siteOf(ref),
      failed,
    );
  };
  return tryFrom(0);
}

/** The replicas that could not be patched; the caller rewrites the chunk copy-on-write instead. */
export class RmwFailed extends Error {
  constructor(
    readonly reason: unknown,
    readonly failedReplicas: number[],
  ) {
    super(
      `replica patch failed on replica(s) ${failedReplicas.join(',')}: ${reason instanceof Error ? reason.message : String(reason)}`,
    );
  }
}

/**
 * §8.2 steps 3-5: the first replica alone, fdatasync'd, then every other one at once (DESIGN §5:
 * for every block at least one replica verifies as old or new at every instant, so recovery can
 * read it back and lay the log's bytes, exactly the bytes written, over it; the intent log holds
 * no whole blocks). Resolves when all are durable; else RmwFailed naming the ones that failed.
 */
export async function patchReplicas(
  env: ChunkEnv,
  ref: ChunkRef,
  runs: ReadonlyArray<{ firstBlock: number; span: Uint8Array }>,
): Promise<void> {
  const patch = (i: number): Promise<void> => env.shards.patchBlocks(ref, i, runs);
  const first = await Promise.allSettled([patch(0)]);
  const rest =
    first[0].status === 'fulfilled' ? await Promise.allSettled(ref.diskIds.slice(1).map((_, k) => patch(k + 1))) : [];
  const results = [...first, ...rest];
  const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
  if (first[0].status === 'rejected') for (let i = 1; i < ref.diskIds.length; i++) failed.push(i); // not tried: rewritten with the rest
  if (failed.length === 0) return;
  for (const i of failed) {
    const r = results[i];
    if (r?.status === 'rejected') env.health.fail(ref.diskIds[i], String(r.reason));
  }
  throw new RmwFailed((results[failed[0]] as PromiseRejectedResult).reason, failed);
}
