// Golden vector generator (spec §13; contract: notes/vectors.md).
// Writes testdata/chunk/G1..G8/{params.json, input.bin, expected.shard} (G8 also
// expected.<i>.shard for its 6 shards). Deterministic: fixed keys, ids and
// timestamps; data from mulberry32 (32-bit state; per step: a += 0x6D2B79F5,
// t = imul(a ^ a>>>15, a|1), t ^= t + imul(t ^ t>>>7, t|61), out = t ^ t>>>14),
// each output written as 4 little-endian bytes; every vector has its own seed
// (SEEDS below). Parity: rsReferenceCodec (ec_algo 1, DESIGN §3). G5's deflate
// bytes come from Node's zlib at level 6; decoders only need to inflate them.
// Usage: npm run gen-vectors [-- <outDir>]   (default testdata/chunk)
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mulberry32 } from '../../src/prng';
import { ShardHeader, EC_ALGO_RS_VANDERMONDE, FLAG_LAST_BLOCK_SHORT } from '../../src/header';
import { loadHighway } from '../../src/highway';
import { BitrotKey, parseBitrotKey } from '../../src/keying';
import { EcGeometry, joinChunk, splitChunk } from '../../src/mapping';
import { encodeNeedle, needleSpanBytes } from '../../src/needle';
import { dataStartBytes } from '../../src/region';
import { rsReferenceCodec } from '../../src/rs-reference';
import { ShardParams, encodeShard, verifyShardBytes } from '../../src/shard';
import { TransformSpec, applyTransform, undoTransform } from '../../src/transform';
import { compress } from '../../src/compression';
import { deriveDataKey, seal, NONCE_BYTES } from '../../src/chunk-cipher';
import { sealSegmented } from '../../src/chunk-segments';
import { decodePayload } from '../../src/chunk-codec';
import { parseTransforms } from '../../src/chunk-transforms';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from '../../src/header';

const KiB = 1024;
const MiB = 1024 * KiB;
const KEY_HEX = '8f3a1c5e7b2d4f601a2b3c4d5e6f708192a3b4c5d6e7f809fedcba9876543210';
const CREATED_UNIX_NANOS = 1767225600000000000n; // 2026-01-01T00:00:00Z
const PLACEMENT_SEED = 0x9e3779b97f4a7c15n;
const CLUSTER_MAP_EPOCH = 3n;
const BITROT_BLOCK = 16 * KiB;
const NEEDLE_ALIGN = 8;
const SEEDS = {
  G1: 1,
  G2: 2,
  G3: 3,
  G5: 5,
  G7: 7,
  G8: 8,
  G9: 9,
  G10: 10,
  G11: 11,
  G12: 12,
  G13: 13,
  G14: 14,
  G15: 15,
  G16: 16,
} as const;
/** The store key of the chunkfs-transform vectors G9..G16 (docs/transforms.md: data keys derive from it). */
const STORE_KEY_HEX = '6b1f0e2d3c4a59687786a5b4c3d2e1f0f1e2d3c4b5a69788796a5b4c3d2e1f00';
const G5_TRANSFORM: TransformSpec = {
  compression: { algo: 'deflate-raw', level: 6 },
  encryption: {
    algo: 'aes-256-ctr',
    key: '0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0',
    iv: '000102030405060708090a0b0c0d0e0f',
  },
};
const G6_SWAPPED: [number, number] = [5, 9];

export { mulberry32 };

export function prngBytes(seed: number, lengthBytes: number): Buffer {
  const next = mulberry32(seed);
  const out = Buffer.alloc(Math.ceil(lengthBytes / 4) * 4);
  for (let i = 0; i < out.length; i += 4) out.writeUInt32LE(next(), i);
  return out.subarray(0, lengthBytes);
}

/** Compressible text: words drawn by the PRNG from a small vocabulary (G5). */
function prngText(seed: number, lengthBytes: number): Buffer {
  const words = [
    'chunk',
    'shard',
    'bitrot',
    'erasure',
    'needle',
    'slice',
    'header',
    'parity',
    'block',
    'verify',
    'heal',
    'scrub',
    'replica',
    'container',
    'version',
    'cookie',
  ];
  const next = mulberry32(seed);
  const parts: string[] = [];
  let len = 0;
  for (let i = 0; len < lengthBytes && i < lengthBytes; i++) {
    const w = words[next() % words.length] + (next() % 8 === 0 ? '.\n' : ' ');
    parts.push(w);
    len += w.length;
  }
  return Buffer.from(parts.join(''), 'ascii').subarray(0, lengthBytes);
}

