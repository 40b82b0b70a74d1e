// Golden vectors (spec §13, notes/vectors.md): regenerate and compare byte for
// byte, then decode every committed vector with our own library.
import test from 'ava';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { generateVectors } from '../../scripts/tools/gen-vectors';
import { BitrotError, SliceError } from '../../src/errors';
import { FLAG_LAST_BLOCK_SHORT, ShardHeader } from '../../src/header';
import { loadHighway } from '../../src/highway';
import { parseBitrotKey } from '../../src/keying';
import { joinChunk, splitChunk } from '../../src/mapping';
import { rsReferenceCodec } from '../../src/rs-reference';
import { ShardReader, readShardHeader, verifiedRead, verifyShardBytes } from '../../src/shard';
import { ContainerLayout, checkNeedle, planSliceRead } from '../../src/slice';
import { TransformSpec, undoTransform } from '../../src/transform';
import { decodePayload } from '../../src/chunk-codec';
import { parseTransforms } from '../../src/chunk-transforms';
import { TESTDATA } from '../helpers/root';

const CHUNK_DIR = path.join(TESTDATA, 'chunk');
const NAMES = ['G1', 'G10', 'G11', 'G12', 'G13', 'G14', 'G15', 'G16', 'G2', 'G3', 'G4', 'G5', 'G6', 'G7', 'G8', 'G9'];

interface SliceJson {
  file_id: string;
  offset: string;
  length: number;
  cookie: number;
  expected_data_shards?: number[];
}
interface Params {
  vector: string;
  mode: 'replica' | 'ec';
  file_id: string;
  chunk_index: string;
  version: string;
  shard_index: number;
  ec_k: number;
  ec_m: number;
  ec_algo: number;
  csum_algo: number;
  bitrot_block: number;
  ec_block_size: string;
  chunk_size: string;
  created_unix_nanos: string;
  placement_seed: string;
  cluster_map_epoch: string;
  flags: number;
  shard_data_len: string;
  chunk_logical_len: string;
  content_len: string;
  block_count: number;
  bitrot_key: string;
  transform: TransformSpec;
  expect: 'valid' | 'invalid';
  expect_error?: { kind: string; block_index: number };
  swapped_blocks?: number[];
  needles?: SliceJson[];
  bad_slices?: (SliceJson & { reason: string })[];
}

const read = (v: string, f: string): Buffer => fs.readFileSync(path.join(CHUNK_DIR, v, f));
const params = (v: string): Params => JSON.parse(read(v, 'params.json').toString('utf8')) as Params;

function memReader(bytes: Buffer): ShardReader {
  return {
    async read(o: number, l: number) {
      return bytes.subarray(o, Math.min(o + l, bytes.length));
    },
  };
}

/** Every header field equals its params.json value (u64 as decimal strings). */
function checkHeader(t: any, p: Params, h: ShardHeader): void {
  t.deepEqual(
    [
      h.fileId,
      h.chunkIndex,
      h.version,
      h.shardIndex,
      h.ecK,
      h.ecM,
      h.ecAlgo,
      h.csumAlgo,
      h.bitrotBlockBytes,
      h.ecBlockSizeBytes,
      h.chunkSizeBytes,
      h.createdUnixNanos,
      h.placementSeed,
      h.clusterMapEpoch,
      h.flags,
      h.shardDataLenBytes,
      h.chunkLogicalLenBytes,
      h.contentLenBytes,
      h.blockCount,
    ],
    [
      BigInt(p.file_id),
      BigInt(p.chunk_index),
      BigInt(p.version),
      p.shard_index,
      p.ec_k,
      p.ec_m,
      p.ec_algo,
      p.csum_algo,
      p.bitrot_block,
      BigInt(p.ec_block_size),
      BigInt(p.chunk_size),
      BigInt(p.created_unix_nanos),
      BigInt(p.placement_seed),
      BigInt(p.cluster_map_epoch),
      p.flags,
      BigInt(p.shard_data_len),
      BigInt(p.chunk_logical_len),
      BigInt(p.content_len),
      p.block_count,
    ],
    `${p.vector} header matches params.json`,
  );
}

