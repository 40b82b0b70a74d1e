// Whole shard file bytes (spec §2, §8.1 step 1-2) and the verified byte-range
// read over an abstract reader (spec §9). No disk I/O here: store/ supplies readers.
import { BitrotError, ErrorSite, FormatError, assert } from './errors';
import {
  CSUM_ALGO_HIGHWAY256,
  EC_ALGO_NONE,
  FLAG_COMPRESSED,
  FLAG_ENCRYPTED,
  FLAG_LAST_BLOCK_SHORT,
  FLAG_MODE_EC,
  FLAG_PARITY_SHARD,
  FORMAT_VERSION,
  HEADER_BYTES,
  ShardHeader,
  decodeHeader,
  encodeHeader,
} from './header';
import { verifyBlockRange, writeHashEntries } from './hashtable';
import { BitrotKey, BlockPosition } from './keying';
import { HASH_ENTRY_BYTES, blockCountFor, dataStartBytes, hashTableBytes, shardFileBytes } from './region';

/** Header fields the caller chooses; flags, block_count and shard_data_len are derived. */
export interface ShardParams {
  fileId: bigint;
  chunkIndex: bigint;
  version: bigint;
  shardIndex: number;
  ecK: number;
  ecM: number;
  ecAlgo: number;
  csumAlgo?: number;
  bitrotBlockBytes: number;
  chunkLogicalLenBytes: bigint;
  createdUnixNanos: bigint;
  ecBlockSizeBytes: bigint;
  placementSeed: bigint;
  clusterMapEpoch: bigint;
  chunkSizeBytes: bigint;
  contentLenBytes: bigint;
  compressed?: boolean;
  encrypted?: boolean; // spec §3.1 bits 1, 2 (the payload is post-transform)
}

/** Reads shard file bytes; may return fewer bytes than asked at EOF. */
export interface ShardReader {
  read(offsetBytes: number, lengthBytes: number): Promise<Buffer>;
}

/** The full header for a payload of shardDataLenBytes under params (flags per spec §3.1). */
export function shardHeaderFor(params: ShardParams, shardDataLenBytes: number): ShardHeader {
  const ec = params.ecAlgo !== EC_ALGO_NONE;
  let flags = 0;
  if (ec) flags |= FLAG_MODE_EC;
  if (params.compressed === true) flags |= FLAG_COMPRESSED;
  if (params.encrypted === true) flags |= FLAG_ENCRYPTED;
  if (shardDataLenBytes % params.bitrotBlockBytes !== 0) flags |= FLAG_LAST_BLOCK_SHORT;
  if (ec && params.shardIndex >= params.ecK) flags |= FLAG_PARITY_SHARD;
  return {
    formatVersion: FORMAT_VERSION,
    flags,
    fileId: params.fileId,
    chunkIndex: params.chunkIndex,
    version: params.version,
    shardIndex: params.shardIndex,
    ecK: params.ecK,
    ecM: params.ecM,
    ecAlgo: params.ecAlgo,
    csumAlgo: params.csumAlgo ?? CSUM_ALGO_HIGHWAY256,
    bitrotBlockBytes: params.bitrotBlockBytes,
    shardDataLenBytes: BigInt(shardDataLenBytes),
    chunkLogicalLenBytes: params.chunkLogicalLenBytes,
    blockCount: blockCountFor(shardDataLenBytes, params.bitrotBlockBytes),
    createdUnixNanos: params.createdUnixNanos,
    ecBlockSizeBytes: params.ecBlockSizeBytes,
    placementSeed: params.placementSeed,
    clusterMapEpoch: params.clusterMapEpoch,
    chunkSizeBytes: params.chunkSizeBytes,
    contentLenBytes: params.contentLenBytes,
  };
}

/** header | hash table | data | zero pad to 4 KiB: the exact file bytes (spec §2, §5). */
export function encodeShard(params: ShardParams, shardPayload: Uint8Array, key: BitrotKey): Buffer {
  const header = shardHeaderFor(params, shardPayload.length);
  const dataStart = dataStartBytes(header.blockCount);
  const total = shardFileBytes(shardPayload.length, header.bitrotBlockBytes);
  const out = Buffer.allocUnsafe(total); // one allocation; every byte is written below
  writeHead(out, header, shardPayload, key);
  out.set(shardPayload, dataStart);
  out.fill(0, dataStart + shardPayload.length, total); // EOF pad, ignored on read (spec §5)
  return out;
}