interface Vector {
  dir: string;
  params: Record<string, unknown>;
  input: Buffer;
  shards: Map<string, Buffer>;
}

/**
 * A chunkfs layout transform (docs/transforms.md) as params.json names it: the compression algo,
 * and aes-256-gcm with the store key its data keys derive from (the nonce is in the payload).
 */
interface LayoutTransform {
  compression?: { algo: 'zstd'; level: number } | { algo: 'lz4' };
  encryption?: { algo: 'aes-256-gcm'; key_derivation: string; store_key: string };
}
type AnyTransform = TransformSpec | LayoutTransform;

function flagsOf(t: AnyTransform): { compressed: boolean; encrypted: boolean } {
  return {
    compressed: t !== 'none' && t.compression !== undefined,
    encrypted: t !== 'none' && t.encryption !== undefined,
  };
}

interface Base {
  mode: 'replica' | 'ec';
  fileId: bigint;
  chunkIndex: bigint;
  version: bigint;
  shardIndex: number;
  k: number;
  m: number;
  ebBytes: number;
  chunkSizeBytes: number;
}

function shardParams(b: Base, chunkLogicalLen: number, contentLen: number, transform: AnyTransform): ShardParams {
  return {
    fileId: b.fileId,
    chunkIndex: b.chunkIndex,
    version: b.version,
    shardIndex: b.shardIndex,
    ecK: b.k,
    ecM: b.m,
    ecAlgo: b.mode === 'ec' ? EC_ALGO_RS_VANDERMONDE : 0,
    bitrotBlockBytes: BITROT_BLOCK,
    chunkLogicalLenBytes: BigInt(chunkLogicalLen),
    createdUnixNanos: CREATED_UNIX_NANOS,
    ecBlockSizeBytes: BigInt(b.ebBytes),
    placementSeed: PLACEMENT_SEED,
    clusterMapEpoch: CLUSTER_MAP_EPOCH,
    chunkSizeBytes: BigInt(b.chunkSizeBytes),
    contentLenBytes: BigInt(contentLen),
    ...flagsOf(transform),
  };
}

/** params.json in the key order of notes/vectors.md; u64 as decimal strings. */
function paramsJson(
  vector: string,
  description: string,
  mode: string,
  h: ShardHeader,
  transform: AnyTransform,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    vector,
    description,
    mode,
    file_id: h.fileId.toString(),
    chunk_index: h.chunkIndex.toString(),
    version: h.version.toString(),
    shard_index: h.shardIndex,
    ec_k: h.ecK,
    ec_m: h.ecM,
    ec_algo: h.ecAlgo,
    csum_algo: h.csumAlgo,
    bitrot_block: h.bitrotBlockBytes,
    ec_block_size: h.ecBlockSizeBytes.toString(),
    chunk_size: h.chunkSizeBytes.toString(),
    created_unix_nanos: h.createdUnixNanos.toString(),
    placement_seed: h.placementSeed.toString(),
    cluster_map_epoch: h.clusterMapEpoch.toString(),
    flags: h.flags,
    shard_data_len: h.shardDataLenBytes.toString(),
    chunk_logical_len: h.chunkLogicalLenBytes.toString(),
    content_len: h.contentLenBytes.toString(),
    block_count: h.blockCount,
    bitrot_key: KEY_HEX,
    transform,
    expect: 'valid',
    ...extra,
  };
}

/** Encode one shard and check it right after (pair assertion). */
function encodeChecked(key: BitrotKey, p: ShardParams, payload: Buffer): { file: Buffer; header: ShardHeader } {
  const file = encodeShard(p, payload, key);
  const { header, payload: back } = verifyShardBytes(file, key);
  if (!back.equals(payload)) throw new Error('gen-vectors: shard payload does not read back');
  return { file, header };
}