function geometry(p: Params) {
  return {
    k: p.ec_k,
    m: p.ec_m,
    ecBlockSizeBytes: Number(p.ec_block_size),
    chunkLogicalLenBytes: Number(p.chunk_logical_len),
  };
}

test.before(async () => loadHighway());

test('regenerating the vectors reproduces the committed bytes', async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-vectors-'));
  try {
    await generateVectors(tmp);
    t.deepEqual(fs.readdirSync(tmp).sort(), NAMES);
    for (const v of NAMES) {
      const files = fs.readdirSync(path.join(tmp, v)).sort();
      t.deepEqual(fs.readdirSync(path.join(CHUNK_DIR, v)).sort(), files, `${v} file set`);
      for (const f of files) t.true(fs.readFileSync(path.join(tmp, v, f)).equals(read(v, f)), `${v}/${f} differs`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('valid vectors verify and reproduce input.bin (§6 mapping, §3.1 transforms)', async (t) => {
  for (const v of ['G1', 'G2', 'G3', 'G5', 'G7']) {
    const p = params(v);
    t.is(p.expect, 'valid');
    const shard = read(v, 'expected.shard');
    const input = read(v, 'input.bin');
    const { header, payload } = verifyShardBytes(shard, parseBitrotKey(p.bitrot_key));
    checkHeader(t, p, header);
    if (p.mode === 'ec') {
      t.true(payload.equals(splitChunk(geometry(p), input)[p.shard_index]), `${v} data shard = split of input`);
    } else {
      t.true(undoTransform(p.transform, payload).equals(input), `${v} payload (undone) = input`);
    }
    const r = memReader(shard);
    const h = await readShardHeader(r);
    const all = await verifiedRead(r, h, parseBitrotKey(p.bitrot_key), 0, Number(h.shardDataLenBytes));
    t.true(all.equals(payload), `${v} verified read of the whole shard`);
  }
  t.is(params('G2').flags & 8, 8, 'G2 last_block_short');
  t.is(params('G5').flags & 6, 6, 'G5 compressed + encrypted');
  t.not(params('G5').content_len, params('G5').chunk_logical_len);
});

test('G4 parity equals RS encode of G3 split; all shards rebuild the chunk', (t) => {
  const p3 = params('G3');
  const p4 = params('G4');
  const { header, payload } = verifyShardBytes(read('G4', 'expected.shard'), parseBitrotKey(p4.bitrot_key));
  checkHeader(t, p4, header);
  t.is(p4.shard_index, 4);
  const data = splitChunk(geometry(p3), read('G3', 'input.bin'));
  const parity = rsReferenceCodec(4, 2).encode(data);
  t.true(payload.equals(parity[0]));
  const rebuilt = rsReferenceCodec(4, 2).reconstruct([null, data[1], data[2], null, payload, parity[1]]);
  t.true(joinChunk(geometry(p3), rebuilt.slice(0, 4)).equals(read('G3', 'input.bin')));
});

test('G6 fails with BitrotError at the first swapped block', async (t) => {
  const p = params('G6');
  t.is(p.expect, 'invalid');
  const key = parseBitrotKey(p.bitrot_key);
  const shard = read('G6', 'expected.shard');
  const err = t.throws(() => verifyShardBytes(shard, key), { instanceOf: BitrotError });
  t.is(err.blockIndex, p.expect_error!.block_index);
  t.is(p.swapped_blocks![0], p.expect_error!.block_index);
  const r = memReader(shard);
  const h = await readShardHeader(r);
  const b = p.swapped_blocks![1];
  const e2 = await t.throwsAsync(verifiedRead(r, h, key, b * p.bitrot_block, 10), { instanceOf: BitrotError });
  t.is(e2.blockIndex, b);
  t.true(
    (await verifiedRead(r, h, key, 0, p.bitrot_block * 5)).equals(
      read('G3', 'input.bin').subarray(0, p.bitrot_block * 5),
    ),
    'blocks before a are fine',
  );
});

/** Serve a slice read plan from the committed shard files of a container vector. */
async function readSlice(
  v: string,
  p: Params,
  s: SliceJson,
  shardFile: (i: number) => Buffer,
): Promise<{ bytes: Buffer; shards: number[] }> {
  const layout: ContainerLayout = {
    mode: p.mode,
    k: p.ec_k,
    m: p.ec_m,
    chunkSizeBytes: Number(p.chunk_size),
    ecBlockSizeBytes: Number(p.ec_block_size),
    chunkLogicalLenBytes: () => Number(p.chunk_logical_len),
  };
  const plan = planSliceRead(
    { containerId: BigInt(p.file_id), offsetBytes: BigInt(s.offset), lengthBytes: s.length, cookie: s.cookie },
    layout,
  );
  const key = parseBitrotKey(p.bitrot_key);
  const parts: Buffer[] = [];
  for (const piece of plan) {
    if (piece.chunkIndex !== 0n) throw new Error(`${v}: vectors hold container chunk 0 only`);
    const r = memReader(shardFile(piece.shardIndex));
    parts.push(await verifiedRead(r, await readShardHeader(r), key, piece.shardOffsetBytes, piece.lengthBytes));
  }
  return { bytes: Buffer.concat(parts), shards: plan.map((x) => x.shardIndex) };
}

function needleBytes(input: Buffer, s: SliceJson): Buffer {
  return input.subarray(Number(s.offset) + 32, Number(s.offset) + 32 + s.length);
}

test('G7 needles read back via planSliceRead + checkNeedle; the bad slice is rejected', async (t) => {
  const p = params('G7');
  const input = read('G7', 'input.bin');
  t.is(p.needles!.length, 3);
  for (const s of p.needles!) {
    const { bytes } = await readSlice('G7', p, s, () => read('G7', 'expected.shard'));
    const slice = {
      containerId: BigInt(p.file_id),
      offsetBytes: BigInt(s.offset),
      lengthBytes: s.length,
      cookie: s.cookie,
    };
    t.true(checkNeedle(slice, BigInt(s.file_id), bytes).equals(needleBytes(input, s)));
  }
  t.is(p.bad_slices!.length, 1);
  for (const s of p.bad_slices!) {
    const { bytes } = await readSlice('G7', p, s, () => read('G7', 'expected.shard'));
    const slice = {
      containerId: BigInt(p.file_id),
      offsetBytes: BigInt(s.offset),
      lengthBytes: s.length,
      cookie: s.cookie,
    };
    const err = t.throws(() => checkNeedle(slice, BigInt(s.file_id), bytes), { instanceOf: SliceError });
    t.is(err.field, s.reason);
  }
});

test('G8 slice reads touch exactly expected_data_shards, never parity', async (t) => {
  const p = params('G8');
  const input = read('G8', 'input.bin');
  t.true(read('G8', 'expected.shard').equals(read('G8', 'expected.0.shard')));
  const files = [0, 1, 2, 3, 4, 5].map((i) => read('G8', `expected.${i}.shard`));
  const key = parseBitrotKey(p.bitrot_key);
  const verified = files.map((f) => verifyShardBytes(f, key));
  const payloads = verified.map((v) => v.payload);
  const data = splitChunk(geometry(p), input);
  for (let i = 0; i < 4; i++) t.true(payloads[i].equals(data[i]), `data shard ${i}`);
  const parity = rsReferenceCodec(4, 2).encode(data);
  t.true(payloads[4].equals(parity[0]) && payloads[5].equals(parity[1]), 'parity shards');
  // DESIGN §3 short last erasure block and a short last bitrot block on every shard.
  t.not(Number(p.chunk_logical_len) % Number(p.ec_block_size), 0, 'G8 last erasure block is short');
  t.not(Number(p.chunk_logical_len) % p.ec_k, 0, 'G8 last fragment is zero padded');
  for (const { header } of verified)
    t.is(header.flags & FLAG_LAST_BLOCK_SHORT, FLAG_LAST_BLOCK_SHORT, 'G8 last_block_short');
  const counts = new Set<number>();
  const shortEbCounts = new Set<number>();
  for (const s of p.needles!) {
    const { bytes, shards } = await readSlice('G8', p, s, (i) => files[i]);
    const touched = [...new Set(shards)].sort((a, b) => a - b); // expected_data_shards is ascending
    t.deepEqual(touched, s.expected_data_shards!, `needle at ${s.offset}`);
    if (Number(s.offset) >= Number(p.ec_block_size)) shortEbCounts.add(touched.length);
    counts.add(touched.length);
    const slice = {
      containerId: BigInt(p.file_id),
      offsetBytes: BigInt(s.offset),
      lengthBytes: s.length,
      cookie: s.cookie,
    };
    t.true(checkNeedle(slice, BigInt(s.file_id), bytes).equals(needleBytes(input, s)));
  }
  t.true(counts.has(1) && counts.has(2), 'one inside a fragment, one straddling');
  t.true(shortEbCounts.has(1) && shortEbCounts.has(2), 'the same inside the short last erasure block');
  for (const s of p.bad_slices ?? []) {
    const { bytes } = await readSlice('G8', p, s, (i) => files[i]);
    const slice = {
      containerId: BigInt(p.file_id),
      offsetBytes: BigInt(s.offset),
      lengthBytes: s.length,
      cookie: s.cookie,
    };
    t.is(t.throws(() => checkNeedle(slice, BigInt(s.file_id), bytes), { instanceOf: SliceError }).field, s.reason);
  }
});

/** A layout transform's names (docs/transforms.md) from a G9..G16 params.json. */
function layoutNames(t: unknown): string[] {
  const x = t as { compression?: { algo: string }; encryption?: { algo: string } };
  return [x.compression?.algo ?? '', x.encryption !== undefined ? 'aes256gcm' : ''].filter((n) => n !== '');
}

test('G9..G16 (layout transforms; G11, G12 cipher format v1, G14..G16 v2): every shard verifies; the payload, joined by §6 for EC, decodes to input.bin', (t) => {
  for (const v of ['G9', 'G10', 'G11', 'G12', 'G13', 'G14', 'G15', 'G16']) {
    const p = params(v);
    const key = parseBitrotKey(p.bitrot_key);
    const input = read(v, 'input.bin');
    const files =
      p.mode === 'ec'
        ? Array.from({ length: p.ec_k + p.ec_m }, (_, i) => read(v, `expected.${i}.shard`))
        : [read(v, 'expected.shard')];
    const payloads = files.map((f) => verifyShardBytes(f, key).payload);
    const stored =
      p.mode === 'ec'
        ? joinChunk({ ...geometry(p), chunkLogicalLenBytes: Number(p.chunk_logical_len) }, payloads.slice(0, p.ec_k))
        : payloads[0];
    t.is(stored.length, Number(p.chunk_logical_len), `${v} stored length`);
    const enc = (p.transform as unknown as { encryption?: { store_key: string } }).encryption;
    const id = { fileId: BigInt(p.file_id), chunkIndex: BigInt(p.chunk_index), version: BigInt(p.version) };
    const raw = decodePayload(
      parseTransforms(layoutNames(p.transform)),
      p.flags & 6,
      stored,
      Number(p.content_len),
      id,
      enc === undefined ? null : Buffer.from(enc.store_key, 'hex'),
    );
    t.true(raw.equals(input), `${v} decoded = input.bin`);
  }
});
