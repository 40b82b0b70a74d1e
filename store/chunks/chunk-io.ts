// Whole-chunk operations shared by the write paths: the whole-shard write of every
// shard of a chunk version (spec §8.1, concurrently, with a write quorum), verified
// reads dispatched by layout, and payload building.
import { ErrorSite, UnrecoverableError, assert } from '../../src/errors';
import { ChunkEnv, noteShardFailure } from './chunk-env';
import { ChunkRef, shardDataLen, siteOf } from './chunk-ref';
import { encodeEcShards, readEcInto, rebuildEcShard } from './ec-chunk';
import { FsError } from '../fs-error';
import { errnoCode } from '../io/io';
import { shardCount, writeQuorum } from '../../src/layout';
import { readReplicaInto } from './replica-chunk';
import { Maybe, isPromise } from './maybe-async';
import { Payload, blockAlignedSlices, joinPayload } from './shard-encode';
import { hasTransforms } from '../../src/chunk-transforms';
import { overlaySpans, uncoveredParts } from './intent-backlog';
import { encodeChunkOffThread, readDecodedInto } from './chunk-transform';
import { StoredForm } from '../meta/chunk-map';
import type { WriteSyncs } from './tx-group';

/** readChunkInto into a fresh buffer (truncate's tail rewrite, FileIo.read). */
export async function readChunk(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
): Promise<Buffer> {
  const out = Buffer.allocUnsafe(lengthBytes);
  await readChunkInto(env, ref, offsetBytes, lengthBytes, out, 0);
  return out;
}

/**
 * The chunk's bytes as the file shows them (DESIGN §5 one view): the verified stored range, by
 * layout, with the spans of intents the applier has not yet written over it. Synchronous when
 * cached (store/chunks/maybe-async.ts). inline false: every shard read on the pool (store/chunks/shard-store.ts).
 */
export function readChunkInto(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
  targetOffset: number,
  inline = true,
): Maybe<void> {
  if (lengthBytes === 0) return;
  if (!env.backlog.has(ref.ino, ref.chunkIndex))
    return readStoredInto(env, ref, offsetBytes, lengthBytes, target, targetOffset, inline);
  // Only what no pending span covers is read from the shards: the applier may be patching those
  // spans' blocks right now (it does not hold readers back), and the spans hold their bytes anyway.
  // One snapshot for both steps: the applier may drop the intents before the reads end.
  const pending = env.backlog.overlapping(ref.ino, ref.chunkIndex, offsetBytes, lengthBytes);
  const parts = uncoveredParts(pending, ref.version, offsetBytes, lengthBytes);
  const reads = parts.map(([lo, hi]) =>
    readStoredInto(env, ref, lo, hi - lo, target, targetOffset + lo - offsetBytes, inline),
  );
  const overlay = (): void => overlaySpans(pending, ref.version, offsetBytes, lengthBytes, target, targetOffset);
  return reads.some(isPromise) ? Promise.all(reads).then(overlay) : overlay();
}

/**
 * One replica's verified bytes of a chunk range as the file shows them (pending intents over the
 * stored bytes; the spans' blocks are not read: the applier may be patching them). For readers that
 * must check each replica on its own (needles, spec §11.4).
 */
export async function readReplicaView(
  env: ChunkEnv,
  ref: ChunkRef,
  replica: number,
  offsetBytes: number,
  lengthBytes: number,
): Promise<Buffer> {
  assert(ref.stored === null, 'a replica view is of raw replicas (a transformed chunk is decoded whole)');
  if (!env.backlog.has(ref.ino, ref.chunkIndex)) return env.shards.readVerified(ref, replica, offsetBytes, lengthBytes);
  const pending = env.backlog.overlapping(ref.ino, ref.chunkIndex, offsetBytes, lengthBytes); // one snapshot, as in readChunkInto
  const out = Buffer.alloc(lengthBytes);
  for (const [lo, hi] of uncoveredParts(pending, ref.version, offsetBytes, lengthBytes)) {
    (await env.shards.readVerified(ref, replica, lo, hi - lo)).copy(out, lo - offsetBytes);
  }
  overlaySpans(pending, ref.version, offsetBytes, lengthBytes, out, 0);
  return out;
}

/**
 * The verified stored range only, by layout (what the shards hold, without pending intents); a
 * transformed chunk's range is decoded from its whole verified payload (DESIGN §10). direct: read
 * into target and verified there, for a buffer no reader sees until this resolves (DESIGN §6
 * "Read buffers").
 */
export function readStoredInto(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
  targetOffset: number,
  inline = true,
  direct = false,
): Maybe<void> {
  if (ref.stored !== null) return readDecodedInto(env, ref, offsetBytes, lengthBytes, target, targetOffset);
  return ref.fl.layout.kind === 'replica'
    ? readReplicaInto(env, ref, offsetBytes, lengthBytes, target, targetOffset, inline, direct)
    : readEcInto(env, ref, offsetBytes, lengthBytes, target, targetOffset, inline, direct);
}

/** Shard payloads of a chunk: R copies, or the §6 split plus parity (parity buffers from alloc). */
export function shardPayloads(ref: ChunkRef, content: Payload, alloc?: (lengthBytes: number) => Buffer): Payload[] {
  if (ref.fl.layout.kind === 'replica') return ref.diskIds.map(() => content);
  return encodeEcShards(ref, joinPayload(content), alloc);
}

/**
 * Whether a chunk's content may stay in slices down to its shard writes: a plain replica layout
 * (its shard payload is the content, spec §8.1) and slices of whole bitrot blocks (spec §4.1: each
 * block is hashed within one slice).
 */