function replicaVector(
  key: BitrotKey,
  name: string,
  description: string,
  base: Base,
  input: Buffer,
  transform: TransformSpec,
): Vector {
  const stored = applyTransform(transform, input);
  if (!undoTransform(transform, stored).equals(input)) throw new Error(`${name}: transform does not undo`);
  const { file, header } = encodeChecked(key, shardParams(base, stored.length, input.length, transform), stored);
  return {
    dir: name,
    params: paramsJson(name, description, 'replica', header, transform),
    input,
    shards: new Map([['expected.shard', file]]),
  };
}

/** EC shards of a chunk payload (stored bytes; contentLen and transform: what it was made from). */
function ecShards(
  key: BitrotKey,
  base: Base,
  chunk: Buffer,
  contentLen = chunk.length,
  transform: AnyTransform = 'none',
): { files: Buffer[]; headers: ShardHeader[] } {
  const g: EcGeometry = { k: base.k, m: base.m, ecBlockSizeBytes: base.ebBytes, chunkLogicalLenBytes: chunk.length };
  const data = splitChunk(g, chunk);
  if (!joinChunk(g, data).equals(chunk)) throw new Error('gen-vectors: split/join mismatch');
  const all = [...data, ...rsReferenceCodec(base.k, base.m).encode(data)];
  const out = all.map((payload, i) =>
    encodeChecked(key, shardParams({ ...base, shardIndex: i }, chunk.length, contentLen, transform), payload),
  );
  return { files: out.map((o) => o.file), headers: out.map((o) => o.header) };
}

const replicaBase = (fileId: bigint, chunkIndex: bigint, version: bigint, shardIndex: number): Base => ({
  mode: 'replica',
  fileId,
  chunkIndex,
  version,
  shardIndex,
  k: 1,
  m: 0,
  ebBytes: 0,
  chunkSizeBytes: 4 * MiB,
});

function g3g4g6(key: BitrotKey): Vector[] {
  const base: Base = {
    mode: 'ec',
    fileId: 0xfeedfacecafebeefn,
    chunkIndex: 5n,
    version: 2n,
    shardIndex: 0,
    k: 4,
    m: 2,
    ebBytes: MiB,
    chunkSizeBytes: 4 * MiB,
  };
  const input = prngBytes(SEEDS.G3, 4 * MiB);
  const { files, headers } = ecShards(key, base, input);
  const g3 = {
    dir: 'G3',
    input,
    shards: new Map([['expected.shard', files[0]]]),
    params: paramsJson(
      'G3',
      'EC(4,2) data shard 0 of a 4 MiB chunk, EB 1 MiB (shard_fragment 262144)',
      'ec',
      headers[0],
      'none',
    ),
  };
  const g4 = {
    dir: 'G4',
    input,
    shards: new Map([['expected.shard', files[4]]]),
    params: paramsJson('G4', 'EC(4,2) parity shard 4 of the same chunk as G3', 'ec', headers[4], 'none', {
      parity_of: 'G3',
    }),
  };
  const swapped = Buffer.from(files[0]);
  const start = dataStartBytes(headers[0].blockCount);
  const [a, b] = G6_SWAPPED;
  const blockA = Buffer.from(swapped.subarray(start + a * BITROT_BLOCK, start + (a + 1) * BITROT_BLOCK));
  swapped.copy(swapped, start + a * BITROT_BLOCK, start + b * BITROT_BLOCK, start + (b + 1) * BITROT_BLOCK);
  blockA.copy(swapped, start + b * BITROT_BLOCK);
  const g6 = {
    dir: 'G6',
    input,
    shards: new Map([['expected.shard', swapped]]),
    params: paramsJson(
      'G6',
      `G3's shard with data blocks ${a} and ${b} swapped, hash table untouched: position binding must fail at block ${a}`,
      'ec',
      headers[0],
      'none',
      {
        expect: 'invalid',
        expect_error: { kind: 'bitrot', block_index: a },
        derived_from: 'G3',
        swapped_blocks: [a, b],
      },
    ),
  };
  return [g3, g4, g6];
}

interface NeedleSpec {
  fileId: bigint;
  dataLenBytes: number;
}

