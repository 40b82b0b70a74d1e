// Small reads of an encrypted, uncompressed chunk in cipher format v2 (src/chunk-segments.ts,
// DESIGN §10): only the stored bytes of the segments covering the range are read, each a verified
// §9 read (hashes before decryption; a bad block is served around by the layout's failover or
// reconstruction as for any read), and only those segments are decrypted, each tag checked before
// a byte is copied out. A compressed chunk is one compressed stream and is decoded whole
// (chunk-transform.ts), as are v1 payloads (one GCM message).
import { LRUCache } from 'lru-cache';
import { BufferPool } from '../../src/buffer-pool';
import { TAG_BYTES, deriveDataKey } from '../../src/chunk-cipher';
import { FormatError, assert } from '../../src/errors';
import { FLAG_ENCRYPTED } from '../../src/header';
import {
  SEG_HEADER_BYTES,
  SEGMENT_BYTES,
  SegmentLayout,
  isSegmented,
  openSegmentsInto,
  parseSegmentHeader,
  segmentPlainRange,
  segmentStoredOffset,
} from '../../src/chunk-segments';
import { ChunkEnv } from './chunk-env';
import { ChunkRef, payloadLen, siteOf, versionKeyOf } from './chunk-ref';
import { readEcInto } from './ec-chunk';
import { readReplicaInto } from './replica-chunk';

/** Chunk versions whose v2 header (or v1-ness) is remembered. */
const LAYOUTS_MAX = 4096;
/** Data keys remembered (HKDF per read would cost more than the segment's decryption). */
const DATA_KEYS_MAX = 1024;

/**
 * A segment read's stored bytes go into a pooled buffer (src/buffer-pool.ts) of this size: a read of
 * up to max_read (1 MiB) and the partial segments at its ends, with every tag. Read grants leave
 * JavaScript the first reads of each chunk of an encrypted file, each of which needs one.
 */
const STORED_BUFFER_BYTES = (1 << 20) + 2 * SEGMENT_BYTES + ((1 << 20) / SEGMENT_BYTES + 2) * TAG_BYTES;
/** Kept between reads: as many as reads usually run at once (the kernel's async reads of one reader). */
const STORED_BUFFERS_KEPT_MAX = 8;

/** A chunk version's cipher format, learnt from its first stored bytes: v2's layout, or 'v1'. */
export class SegmentLayouts {
  private readonly layouts = new LRUCache<string, SegmentLayout | 'v1'>({ max: LAYOUTS_MAX });
  private readonly keys = new LRUCache<string, Buffer>({ max: DATA_KEYS_MAX });
  /** Buffers for a read's stored bytes. */
  readonly stored = new BufferPool(STORED_BUFFER_BYTES, STORED_BUFFERS_KEPT_MAX);
  get(key: string): SegmentLayout | 'v1' | undefined {
    return this.layouts.get(key);
  }
  set(key: string, l: SegmentLayout | 'v1'): void {
    this.layouts.set(key, l);
  }
  dataKey(key: string, make: () => Buffer): Buffer {
    let k = this.keys.get(key);
    if (k === undefined) this.keys.set(key, (k = make()));
    return k;
  }
}

/** Encrypted and not compressed, and the key loaded: a read may decrypt segments alone (if it is v2). */
export function segmentCandidate(env: ChunkEnv, ref: ChunkRef): boolean {
  return env.storeKey !== null && ref.stored !== null && ref.stored.flags === FLAG_ENCRYPTED;
}

/** What a read grant of an encrypted chunk needs to open its segments in C (store/chunks/read-grant.ts). */
export interface SegmentGrant {
  segmentBytes: number;
  nonceBase: Buffer;
  dataKey: Buffer;
}

/**
 * The cipher of a segment candidate whose v2 header a verified read already learnt, or null (not
 * learnt yet, or a v1 payload, which is one GCM message and decoded whole).
 */