export function slicesStoredAsTheyLie(ref: Pick<ChunkRef, 'fl'>, slices: readonly Uint8Array[]): boolean {
  const { layout, bitrotBlockBytes } = ref.fl;
  return layout.kind === 'replica' && !hasTransforms(layout.transforms) && blockAlignedSlices(slices, bitrotBlockBytes);
}

/** A write that could not make enough shards durable; old data is untouched. */
function writeError(ref: ChunkRef, errors: unknown[], written: number, quorum: number): FsError {
  const noSpace = errors.some((e) => errnoCode(e) === 'ENOSPC');
  const site: ErrorSite = siteOf(ref);
  const first = errors[0] instanceof Error ? (errors[0] as Error).message : String(errors[0]);
  return new FsError(
    noSpace ? 'ENOSPC' : 'EIO',
    `only ${written} of ${quorum} required shards written to disks ${ref.diskIds.join(', ')} (${first})`,
    site,
  );
}

/** A whole write's shards are durable: the ones that failed (heal them) and its stored form (commit it). */
export interface WrittenChunk {
  failed: number[];
  stored: StoredForm | null;
}

/**
 * Whole-shard write of every shard of ref (a fresh, never-committed version), its content encoded
 * by the layout's transforms first (DESIGN §10). Succeeds when at least writeQuorum shards are
 * durable; returns the shard indices that failed (the caller queues them for heal when it commits
 * the version) and how it was stored (the caller commits that with the version).
 */
export async function writeWholeChunk(
  env: ChunkEnv,
  plain: ChunkRef,
  content: Payload,
  syncs?: WriteSyncs,
): Promise<WrittenChunk> {
  if (Array.isArray(content)) {
    // The write-back's pieces as they lie (DESIGN §5 "Write-back pieces"): each replica hashes and
    // writes the same slices. Other layouts encode one buffer (a rare join: the write-back joins
    // for them itself).
    if (slicesStoredAsTheyLie(plain, content)) return writeShards(env, plain, shardPayloads(plain, content), syncs);
    content = joinPayload(content);
  }
  // An encrypted payload is sealed into a pooled buffer, given back once every shard write settled:
  // on this VM a fresh 4 MiB buffer's page faults cost ~10x the sealing (docs/transforms.md).
  // EC parity shards too, from a pool of their own that keeps what it made (store/chunks/parity-pool.ts:
  // the codec pool kept 8 free, fewer than a sequential write has in flight, and dropped the rest to
  // the collector).
  const pool = env.decoded.pool;
  const parity = env.shards.parity;
  const taken: Buffer[] = [];
  const parityTaken: Buffer[] = [];
  const alloc = (n: number): Buffer => {
    const b = pool.takePayload(n);
    taken.push(b);
    return b;
  };
  const allocParity = (n: number): Buffer => {
    const b = parity.take(n);
    parityTaken.push(b);
    return b;
  };
  try {
    const { ref, payload } = await encodeChunkOffThread(env, plain, content, alloc);
    return await writeShards(env, ref, shardPayloads(ref, payload, allocParity), syncs);
  } finally {
    for (const b of taken) pool.give(b);
    for (const b of parityTaken) parity.give(b);
  }
}

/** syncs: a transaction group's write (DESIGN §5): the shards are written, not flushed; the group flushes them. */
async function writeShards(
  env: ChunkEnv,
  ref: ChunkRef,
  payloads: Payload[],
  syncs?: WriteSyncs,
): Promise<WrittenChunk> {
  const count = shardCount(ref.fl.layout);
  const errors: unknown[] = [];
  const failed: number[] = [];
  await Promise.all(
    payloads.map(async (payload, i) => {
      try {
        await env.shards.writeShard(ref, i, payload, syncs?.forShard(i));
        env.health.ok(ref.diskIds[i]);
      } catch (err) {
        errors.push(err);
        failed.push(i);
        env.health.fail(ref.diskIds[i], err instanceof Error ? err.message : String(err));
      }
    }),
  );
  const quorum = writeQuorum(ref.fl.layout);
  if (count - failed.length < quorum) {
    await env.shards.deleteChunk(ref, count).catch(() => undefined); // never committed: garbage
    throw writeError(ref, errors, count - failed.length, quorum);
  }
  if (failed.length > 0) env.counters.bump('degraded_writes');
  return { failed: failed.sort((a, b) => a - b), stored: ref.stored };
}

/**
 * The whole payload of one shard, rebuilt from the others (heal). accept: a replica's payload must
 * also pass it (an encrypted chunk's GCM tag, store/upkeep/tag-check.ts) to be copied.
 */
export async function rebuildPayload(
  env: ChunkEnv,
  ref: ChunkRef,
  shardIndex: number,
  accept?: (payload: Buffer) => boolean,
): Promise<Buffer> {
  if (ref.fl.layout.kind === 'ec') {
    return rebuildEcShard(env, ref, shardIndex);
  }
  const others = ref.diskIds.map((_, i) => i).filter((i) => i !== shardIndex);
  const errs: number[] = [];
  for (const i of others) {
    let payload: Buffer;
    try {
      payload = await env.shards.readVerified(ref, i, 0, shardDataLen(ref));
    } catch (err) {
      noteShardFailure(env, ref, i, err);
      errs.push(i);
      continue;
    }
    if (accept === undefined || accept(payload)) return payload;
    errs.push(i);
  }
  throw new UnrecoverableError('no other replica verifies', siteOf(ref, shardIndex), [shardIndex, ...errs]);
}