/** Container stream of needles from offset 0, zero padded to streamLenBytes. */
function containerStream(
  seed: number,
  needles: NeedleSpec[],
  streamLenBytes: number,
): { stream: Buffer; placed: { fileId: bigint; offset: number; length: number; cookie: number }[] } {
  const next = mulberry32(seed);
  const stream = Buffer.alloc(streamLenBytes);
  const placed = [];
  let offset = 0;
  for (const n of needles) {
    const cookie = next();
    const data = prngBytes(next(), n.dataLenBytes);
    const bytes = encodeNeedle(n.fileId, cookie, data, NEEDLE_ALIGN);
    if (bytes.length !== needleSpanBytes(n.dataLenBytes, NEEDLE_ALIGN) || offset + bytes.length > streamLenBytes)
      throw new Error('needle span');
    bytes.copy(stream, offset);
    placed.push({ fileId: n.fileId, offset, length: n.dataLenBytes, cookie });
    offset += bytes.length;
  }
  return { stream, placed };
}

function g7(key: BitrotKey): Vector {
  const needles = [
    { fileId: 1001n, dataLenBytes: 100 },
    { fileId: 1002n, dataLenBytes: 5000 },
    { fileId: 1003n, dataLenBytes: 20000 },
  ];
  const streamLen = needles.reduce((s, n) => s + needleSpanBytes(n.dataLenBytes, NEEDLE_ALIGN), 0);
  const { stream, placed } = containerStream(SEEDS.G7, needles, streamLen);
  const v = replicaVector(
    key,
    'G7',
    'Replica container chunk 0 with 3 needles; a slice with a wrong cookie must be rejected',
    replicaBase(0x00c0ffee00000007n, 0n, 1n, 0),
    stream,
    'none',
  );
  const bad = placed[1];
  v.params = {
    ...v.params,
    needle_align: NEEDLE_ALIGN,
    needles: placed.map((p) => ({
      file_id: p.fileId.toString(),
      offset: p.offset.toString(),
      length: p.length,
      cookie: p.cookie,
    })),
    bad_slices: [
      {
        file_id: bad.fileId.toString(),
        offset: bad.offset.toString(),
        length: bad.length,
        cookie: (bad.cookie ^ 0x5a5a5a5a) >>> 0,
        reason: 'cookie',
      },
    ],
  };
  return v;
}

// G8's chunk: 1.5 MiB + 4097 bytes, so the last erasure block is short (L = 528385,
// frag_last = ceil(L/4) = 132097, 3 zero pad bytes in data shard 3; DESIGN §3) and
// shard_data_len = 262144 + 132097 = 394241 ends in a 1025-byte bitrot block.
const G8_CHUNK_LEN_BYTES = MiB + MiB / 2 + 4097;
// Needle data lengths, packed from offset 0. Data shards touched (listed ascending):
// full EB 0 (fragment 262144): [0] [0] [0,1] [1] [1,2] [2] [2,3], then [0,3] (shard 3
// then shard 0) across the EB boundary; short EB 1 (fragment 132097): [0] [0,1] [1]
// [1,2] [2,3] [3], the last ending 1 byte before chunk end, in shard 3's short last
// bitrot block. The reads of the [0,1] [1,2] [2,3] needles cover shards 0-2's ones.
const G8_NEEDLE_LENS = [
  1000, 200000, 90000, 3000, 300000, 12345, 400000, 60000, 50000, 100000, 20000, 150000, 100000, 90160,
];
const G8_BAD_NEEDLES = [2, 11]; // wrong-cookie slices: a full-EB and a short-EB straddler

/** Data shard of chunk byte c, straight from DESIGN §3 (independent of src/mapping). */
function g8DataShard(c: number, g: EcGeometry): number {
  const ebIndex = Math.floor(c / g.ecBlockSizeBytes);
  const ebLen = Math.min(g.ecBlockSizeBytes, g.chunkLogicalLenBytes - ebIndex * g.ecBlockSizeBytes);
  return Math.floor((c % g.ecBlockSizeBytes) / Math.ceil(ebLen / g.k));
}

/** Distinct data shards holding needle bytes [offset, offset+32+length), ascending. */
function g8ExpectedShards(g: EcGeometry, offset: number, length: number): number[] {
  const shards = new Set<number>();
  for (let c = offset; c < offset + 32 + length; c++) shards.add(g8DataShard(c, g));
  return [...shards].sort((a, b) => a - b);
}

