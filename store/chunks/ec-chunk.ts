// EC(k,m) chunk I/O. Reads use the §6 fast path: only the data shards covering the
// range are read, each a verified §9 read. When one fails (bitrot, missing file,
// header mismatch, failing disk) the same shard-offset range is read from enough
// other shards and only that range is rebuilt (RS is column-wise, so the range of
// the affected erasure blocks is all that is decoded) — DESIGN §6.
import { UnrecoverableError, assert } from '../../src/errors';
import { mapRange, splitChunk } from '../../src/mapping';
import { rsCodec } from '../../src/rs';
import { ChunkEnv, noteServedAround, noteShardFailure, readOrder } from './chunk-env';
import { ChunkRef, ecGeometry, payloadLen, shardDataLen, siteOf } from './chunk-ref';
import { Payload } from './shard-encode';
import { Maybe, isPromise } from './maybe-async';
import { settledAll } from '../io/io';

function km(ref: ChunkRef): { k: number; m: number } {
  const l = ref.fl.layout;
  assert(l.kind === 'ec', 'EC chunk I/O on an EC layout');
  return { k: l.k, m: l.m };
}

/**
 * The k+m shard payloads of a chunk (spec §6 split, then RS parity). When every
 * erasure block is full and its fragments are whole bitrot blocks, data shards are
 * views into the chunk (no copy) and parity is encoded per erasure block, into buffers from alloc.
 */
export function encodeEcShards(
  ref: ChunkRef,
  content: Uint8Array,
  alloc: (lengthBytes: number) => Buffer = (n) => Buffer.allocUnsafe(n),
): Payload[] {
  const { k, m } = km(ref);
  const g = ecGeometry(ref);
  const eb = g.ecBlockSizeBytes;
  const frag = eb / k;
  const zeroCopy =
    Number.isInteger(frag) && frag % ref.fl.bitrotBlockBytes === 0 && content.length % eb === 0 && content.length > 0;
  if (!zeroCopy) {
    const data = splitChunk(g, content);
    const parity = rsCodec(k, m).encode(data);
    assert(parity.length === m && parity.every((p) => p.length === data[0].length), 'RS parity shape');
    return [...data, ...parity];
  }
  const ebCount = content.length / eb;
  // alloc: the whole-chunk writer's pooled buffers (a fresh 1 MiB parity shard costs page faults and GC).
  const parity = Array.from({ length: m }, () => alloc(ebCount * frag));
  const data: Uint8Array[][] = Array.from({ length: k }, () => []);
  const codec = rsCodec(k, m);
  for (let e = 0; e < ebCount; e++) {
    const slices = Array.from({ length: k }, (_, i) => content.subarray(e * eb + i * frag, e * eb + (i + 1) * frag));
    slices.forEach((s, i) => data[i].push(s)); // spec §6: shard i holds fragment i of every erasure block
    codec.encodeInto(
      slices,
      parity.map((p) => p.subarray(e * frag, (e + 1) * frag)),
    );
  }
  return [...data, ...parity];
}

/**
 * Rebuild shards `wanted` over shard-relative [start, end) from any k shards that
 * verify, skipping those in `bad` (which grows as more fail).
 */
export async function reconstructRange(
  env: ChunkEnv,
  ref: ChunkRef,
  start: number,
  end: number,
  wanted: number[],
  bad: Set<number>,
): Promise<Buffer[]> {
  const { k, m } = km(ref);
  const all = Array.from({ length: k + m }, (_, i) => i);
  const candidates = readOrder(
    env,
    ref,
    all.filter((i) => !bad.has(i)),
  );
  const have = new Map<number, Buffer>();
  let next = 0;
  for (let round = 0; round <= k + m && have.size < k; round++) {
    const batch = candidates.slice(next, next + (k - have.size));
    next += batch.length;
    if (batch.length < k - have.size) {
      env.counters.bump('unrecoverable_reads');
      throw new UnrecoverableError(
        `only ${have.size + batch.length} of the ${k} shards needed verify`,
        siteOf(ref),
        [...bad].sort((a, b) => a - b),
      );
    }
    await Promise.all(
      batch.map(async (i) => {
        try {
          have.set(i, await env.shards.readVerified(ref, i, start, end - start));
          env.health.ok(ref.diskIds[i]);
        } catch (err) {
          noteShardFailure(env, ref, i, err);
          bad.add(i);
        }
      }),
    );
  }
  assert(have.size >= k, 'reconstruct: k shards gathered');
  const shards = all.map((i) => have.get(i) ?? null);
  env.counters.bump('reconstructions');
  noteServedAround(env);
  return rsCodec(k, m).reconstructSome(shards, wanted);
}