export function segmentGrantOf(env: ChunkEnv, ref: ChunkRef): SegmentGrant | null {
  if (!segmentCandidate(env, ref)) return null;
  const key = versionKeyOf(ref);
  const l = env.decoded.segments.get(key);
  if (l === undefined || l === 'v1') return null;
  const dataKey = env.decoded.segments.dataKey(key, () =>
    deriveDataKey(env.storeKey!, { fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), version: ref.version }),
  );
  return { segmentBytes: l.segmentBytes, nonceBase: l.nonceBase, dataKey };
}

/** Verified stored payload bytes [offset, +length) into target, by layout (failover and reconstruction inside). */
async function readStoredRange(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
): Promise<void> {
  await (ref.fl.layout.kind === 'replica'
    ? readReplicaInto(env, ref, offsetBytes, lengthBytes, target, 0, true)
    : readEcInto(env, ref, offsetBytes, lengthBytes, target, 0, true));
}

async function layoutOf(env: ChunkEnv, ref: ChunkRef, key: string): Promise<SegmentLayout | 'v1'> {
  const known = env.decoded.segments.get(key);
  if (known !== undefined) return known;
  if (payloadLen(ref) < SEG_HEADER_BYTES) return 'v1';
  const head = Buffer.allocUnsafe(SEG_HEADER_BYTES);
  await readStoredRange(env, ref, 0, SEG_HEADER_BYTES, head);
  let l: SegmentLayout | 'v1' = 'v1';
  if (isSegmented(head)) {
    l = parseSegmentHeader(head, payloadLen(ref), siteOf(ref));
    if (l.plainLenBytes !== ref.logicalLenBytes)
      throw new FormatError(
        'aes256gcm',
        `v2 payload holds ${l.plainLenBytes} bytes, content_len is ${ref.logicalLenBytes}`,
        siteOf(ref),
      );
  }
  env.decoded.segments.set(key, l);
  return l;
}

/**
 * Raw chunk range [offset, +length) into target[targetOffset..] from the segments covering it.
 * false: the payload is v1 (nothing read into target; decode it whole). Rejects with DecryptError
 * when a segment's tag fails (target's range zeroed): the caller decodes the chunk whole, which
 * fails over to other replicas or rebuilds the EC shard that is wrong.
 */
export async function readSegmentsInto(
  env: ChunkEnv,
  ref: ChunkRef,
  key: string,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
  targetOffset: number,
): Promise<boolean> {
  assert(lengthBytes > 0 && offsetBytes + lengthBytes <= ref.logicalLenBytes, 'segment read inside the chunk content');
  const l = await layoutOf(env, ref, key);
  if (l === 'v1') return false;
  const first = Math.floor(offsetBytes / l.segmentBytes);
  const last = Math.floor((offsetBytes + lengthBytes - 1) / l.segmentBytes);
  const plainLo = segmentPlainRange(l, first)[0];
  const plainHi = segmentPlainRange(l, last)[1];
  const storedLo = segmentStoredOffset(l, first);
  const storedHi = segmentStoredOffset(l, last) + plainHi - last * l.segmentBytes + TAG_BYTES; // segment last's ciphertext and tag
  const pooled = env.decoded.segments.stored.take(storedHi - storedLo);
  try {
    const stored = pooled.subarray(0, storedHi - storedLo);
    await readStoredRange(env, ref, storedLo, stored.length, stored);
    const whole = plainLo === offsetBytes && plainHi === offsetBytes + lengthBytes; // aligned: decrypt straight into target
    const plain = whole
      ? target.subarray(targetOffset, targetOffset + lengthBytes)
      : Buffer.allocUnsafe(plainHi - plainLo);
    const dataKey = env.decoded.segments.dataKey(key, () =>
      deriveDataKey(env.storeKey!, { fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), version: ref.version }),
    );
    openSegmentsInto(dataKey, l, first, last, stored, plain, siteOf(ref));
    if (!whole) plain.copy(target, targetOffset, offsetBytes - plainLo, offsetBytes - plainLo + lengthBytes);
    return true;
  } finally {
    env.decoded.segments.stored.give(pooled);
  }
}