/** The coverage G8 exists for; fails the generator rather than write a weaker vector. */
function g8CheckCoverage(g: EcGeometry, headers: ShardHeader[], needles: { offset: number; shards: number[] }[]): void {
  const inShortEb = (n: { offset: number }): boolean => n.offset >= g.ecBlockSizeBytes;
  const adjacent = (s: number[]): boolean => s.length === 2 && s[1] === s[0] + 1;
  const ok =
    g.chunkLogicalLenBytes % g.ecBlockSizeBytes !== 0 &&
    g.chunkLogicalLenBytes % g.k !== 0 &&
    headers.every(
      (h) => h.shardDataLenBytes % BigInt(BITROT_BLOCK) !== 0n && (h.flags & FLAG_LAST_BLOCK_SHORT) !== 0,
    ) &&
    needles.some((n) => !inShortEb(n) && n.shards.length === 1) &&
    needles.some((n) => !inShortEb(n) && adjacent(n.shards)) &&
    needles.some((n) => inShortEb(n) && n.shards.length === 1) &&
    needles.some((n) => inShortEb(n) && adjacent(n.shards)) &&
    needles.every((n) => n.shards.length <= 2);
  if (!ok)
    throw new Error('G8 lost its coverage: short last EB and bitrot block, inside and straddling needles in both EBs');
}

function g8(key: BitrotKey): Vector {
  const base: Base = {
    mode: 'ec',
    fileId: 0x00c0ffee00000008n,
    chunkIndex: 0n,
    version: 1n,
    shardIndex: 0,
    k: 4,
    m: 2,
    ebBytes: MiB,
    chunkSizeBytes: 2 * MiB,
  };
  const g: EcGeometry = {
    k: base.k,
    m: base.m,
    ecBlockSizeBytes: base.ebBytes,
    chunkLogicalLenBytes: G8_CHUNK_LEN_BYTES,
  };
  const { stream, placed } = containerStream(
    SEEDS.G8,
    G8_NEEDLE_LENS.map((n, i) => ({ fileId: 2001n + BigInt(i), dataLenBytes: n })),
    G8_CHUNK_LEN_BYTES,
  );
  const { files, headers } = ecShards(key, base, stream);
  const shards = new Map<string, Buffer>([['expected.shard', files[0]]]);
  files.forEach((f, i) => shards.set(`expected.${i}.shard`, f));
  // spec §11.4: the read covers header + data.
  const expected = placed.map((p) => ({ offset: p.offset, shards: g8ExpectedShards(g, p.offset, p.length) }));
  g8CheckCoverage(g, headers, expected);
  const needles = placed.map((p, i) => ({
    file_id: p.fileId.toString(),
    offset: p.offset.toString(),
    length: p.length,
    cookie: p.cookie,
    expected_data_shards: expected[i].shards,
  }));
  const badSlices = G8_BAD_NEEDLES.map((i) => placed[i]).map((bad) => ({
    file_id: bad.fileId.toString(),
    offset: bad.offset.toString(),
    length: bad.length,
    cookie: (bad.cookie ^ 0x5a5a5a5a) >>> 0,
    reason: 'cookie',
  }));
  return {
    dir: 'G8',
    input: stream,
    shards,
    params: paramsJson(
      'G8',
      'EC(4,2) container chunk 0 of 1.5 MiB + 4097 bytes (chunk_size 2 MiB, EB 1 MiB): full EB 0 with ' +
        'shard_fragment 262144, short last EB 1 of 528385 bytes with frag_last 132097 (data shard 3 zero padded), shard_data_len 394241 ' +
        '(short last bitrot block on every shard); needles inside one fragment read one data shard, straddling ones two',
      'ec',
      headers[0],
      'none',
      { needle_align: NEEDLE_ALIGN, needles, bad_slices: badSlices },
    ),
  };
}

/**
 * raw -> stored payload the way a chunkfs layout stores it (src/chunk-codec.ts), with a nonce drawn
 * from the vector's PRNG so the vector is reproducible; checked by decoding it back (pair assertion).
 * cipher: the encrypted payload's format (docs/transforms.md): G11, G12 keep v1, which chunkfs
 * wrote before cipher format v2 and still reads; G14..G16 are v2, what it writes now.
 */