/**
 * Zero-copy variant for writers using writev: the file is head | payload | padBytes zeros.
 * head = header + hash table (data_start bytes); the payload is not copied.
 */
export function encodeShardHead(
  params: ShardParams,
  shardPayload: Uint8Array,
  key: BitrotKey,
): { head: Buffer; padBytes: number } {
  const header = shardHeaderFor(params, shardPayload.length);
  const head = Buffer.allocUnsafe(dataStartBytes(header.blockCount));
  writeHead(head, header, shardPayload, key);
  const padBytes = shardFileBytes(shardPayload.length, header.bitrotBlockBytes) - head.length - shardPayload.length;
  assert(padBytes >= 0 && padBytes < 4096, 'EOF pad is less than one page');
  return { head, padBytes };
}

// Header and hash table (with its zero padding) into out[0, data_start).
function writeHead(out: Buffer, header: ShardHeader, payload: Uint8Array, key: BitrotKey): void {
  const headerBytes = encodeHeader(header); // validates every field
  const dataStart = dataStartBytes(header.blockCount);
  assert(out.length >= dataStart, 'head buffer too small');
  headerBytes.copy(out, 0);
  writeHashEntries(out, HEADER_BYTES, key, posOf(header), payload, header.bitrotBlockBytes, 0);
  out.fill(0, HEADER_BYTES + header.blockCount * HASH_ENTRY_BYTES, dataStart); // hash table padding (spec §4)
}

function posOf(h: ShardHeader): BlockPosition {
  return { fileId: h.fileId, chunkIndex: h.chunkIndex, shardIndex: h.shardIndex, version: h.version };
}

function siteOf(h: ShardHeader, site: ErrorSite): ErrorSite {
  return { fileId: h.fileId, chunkIndex: h.chunkIndex, version: h.version, shardIndex: h.shardIndex, ...site };
}

export async function readShardHeader(r: ShardReader, site: ErrorSite = {}): Promise<ShardHeader> {
  const bytes = await r.read(0, HEADER_BYTES);
  return decodeHeader(bytes, site);
}

/**
 * Where the bytes of a verified read of shard-relative [offset, offset+length) are
 * (spec §9): the hash entries of blocks first..last and the block-aligned data span.
 * dataAt/entriesAt are file offsets; skip is where the range starts inside the span.
 */
export interface SpanPlan {
  first: number;
  entriesAt: number;
  entriesLen: number;
  dataAt: number;
  dataLen: number;
  skip: number;
  lengthBytes: number;
}

/** What a plan needs of a shard: shard_data_len and bitrot_block (spec §3); block_count follows. */
export interface ShardGeometry {
  dataLenBytes: number;
  bitrotBlockBytes: number;
}

export function geometryOf(header: ShardHeader): ShardGeometry {
  return { dataLenBytes: Number(header.shardDataLenBytes), bitrotBlockBytes: header.bitrotBlockBytes };
}

/** The plan for a range, or null for an empty one; FormatError if it leaves shard_data_len. */
export function spanPlan(
  g: ShardGeometry,
  offsetBytes: number,
  lengthBytes: number,
  site: ErrorSite = {},
): SpanPlan | null {
  const dataLen = g.dataLenBytes;
  if (
    !Number.isSafeInteger(offsetBytes) ||
    !Number.isSafeInteger(lengthBytes) ||
    offsetBytes < 0 ||
    lengthBytes < 0 ||
    offsetBytes + lengthBytes > dataLen
  ) {
    throw new FormatError('range', `[${offsetBytes}, +${lengthBytes}) outside shard_data_len ${dataLen}`, site);
  }
  if (lengthBytes === 0) return null;
  const bb = g.bitrotBlockBytes;
  const first = Math.floor(offsetBytes / bb);
  const last = Math.floor((offsetBytes + lengthBytes - 1) / bb);
  const spanStart = first * bb;
  return {
    first,
    entriesAt: HEADER_BYTES + first * HASH_ENTRY_BYTES,
    entriesLen: (last - first + 1) * HASH_ENTRY_BYTES,
    dataAt: dataStartBytes(blockCountFor(dataLen, bb)) + spanStart,
    dataLen: Math.min((last + 1) * bb, dataLen) - spanStart,
    skip: offsetBytes - spanStart,
    lengthBytes,
  };
}

