// EC(k,m) chunk I/O. Reads use the §6 fast path: only the data shards covering the
// range are read, each a verified §9 read. When one fails (bitrot, missing file,
// header mismatch, failing disk) the same shard-offset range is read from enough
// other shards and only that range is rebuilt (RS is column-wise, so the range of
// the affected erasure blocks is all that is decoded) — DESIGN §6.
import { UnrecoverableError, assert } from '../../src/errors';
import { fragmentBytesOf, mapRange, shardDataLenBytes, splitChunk } from '../../src/mapping';
import { rsCodec } from '../../src/rs';
import { ChunkEnv, noteServedAround, noteShardFailure, readOrder } from './chunk-env';
import { ChunkRef, ecGeometry, payloadLen, shardDataLen, siteOf } from './chunk-ref';
import { Payload, payloadLength } from './shard-encode';
import { Maybe, isPromise } from './maybe-async';
import { settledAll } from '../io/io';

function km(ref: ChunkRef): { k: number; m: number } {
  const l = ref.fl.layout;
  assert(l.kind === 'ec', 'EC chunk I/O on an EC layout');
  return { k: l.k, m: l.m };
}

/**
 * The k+m shard payloads of a chunk (spec §6 split, then RS parity), with no chunk-sized copy when
 * the full erasure blocks' fragments are whole bitrot blocks: data shards are views into the chunk,
 * parity is encoded per erasure block into buffers from alloc. A short last erasure block (a chunk
 * whose length is not a multiple of the block, as a merged random write's often is) keeps its whole
 * fragments as views too; only its fragments that run past the chunk's end are copied, zero padded,
 * into one buffer from alloc (DESIGN §5 "Write-back pieces": a fresh split of every such chunk was
 * most of the mount's memory under random writes to ec:4+2).
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
  const views = Number.isInteger(frag) && frag % ref.fl.bitrotBlockBytes === 0 && content.length > 0;
  if (!views) {
    const data = splitChunk(g, content);
    const parity = rsCodec(k, m).encode(data);
    assert(parity.length === m && parity.every((p) => p.length === data[0].length), 'RS parity shape');
    return [...data, ...parity];
  }
  const ebCount = Math.ceil(content.length / eb);
  const shardBytes = shardDataLenBytes(g);
  // alloc: the whole-chunk writer's pooled buffers (a fresh 1 MiB parity shard costs page faults and GC).
  const parity = Array.from({ length: m }, () => alloc(shardBytes));
  const data: Uint8Array[][] = Array.from({ length: k }, () => []);
  const codec = rsCodec(k, m);
  for (let e = 0; e < ebCount; e++) {
    const start = e * eb;
    const f = fragmentBytesOf(g, e);
    const slices = ebFragments(content, start, f, k, alloc);
    slices.forEach((s, i) => data[i].push(s)); // spec §6: shard i holds fragment i of every erasure block
    codec.encodeInto(
      slices,
      parity.map((p) => p.subarray(e * frag, e * frag + f)),
    );
  }
  assert(
    data.every((d) => payloadLength(d) === shardBytes),
    'EC data shards of shard_data_len',
  );
  return [...data, ...parity];
}

/**
 * The k fragments of f bytes of the erasure block at start: views of content, and the fragments
 * content does not wholly hold (a short last block, DESIGN §3) copied zero padded into one buffer.
 */
function ebFragments(
  content: Uint8Array,
  start: number,
  f: number,
  k: number,
  alloc: (lengthBytes: number) => Buffer,
): Uint8Array[] {
  const whole = Math.min(k, Math.floor((content.length - start) / f));
  const slices = Array.from({ length: whole }, (_, i) => content.subarray(start + i * f, start + (i + 1) * f));
  if (whole === k) return slices;
  const padded = alloc((k - whole) * f);
  for (let i = whole; i < k; i++) {
    const piece = padded.subarray((i - whole) * f, (i - whole + 1) * f);
    const from = content.subarray(
      Math.min(content.length, start + i * f),
      Math.min(content.length, start + (i + 1) * f),
    );
    piece.set(from);
    piece.fill(0, from.length); // spec §6: trailing fragments are zero padded
    slices.push(piece);
  }
  return slices;
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
 * rebuilt from the others (DESIGN §6), which never reads a failed shard again. direct: each piece
 * read into target and verified there (shard-store.ts readVerifiedInto: no scratch buffer; a shard
 * that fails leaves unverified bytes in its pieces until the rebuild overwrites them), for buffers
 * no reader sees until this resolves (DESIGN §6 "Read buffers").
 */
export function readEcInto(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
  targetOffset: number,
  inline = true,
  direct = false,
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
      read = direct
        ? settledAll(
            pieces
              .filter((p) => p.dataShard === shard)
              .map((p) =>
                env.shards.readVerifiedInto(
                  ref,
                  shard,
                  p.shardOffsetBytes,
                  p.lengthBytes,
                  target,
                  targetOffset + p.chunkOffsetBytes - offsetBytes,
                ),
              ),
          ).then(() => undefined)
        : env.shards.readVerifiedWith(
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