function layoutPayload(
  name: string,
  base: Base,
  t: LayoutTransform,
  input: Buffer,
  seed: number,
  cipher: 'v1' | 'v2',
): Buffer {
  let stored = input;
  if (t.compression !== undefined)
    stored = compress(t.compression.algo, t.compression.algo === 'zstd' ? t.compression.level : 1, input);
  const id = { fileId: base.fileId, chunkIndex: base.chunkIndex, version: base.version };
  const storeKey = Buffer.from(STORE_KEY_HEX, 'hex');
  if (t.encryption !== undefined) {
    const nonce = prngBytes(seed ^ 0x5eed, NONCE_BYTES);
    stored =
      cipher === 'v1'
        ? seal(deriveDataKey(storeKey, id), stored, nonce)
        : sealSegmented(deriveDataKey(storeKey, id), stored, nonce);
  }
  const names = [t.compression?.algo ?? '', t.encryption !== undefined ? 'aes256gcm' : ''].filter((x) => x !== '');
  const flags = (t.compression !== undefined ? FLAG_COMPRESSED : 0) | (t.encryption !== undefined ? FLAG_ENCRYPTED : 0);
  if (!decodePayload(parseTransforms(names), flags, stored, input.length, id, storeKey).equals(input))
    throw new Error(`${name}: payload does not decode`);
  return stored;
}

const GCM: LayoutTransform['encryption'] = {
  algo: 'aes-256-gcm',
  key_derivation: 'hkdf-sha256 chunkfs data key v1',
  store_key: STORE_KEY_HEX,
};

function layoutReplicaVector(
  key: BitrotKey,
  name: keyof typeof SEEDS,
  description: string,
  base: Base,
  input: Buffer,
  t: LayoutTransform,
  cipher: 'v1' | 'v2' = 'v1',
): Vector {
  const stored = layoutPayload(name, base, t, input, SEEDS[name], cipher);
  const { file, header } = encodeChecked(key, shardParams(base, stored.length, input.length, t), stored);
  return {
    dir: name,
    params: paramsJson(name, description, 'replica', header, t),
    input,
    shards: new Map([['expected.shard', file]]),
  };
}

/** An EC stripe of a transformed chunk: all k+m shards (a decoder needs the k data shards to undo it). */
function layoutEcVector(
  key: BitrotKey,
  name: keyof typeof SEEDS,
  description: string,
  base: Base,
  input: Buffer,
  t: LayoutTransform,
  cipher: 'v1' | 'v2' = 'v1',
): Vector {
  const stored = layoutPayload(name, base, t, input, SEEDS[name], cipher);
  const { files, headers } = ecShards(key, base, stored, input.length, t);
  const shards = new Map<string, Buffer>([['expected.shard', files[0]]]);
  files.forEach((f, i) => shards.set(`expected.${i}.shard`, f));
  return { dir: name, params: paramsJson(name, description, 'ec', headers[0], t), input, shards };
}