/**
 * Check what was read for a plan (entries, data: the bytes actually read, possibly
 * short at EOF) and return the view of the requested range inside data. Every block
 * of the span is verified before any byte is handed out (spec §9).
 */
export function verifySpan(
  header: ShardHeader,
  key: BitrotKey,
  plan: SpanPlan,
  entries: Buffer,
  data: Buffer,
  site: ErrorSite = {},
): Buffer {
  const s = siteOf(header, site);
  if (entries.length < plan.entriesLen)
    throw new FormatError('hash_table', `truncated: read ${entries.length} of ${plan.entriesLen} bytes`, s);
  if (data.length < plan.dataLen)
    throw new FormatError('data', `truncated: read ${data.length} of ${plan.dataLen} bytes`, s);
  verifyBlocks(
    key,
    posOf(header),
    plan.first,
    data.subarray(0, plan.dataLen),
    entries.subarray(0, plan.entriesLen),
    header.bitrotBlockBytes,
    s,
  );
  return data.subarray(plan.skip, plan.skip + plan.lengthBytes);
}

/**
 * Verified read of shard-relative [offset, offset+length) (spec §9): one read for
 * the hash entries of blocks first..last, one read for their data, each block
 * checked; BitrotError(i) on the first mismatch, FormatError if the file is short.
 */
export async function verifiedRead(
  r: ShardReader,
  header: ShardHeader,
  key: BitrotKey,
  offsetBytes: number,
  lengthBytes: number,
  site: ErrorSite = {},
): Promise<Buffer> {
  const plan = spanPlan(geometryOf(header), offsetBytes, lengthBytes, siteOf(header, site));
  if (plan === null) return Buffer.alloc(0);
  const entries = await r.read(plan.entriesAt, plan.entriesLen);
  const data = await r.read(plan.dataAt, plan.dataLen);
  return verifySpan(header, key, plan, entries, data, site);
}

// span = blocks first.. contiguously; entries = their hash entries in order.
// One native call checks the whole span (spec §9); BitrotError names the first bad block.
function verifyBlocks(
  key: BitrotKey,
  pos: BlockPosition,
  first: number,
  span: Buffer,
  entries: Buffer,
  bb: number,
  site: ErrorSite,
): void {
  const count = Math.ceil(span.length / bb);
  assert(entries.length >= count * HASH_ENTRY_BYTES, 'one entry per block');
  const bad = verifyBlockRange(key, pos, first, span, entries.subarray(0, count * HASH_ENTRY_BYTES), bb);
  if (bad >= 0) throw new BitrotError(bad, site);
}

/** Decode and verify a whole shard file held in memory (scrub, inspect, vectors). */
export function verifyShardBytes(
  bytes: Uint8Array,
  key: BitrotKey,
  site: ErrorSite = {},
): { header: ShardHeader; payload: Buffer } {
  const header = decodeHeader(bytes, site);
  const s = siteOf(header, site);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tableEnd = HEADER_BYTES + hashTableBytes(header.blockCount);
  if (buf.length < tableEnd) {
    throw new FormatError(
      'hash_table',
      `truncated: file has ${buf.length - HEADER_BYTES} bytes after the header, table needs ${tableEnd - HEADER_BYTES}`,
      s,
    );
  }
  const dataLen = Number(header.shardDataLenBytes);
  if (buf.length < tableEnd + dataLen) {
    throw new FormatError(
      'data',
      `truncated: file has ${buf.length - tableEnd} data bytes, shard_data_len is ${dataLen}`,
      s,
    );
  }
  const payload = buf.subarray(tableEnd, tableEnd + dataLen);
  verifyBlocks(key, posOf(header), 0, payload, buf.subarray(HEADER_BYTES, tableEnd), header.bitrotBlockBytes, s);
  return { header, payload };
}
