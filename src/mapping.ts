// Chunk <-> shard byte mapping for EC(k,m) (spec §6) with the short last erasure
// block rule of DESIGN §3: full erasure blocks use shard_fragment = ceil(EB/k); the
// last block of length L < EB uses frag_last = ceil(L/k); trailing fragments are
// zero padded. shard_offset = eb_index*ceil(EB/k) + off_in_fragment always holds.
// With k=1 the mapping is the identity, which is Replica mode (spec §6 last line).
import { FormatError, assert } from './errors';

export interface EcGeometry {
  k: number;
  m: number;
  ecBlockSizeBytes: number;
  chunkLogicalLenBytes: number;
}

export interface Location {
  ebIndex: number;
  dataShard: number;
  shardOffsetBytes: number;
  fragmentBytes: number;
}

export interface ShardPiece {
  dataShard: number;
  shardOffsetBytes: number;
  lengthBytes: number;
  chunkOffsetBytes: number;
  ebIndex: number;
}

const PIECES_MAX = 1 << 20; // loop bound: far above any chunk's k * erasure blocks

function checkGeometry(g: EcGeometry): void {
  const ok = (v: number, min: number): boolean => Number.isSafeInteger(v) && v >= min;
  if (!ok(g.k, 1)) throw new FormatError('ec_k', `${g.k} out of range`);
  if (!ok(g.m, 0)) throw new FormatError('ec_m', `${g.m} out of range`);
  if (!ok(g.ecBlockSizeBytes, 1)) throw new FormatError('ec_block_size', `${g.ecBlockSizeBytes} must be > 0`);
  if (!ok(g.chunkLogicalLenBytes, 0))
    throw new FormatError('chunk_logical_len', `${g.chunkLogicalLenBytes} out of range`);
}

/** ceil(EB/k): the fragment size of every full erasure block. */
export function shardFragmentBytes(g: EcGeometry): number {
  return Math.ceil(g.ecBlockSizeBytes / g.k);
}

function ebCount(g: EcGeometry): number {
  return Math.ceil(g.chunkLogicalLenBytes / g.ecBlockSizeBytes);
}

/** Chunk bytes in erasure block e (EB, or L for a short last block). */
function ebLengthBytes(g: EcGeometry, ebIndex: number): number {
  return Math.min(g.ecBlockSizeBytes, g.chunkLogicalLenBytes - ebIndex * g.ecBlockSizeBytes);
}

/** Fragment size in erasure block e: ceil(EB/k), or ceil(L/k) for the short last one. */
export function fragmentBytesOf(g: EcGeometry, ebIndex: number): number {
  return Math.ceil(ebLengthBytes(g, ebIndex) / g.k);
}

/** shard_data_len, equal for all k+m shards: (n_eb-1)*ceil(EB/k) + ceil(L/k). */
export function shardDataLenBytes(g: EcGeometry): number {
  checkGeometry(g);
  const n = ebCount(g);
  if (n === 0) return 0;
  return (n - 1) * shardFragmentBytes(g) + fragmentBytesOf(g, n - 1);
}

/** Where chunk byte C lives (spec §6). */
export function locate(g: EcGeometry, chunkOffsetBytes: number): Location {
  checkGeometry(g);
  assert(
    Number.isSafeInteger(chunkOffsetBytes) && chunkOffsetBytes >= 0 && chunkOffsetBytes < g.chunkLogicalLenBytes,
    `chunk offset ${chunkOffsetBytes} outside chunk of ${g.chunkLogicalLenBytes}`,
  );
  const ebIndex = Math.floor(chunkOffsetBytes / g.ecBlockSizeBytes);
  const offInEb = chunkOffsetBytes % g.ecBlockSizeBytes;
  const fragmentBytes = fragmentBytesOf(g, ebIndex);
  const dataShard = Math.floor(offInEb / fragmentBytes);
  const offInFragment = offInEb % fragmentBytes;
  assert(dataShard < g.k, 'data shard within k');
  return { ebIndex, dataShard, shardOffsetBytes: ebIndex * shardFragmentBytes(g) + offInFragment, fragmentBytes };
}

/** Contiguous shard pieces covering chunk range [C, C+L), in chunk order. */
export function mapRange(g: EcGeometry, chunkOffsetBytes: number, lengthBytes: number): ShardPiece[] {
  checkGeometry(g);
  assert(Number.isSafeInteger(lengthBytes) && lengthBytes >= 0, 'mapRange: bad length');
  assert(
    chunkOffsetBytes >= 0 && chunkOffsetBytes + lengthBytes <= g.chunkLogicalLenBytes,
    `range [${chunkOffsetBytes}, +${lengthBytes}) outside chunk of ${g.chunkLogicalLenBytes}`,
  );
  const pieces: ShardPiece[] = [];
  let c = chunkOffsetBytes;
  const end = chunkOffsetBytes + lengthBytes;
  while (c < end) {
    assert(pieces.length < PIECES_MAX, 'mapRange: piece limit');
    const loc = locate(g, c);
    const offInEb = c - loc.ebIndex * g.ecBlockSizeBytes;
    const offInFragment = offInEb % loc.fragmentBytes;
    const ebEnd = loc.ebIndex * g.ecBlockSizeBytes + ebLengthBytes(g, loc.ebIndex);
    const len = Math.min(end - c, loc.fragmentBytes - offInFragment, ebEnd - c);
    assert(len > 0, 'mapRange: progress');
    pieces.push({
      dataShard: loc.dataShard,
      shardOffsetBytes: loc.shardOffsetBytes,
      lengthBytes: len,
      chunkOffsetBytes: c,
      ebIndex: loc.ebIndex,
    });
    c += len;
  }
  return pieces;
}

/** k data shards of shard_data_len bytes each, zero padded (spec §6, DESIGN §3). */
export function splitChunk(g: EcGeometry, chunk: Uint8Array): Buffer[] {
  checkGeometry(g);
  assert(chunk.length === g.chunkLogicalLenBytes, 'splitChunk: chunk length != chunk_logical_len');
  const src = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  const len = shardDataLenBytes(g);
  const shards: Buffer[] = [];
  for (let i = 0; i < g.k; i++) shards.push(Buffer.alloc(len));
  for (const p of mapRange(g, 0, g.chunkLogicalLenBytes)) {
    src.copy(shards[p.dataShard], p.shardOffsetBytes, p.chunkOffsetBytes, p.chunkOffsetBytes + p.lengthBytes);
  }
  return shards;
}

/** Inverse of splitChunk: the chunk bytes from its k data shards. */
export function joinChunk(g: EcGeometry, dataShards: readonly Uint8Array[]): Buffer {
  checkGeometry(g);
  assert(dataShards.length === g.k, 'joinChunk: need exactly k data shards');
  const len = shardDataLenBytes(g);
  for (const s of dataShards) assert(s.length >= len, 'joinChunk: data shard shorter than shard_data_len');
  const out = Buffer.allocUnsafe(g.chunkLogicalLenBytes);
  for (const p of mapRange(g, 0, g.chunkLogicalLenBytes)) {
    const s = dataShards[p.dataShard];
    out.set(s.subarray(p.shardOffsetBytes, p.shardOffsetBytes + p.lengthBytes), p.chunkOffsetBytes);
  }
  return out;
}