/**
 * Verified read of chunk range [offset, +length) into target[targetOffset..] (spec §6 fast path):
 * each data shard's range is read and verified in pooled scratch and its pieces copied straight
 * into target (synchronously when cached, store/chunks/shard-store.ts readVerifiedWith). The shards that
 * fail are counted and queued for heal once, where the failure is seen, and only their range is
 * rebuilt from the others (DESIGN §6), which never reads a failed shard again.
 */
export function readEcInto(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
  targetOffset: number,
  inline = true,
): Maybe<void> {
  assert(targetOffset >= 0 && targetOffset + lengthBytes <= target.length, 'readEcInto: target holds the range');
  if (lengthBytes === 0) return;
  const pieces = mapRange(ecGeometry(ref), offsetBytes, lengthBytes);
  const ranges = new Map<number, { start: number; end: number }>();
  for (const p of pieces) {
    const r = ranges.get(p.dataShard);
    const end = p.shardOffsetBytes + p.lengthBytes;
    if (r === undefined) ranges.set(p.dataShard, { start: p.shardOffsetBytes, end });
    else ranges.set(p.dataShard, { start: Math.min(r.start, p.shardOffsetBytes), end: Math.max(r.end, end) });
  }
  // bytes = shard `shard` from shard offset `start`: copy that shard's pieces into target.
  const place = (shard: number, start: number, bytes: Buffer): void => {
    for (const p of pieces) {
      if (p.dataShard !== shard) continue;
      const at = p.shardOffsetBytes - start;
      assert(at >= 0 && at + p.lengthBytes <= bytes.length, 'piece inside the shard range read');
      bytes.copy(target, targetOffset + p.chunkOffsetBytes - offsetBytes, at, at + p.lengthBytes);
    }
  };
  const bad = new Set<number>();
  const fail = (shard: number, err: unknown): void => {
    noteShardFailure(env, ref, shard, err);
    bad.add(shard);
  };
  const waiting: Promise<void>[] = [];
  // Several data shards: all on the pool at once (their device waits overlap); one: maybe inline.
  const oneAtOnce = inline && ranges.size === 1;
  for (const [shard, r] of ranges) {
    if (env.health.suspect(ref.diskIds[shard])) {
      bad.add(shard); // an offline disk: reconstruct without waiting on it (DESIGN §6)
      continue;
    }
    let read: Maybe<void>;
    try {
      read = env.shards.readVerifiedWith(
        ref,
        shard,
        r.start,
        r.end - r.start,
        (bytes) => place(shard, r.start, bytes),
        oneAtOnce,
      );
    } catch (err) {
      fail(shard, err);
      continue;
    }
    if (!isPromise(read)) env.health.ok(ref.diskIds[shard]);
    else
      waiting.push(
        read.then(
          () => env.health.ok(ref.diskIds[shard]),
          (err: unknown) => fail(shard, err),
        ),
      );
  }
  const rebuild = (): Maybe<void> => {
    if (bad.size === 0) return;
    const failed = [...bad].sort((a, b) => a - b);
    const start = Math.min(...failed.map((s) => ranges.get(s)!.start));
    const end = Math.max(...failed.map((s) => ranges.get(s)!.end));
    return reconstructRange(env, ref, start, end, failed, bad).then((rebuilt) =>
      failed.forEach((s, i) => place(s, start, rebuilt[i])),
    );
  };
  return waiting.length === 0 ? rebuild() : settledAll(waiting).then(rebuild);
}

/** Payload of shard i rebuilt from the others (heal). */
export async function rebuildEcShard(env: ChunkEnv, ref: ChunkRef, shardIndex: number): Promise<Buffer> {
  const [payload] = await reconstructRange(env, ref, 0, shardDataLen(ref), [shardIndex], new Set([shardIndex]));
  return payload;
}

/**
 * The whole stored payload of an EC chunk joined from its data shards (spec §6); with `without`,
 * the data shards rebuilt from the others leaving that shard out (finding the shard that fails an
 * encrypted payload's tag although its hashes pass: store/upkeep/tag-check.ts, chunk-transform.ts).
 */
export async function readEcPayload(env: ChunkEnv, ref: ChunkRef, without?: number): Promise<Buffer> {
  const out = Buffer.alloc(payloadLen(ref));
  if (without === undefined) {
    await readEcInto(env, ref, 0, out.length, out, 0, false);
    return out;
  }
  const { k } = km(ref);
  const data = await reconstructRange(
    env,
    ref,
    0,
    shardDataLen(ref),
    Array.from({ length: k }, (_, i) => i),
    new Set([without]),
  );
  for (const p of mapRange(ecGeometry(ref), 0, out.length)) {
    data[p.dataShard].copy(out, p.chunkOffsetBytes, p.shardOffsetBytes, p.shardOffsetBytes + p.lengthBytes);
  }
  return out;
}
