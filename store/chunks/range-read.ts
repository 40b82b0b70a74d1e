// A file byte range read chunk by chunk straight into a caller's buffer
// (DESIGN §2 "Chunk I/O"): every byte of the range is written, holes (no live chunk, or past a
// chunk's logical length) as zeros. Chunks run with bounded concurrency.
import { assert } from '../../src/errors';
import { ChunkEnv } from './chunk-env';
import { readChunkInto } from './chunk-io';
import { ChunkRef } from './chunk-ref';
import { boundedAll } from './bounded';
import { Maybe } from './maybe-async';
import { prefetchDecoded } from './chunk-transform';

export const CHUNKS_IN_FLIGHT_MAX = 8; // bounded concurrency per call: throughput without unbounded memory

/** File bytes [offsetBytes, endBytes) into target[targetOffset..]; liveRef(c) is chunk c's ref or null (hole). */
export function readRangeInto(
  env: ChunkEnv,
  chunkSizeBytes: number,
  offsetBytes: number,
  endBytes: number,
  liveRef: (chunkIndex: number) => ChunkRef | null,
  target: Buffer,
  targetOffset: number,
): Maybe<void> {
  assert(
    offsetBytes <= endBytes && targetOffset >= 0 && targetOffset + (endBytes - offsetBytes) <= target.length,
    'range read: target holds the range',
  );
  const cs = chunkSizeBytes;
  const indices: number[] = [];
  for (let c = Math.floor(offsetBytes / cs); c * cs < endBytes; c++) indices.push(c);
  // One chunk (the common FUSE read): maybe inline, no promise. Several: every shard read on the pool
  // at once, at most CHUNKS_IN_FLIGHT_MAX chunks (their device waits overlap; inline they would queue).
  const inline = indices.length === 1;
  const readChunkPart = (c: number): Maybe<void> => {
    const lo = Math.max(offsetBytes, c * cs) - c * cs; // chunk-relative part of the range
    const hi = Math.min(endBytes, (c + 1) * cs) - c * cs;
    const ref = liveRef(c);
    const b = ref === null ? lo : Math.max(lo, Math.min(hi, ref.logicalLenBytes)); // [lo, b) holds data
    const at = targetOffset + c * cs - offsetBytes; // target position of chunk offset 0
    if (b < hi) target.fill(0, at + b, at + hi);
    if (ref !== null && b > lo) return readChunkInto(env, ref, lo, b - lo, target, at + lo, inline);
  };
  // The range's own chunks start first, then the read-ahead (it must not queue before them).
  const r = inline
    ? readChunkPart(indices[0])
    : boundedAll(indices, CHUNKS_IN_FLIGHT_MAX, async (c) => readChunkPart(c));
  readAhead(env, cs, offsetBytes, endBytes, liveRef);
  return r;
}

/** Transformed chunks decoded ahead of a sequential reader (DESIGN §10): 16 MiB of 4 MiB chunks. */
export const READAHEAD_CHUNKS = 4;

/**
 * A sequential read of a transformed chunk (it starts near where the file's previous read ended)
 * starts decoding the next READAHEAD_CHUNKS (each is decoded whole, DESIGN §10), so the reader finds
 * them decoded; random readers start none. Raw chunks need none (the kernel's
 * readahead asks for their ranges).
 */
function readAhead(
  env: ChunkEnv,
  chunkSizeBytes: number,
  offsetBytes: number,
  endBytes: number,
  liveRef: (chunkIndex: number) => ChunkRef | null,
): void {
  if (endBytes <= 0) return;
  const last = Math.floor((endBytes - 1) / chunkSizeBytes);
  const here = liveRef(last);
  if (here === null || here.stored === null || !env.decoded.sequential(here.ino, offsetBytes, endBytes)) return;
  for (let c = last + 1; c <= last + READAHEAD_CHUNKS; c++) {
    const next = liveRef(c);
    if (next !== null) prefetchDecoded(env, next);
  }
}