/** G9..G16: the transforms of chunkfs layouts (DESIGN §10, docs/transforms.md), on replica and EC shards. */
function layoutTransformVectors(key: BitrotKey): Vector[] {
  const ecBase = (fileId: bigint): Base => ({
    mode: 'ec',
    fileId,
    chunkIndex: 1n,
    version: 4n,
    shardIndex: 0,
    k: 4,
    m: 2,
    ebBytes: 64 * KiB,
    chunkSizeBytes: 4 * MiB,
  });
  return [
    layoutReplicaVector(
      key,
      'G9',
      'Replica, layout replica:3,zstd: one zstd frame (level 3); hashes over the stored bytes; input.bin is raw',
      replicaBase(0x0000000000009009n, 2n, 5n, 1),
      prngText(SEEDS.G9, 300 * KiB),
      { compression: { algo: 'zstd', level: 3 } },
    ),
    layoutReplicaVector(
      key,
      'G10',
      'Replica, layout replica:3,lz4: one LZ4 block of content_len raw bytes',
      replicaBase(0x000000000000a00an, 0n, 1n, 0),
      prngText(SEEDS.G10, 200 * KiB + 123),
      { compression: { algo: 'lz4' } },
    ),
    layoutReplicaVector(
      key,
      'G11',
      'Replica, layout replica:3,aes256gcm: nonce || AES-256-GCM ciphertext || tag, data key HKDF-SHA256(store key, file_id, chunk_index, version)',
      replicaBase(0x000000000000b00bn, 7n, 2n, 2),
      prngBytes(SEEDS.G11, 50_000),
      { encryption: GCM },
    ),
    layoutEcVector(
      key,
      'G12',
      'EC(4,2) stripe, layout ec:4+2,zstd,aes256gcm: the stored payload (zstd frame, then AES-256-GCM) split by §6 over EB 64 KiB; all 6 shards',
      ecBase(0x000000000000c00cn),
      prngText(SEEDS.G12, 2 * MiB),
      { compression: { algo: 'zstd', level: 3 }, encryption: GCM },
    ),
    layoutEcVector(
      key,
      'G13',
      'EC(4,2) stripe, layout ec:4+2,lz4: one LZ4 block split by §6 over EB 64 KiB, short last erasure block; all 6 shards',
      ecBase(0x000000000000d00dn),
      prngText(SEEDS.G13, MiB + 777),
      { compression: { algo: 'lz4' } },
    ),
    layoutReplicaVector(
      key,
      'G14',
      'Replica, layout replica:3,aes256gcm, cipher format v2: "CFSGCMv2" || segment_bytes || nonce_base, then 16 KiB segments each sealed with AES-256-GCM (nonce_base XOR index, AAD plain_len || index || last); short last segment',
      replicaBase(0x000000000000e00en, 3n, 6n, 1),
      prngBytes(SEEDS.G14, 100_000),
      { encryption: GCM },
      'v2',
    ),
    layoutEcVector(
      key,
      'G15',
      'EC(4,2) stripe, layout ec:4+2,aes256gcm, cipher format v2 (16 KiB segments) split by §6 over EB 64 KiB; all 6 shards',
      ecBase(0x000000000000f00fn),
      prngBytes(SEEDS.G15, 300 * KiB + 5),
      { encryption: GCM },
      'v2',
    ),
    layoutReplicaVector(
      key,
      'G16',
      'Replica, layout replica:3,zstd,aes256gcm, cipher format v2: one zstd frame (level 3), then 16 KiB segments sealed with AES-256-GCM',
      replicaBase(0x0000000000010010n, 0n, 2n, 2),
      prngText(SEEDS.G16, 400 * KiB),
      { compression: { algo: 'zstd', level: 3 }, encryption: GCM },
      'v2',
    ),
  ];
}

export async function buildVectors(): Promise<Vector[]> {
  await loadHighway();
  const key = parseBitrotKey(KEY_HEX);
  return [
    replicaVector(
      key,
      'G1',
      'Replica shard 1, one full bitrot block (data_len = bitrot_block = 16384)',
      replicaBase(0x0123456789abcdefn, 2n, 1n, 1),
      prngBytes(SEEDS.G1, BITROT_BLOCK),
      'none',
    ),
    replicaVector(
      key,
      'G2',
      'Replica, short last block (data_len = 24576 = 1.5 blocks, flags last_block_short)',
      replicaBase(0x0000000000001002n, 0n, 1n, 0),
      prngBytes(SEEDS.G2, 24576),
      'none',
    ),
    ...g3g4g6(key),
    replicaVector(
      key,
      'G5',
      'Replica, compressed (deflate-raw level 6) then encrypted (aes-256-ctr); hashes over the stored bytes; input.bin is raw',
      replicaBase(0x0000000000005005n, 1n, 3n, 0),
      prngText(SEEDS.G5, 256 * KiB),
      G5_TRANSFORM,
    ),
    g7(key),
    g8(key),
    ...layoutTransformVectors(key),
  ];
}

/** Write all vectors under outDir (one sub-directory per vector). */
export async function generateVectors(outDir: string): Promise<void> {
  for (const v of (await buildVectors()).sort((a, b) => a.dir.localeCompare(b.dir))) {
    const dir = path.join(outDir, v.dir);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'params.json'), JSON.stringify(v.params, null, 2) + '\n');
    fs.writeFileSync(path.join(dir, 'input.bin'), v.input);
    for (const [name, bytes] of v.shards) fs.writeFileSync(path.join(dir, name), bytes);
  }
}

function repoRoot(): string {
  let dir = __dirname;
  for (let depth = 0; depth < 10; depth++) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error('package.json not found');
}

if (require.main === module) {
  const out = process.argv[2] ?? path.join(repoRoot(), 'testdata', 'chunk');
  generateVectors(out).then(
    () => console.log(`golden vectors written to ${out}`),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
