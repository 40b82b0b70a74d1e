// What bytes of a file will take on the disks once stored (DESIGN §5 "Space for buffered bytes"):
// the write-back reserves it before it accepts them, so a full disk refuses the write, not a later
// background flush. An upper bound, never an exact count: each chunk's shards with their head
// (header and hash table, spec §2-§4) and EOF pad (spec §5), one shard per replica, k + m for EC.
// A small file's needle costs less than the shard head this counts for it (spec §11).
import { Layout } from './layout';
import { PAGE_BYTES, alignUp, dataStartBytes } from './region';
import { assert } from './errors';

export interface SpaceLayout {
  layout: Layout;
  chunkSizeBytes: number;
  bitrotBlockBytes: number;
}

/** A shard file's bytes (spec §2: header, hash table, data padded to 4 KiB), in numbers: asked per write. */
function shardBytes(dataBytes: number, bitrotBlockBytes: number): number {
  return dataStartBytes(Math.ceil(dataBytes / bitrotBlockBytes)) + alignUp(dataBytes, PAGE_BYTES);
}

/** Bytes on the disks of one chunk of chunkBytes logical bytes (every shard, head and pad included). */
function chunkStoredBytes(l: SpaceLayout, chunkBytes: number): number {
  if (l.layout.kind === 'replica') return l.layout.replicas * shardBytes(chunkBytes, l.bitrotBlockBytes);
  return (l.layout.k + l.layout.m) * shardBytes(Math.ceil(chunkBytes / l.layout.k), l.bitrotBlockBytes);
}

/**
 * Disk bytes that logicalBytes of a file will need once stored, counted as whole chunks and then
 * a last partial one (bytes spread over more chunks need more heads: the margin covers that).
 */
export function storedBytesUpperBound(l: SpaceLayout, logicalBytes: number): number {
  assert(Number.isSafeInteger(logicalBytes) && logicalBytes >= 0, 'space: logical bytes are a count');
  if (logicalBytes === 0) return 0;
  const whole = Math.floor(logicalBytes / l.chunkSizeBytes);
  const rest = logicalBytes - whole * l.chunkSizeBytes;
  return whole * chunkStoredBytes(l, l.chunkSizeBytes) + (rest > 0 ? chunkStoredBytes(l, rest) : 0);
}
