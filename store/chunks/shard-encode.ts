// Encoding a shard for the whole-shard write (spec §8.1) without a chunk-sized copy, and how a
// shard read failed (the class of a failure decides its counter and its heal, DESIGN §6).
import { BitrotError, FormatError, assert } from '../../src/errors';
import { HEADER_BYTES, encodeHeader } from '../../src/header';
import { writeHashEntries, writeHashEntriesAsync } from '../../src/hashtable';
import { BitrotKey } from '../../src/keying';
import { HASH_ENTRY_BYTES, PAGE_BYTES, alignUp, dataStartBytes } from '../../src/region';
import { ShardParams, shardHeaderFor } from '../../src/shard';
import { errnoCode } from '../io/io';

/**
 * The bytes of src/shard.ts encodeShard split in two: header + hash table (small,
 * built here) and the payload itself, written in place without copying a chunk-sized
 * buffer (spec §2: header | table | data | zero pad to 4 KiB). test/store/chunks/shard-encode.test.ts
 * checks the result equals encodeShard byte for byte.
 */
/** A shard's bytes besides its payload: header + hash table (head), where the data starts, the zero pad after it. */
export interface ShardParts {
  head: Buffer;
  dataStart: number;
  padBytes: number;
}

export function encodeShardParts(params: ShardParams, payload: Payload, key: BitrotKey): ShardParts {
  const parts = shardPartsUnhashed(params, payload);
  hashShardParts(parts, params, payload, key);
  return parts;
}

/**
 * The parts with the header written and the hash table still zero (hashShardParts fills it): the
 * shard's layout is known before its hashing, so its temp file can be opened first (DESIGN §5
 * "Write-back pieces": hashing after the open lets one shard's write run while the next is hashed).
 */
export function shardPartsUnhashed(params: ShardParams, payload: Payload): ShardParts {
  const length = payloadLength(payload);
  const header = shardHeaderFor(params, length);
  const dataStart = dataStartBytes(header.blockCount);
  const head = Buffer.alloc(dataStart); // zero: hash table padding (spec §4)
  encodeHeader(header).copy(head, 0);
  return { head, dataStart, padBytes: alignUp(length, PAGE_BYTES) - length };
}

/** Fills the hash table of parts (from shardPartsUnhashed with the same params and payload), spec §4. */
export function hashShardParts(parts: ShardParts, params: ShardParams, payload: Payload, key: BitrotKey): void {
  for (const r of hashRanges(parts, params, payload)) {
    writeHashEntries(parts.head, r.entriesAtBytes, key, r.pos, r.slice, r.bitrotBlockBytes, r.firstBlock);
  }
}

/**
 * A payload of at least this many bytes is hashed on the libuv pool (hashShardPartsAsync), smaller
 * ones inline: the pool's hop costs more than hashing a few blocks (about 1 ms per 4 MiB).
 */
export const HASH_ASYNC_BYTES_MIN = 256 * 1024;

/**
 * hashShardParts off the mount's thread, every slice at once (DESIGN §5 "Shard hashes off the
 * mount's thread"); neither parts' head nor the payload may be touched until it resolves.
 */
export async function hashShardPartsAsync(
  parts: ShardParts,
  params: ShardParams,
  payload: Payload,
  key: BitrotKey,
): Promise<void> {
  if (payloadLength(payload) < HASH_ASYNC_BYTES_MIN) return hashShardParts(parts, params, payload, key);
  await Promise.all(
    hashRanges(parts, params, payload).map((r) =>
      writeHashEntriesAsync(parts.head, r.entriesAtBytes, key, r.pos, r.slice, r.bitrotBlockBytes, r.firstBlock),
    ),
  );
}

interface HashRange {
  pos: { fileId: bigint; chunkIndex: bigint; shardIndex: number; version: bigint };
  slice: Uint8Array;
  bitrotBlockBytes: number;
  firstBlock: number;
  entriesAtBytes: number;
}

/** Each slice of the payload with its blocks' position (spec §4.1) and where its entries go in the head. */
function hashRanges(parts: ShardParts, params: ShardParams, payload: Payload): HashRange[] {
  const slices = Array.isArray(payload) ? payload : [payload];
  const header = shardHeaderFor(params, payloadLength(payload));
  assert(dataStartBytes(header.blockCount) === parts.dataStart, 'shard hash: parts of this payload');
  const pos = {
    fileId: header.fileId,
    chunkIndex: header.chunkIndex,
    shardIndex: header.shardIndex,
    version: header.version,
  };
  const bb = header.bitrotBlockBytes;
  const out: HashRange[] = [];
  let at = 0;
  for (const slice of slices) {
    // Slices after the first start on a bitrot block boundary, so each block lies in one slice.
    assert(at % bb === 0 || slice.length === 0, 'payload slices are bitrot-block aligned');
    const firstBlock = at / bb;
    out.push({
      pos,
      slice,
      bitrotBlockBytes: bb,
      firstBlock,
      entriesAtBytes: HEADER_BYTES + firstBlock * HASH_ENTRY_BYTES,
    });
    at += slice.length;
  }
  return out;
}

/** A shard payload: one buffer, or bitrot-block-aligned slices written back to back (EC without a split copy). */
export type Payload = Uint8Array | Uint8Array[];

export function payloadLength(payload: Payload): number {
  return Array.isArray(payload) ? payload.reduce((n, s) => n + s.length, 0) : payload.length;
}

/** The payload as one buffer: itself, or its slices joined (a fresh buffer: for the paths that need one). */
export function joinPayload(payload: Payload): Uint8Array {
  if (!Array.isArray(payload)) return payload;
  return payload.length === 1 ? payload[0] : Buffer.concat(payload);
}

/** Whether slices may be hashed and written as they lie (spec §4.1): every slice but the last whole bitrot blocks. */
export function blockAlignedSlices(slices: readonly Uint8Array[], bitrotBlockBytes: number): boolean {
  for (let i = 0; i < slices.length - 1; i++) if (slices[i].length % bitrotBlockBytes !== 0) return false;
  return true;
}

export type ShardFailure = 'bitrot' | 'missing' | 'header' | 'io';

/** How a shard failed, or null when the error is not about the shard (a bug: rethrow). */
export function classifyShardError(err: unknown): ShardFailure | null {
  if (err instanceof BitrotError) return 'bitrot';
  if (err instanceof FormatError) return 'header';
  const code = errnoCode(err);
  if (code === 'ENOENT') return 'missing';
  if (code !== undefined) return 'io';
  return null;
}
