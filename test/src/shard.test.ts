import test from 'ava';
import { BitrotError, ChunkfsError, FormatError } from '../../src/errors';
import { hashEntry, verifyBlock } from '../../src/hashtable';
import {
  FLAG_COMPRESSED,
  FLAG_LAST_BLOCK_SHORT,
  FLAG_MODE_EC,
  FLAG_PARITY_SHARD,
  decodeHeader,
} from '../../src/header';
import { loadHighway } from '../../src/highway';
import { dataStartBytes } from '../../src/region';
import {
  ShardReader,
  encodeShard,
  encodeShardHead,
  readShardHeader,
  verifiedRead,
  verifyShardBytes,
} from '../../src/shard';
import { KEY, prng, randomBytes, replicaParams } from './fixtures';

test.before(async () => loadHighway());

/** In-memory reader that returns short at EOF and counts calls. */
function memReader(bytes: Buffer): ShardReader & { calls: number } {
  return {
    calls: 0,
    async read(offsetBytes: number, lengthBytes: number) {
      this.calls++;
      return bytes.subarray(offsetBytes, Math.min(offsetBytes + lengthBytes, bytes.length));
    },
  };
}

const payload = randomBytes(prng(3), 16384 * 3 + 5000);
const params = replicaParams({ chunkLogicalLenBytes: BigInt(payload.length), contentLenBytes: BigInt(payload.length) });

test('encodeShard lays out header | table | data | pad (spec §2)', (t) => {
  const file = encodeShard(params, payload, KEY);
  const h = decodeHeader(file);
  t.is(h.blockCount, 4);
  t.is(h.flags, FLAG_LAST_BLOCK_SHORT);
  t.is(file.length, 8192 + Math.ceil(payload.length / 4096) * 4096);
  t.true(file.subarray(8192, 8192 + payload.length).equals(payload));
  t.true(
    file.subarray(8192 + payload.length).every((x) => x === 0),
    'EOF pad is zero',
  );
  t.true(
    file.subarray(4096 + 4 * 32, 8192).every((x) => x === 0),
    'table pad is zero',
  );
  const pos = { fileId: params.fileId, chunkIndex: params.chunkIndex, shardIndex: 0, version: params.version };
  t.true(verifyBlock(KEY, pos, 3, payload.subarray(3 * 16384), hashEntry(file.subarray(4096), 3)));
});

test('encodeShardHead + payload + pad equals encodeShard (writev path)', (t) => {
  for (const len of [0, 4096, payload.length]) {
    const p = payload.subarray(0, len);
    const pp = { ...params, chunkLogicalLenBytes: BigInt(len), contentLenBytes: BigInt(len) };
    const { head, padBytes } = encodeShardHead(pp, p, KEY);
    t.true(Buffer.concat([head, p, Buffer.alloc(padBytes)]).equals(encodeShard(pp, p, KEY)), `len ${len}`);
  }
});

test('derived flags: EC parity, compressed', (t) => {
  const ec = encodeShard(
    {
      ...params,
      ecK: 4,
      ecM: 2,
      ecAlgo: 1,
      shardIndex: 5,
      ecBlockSizeBytes: 65536n,
      chunkLogicalLenBytes: 4n * 16384n,
      contentLenBytes: 4n * 16384n,
    },
    Buffer.alloc(16384, 1),
    KEY,
  );
  t.is(decodeHeader(ec).flags, FLAG_MODE_EC | FLAG_PARITY_SHARD);
  const c = encodeShard(
    { ...params, compressed: true, contentLenBytes: 1n << 20n, chunkLogicalLenBytes: 16384n },
    Buffer.alloc(16384),
    KEY,
  );
  t.is(decodeHeader(c).flags, FLAG_COMPRESSED);
  t.throws(() => encodeShard({ ...params, bitrotBlockBytes: 1000 }, payload, KEY), { instanceOf: FormatError });
});

test('verifiedRead returns exact ranges with two reads for table and data (spec §9)', async (t) => {
  const file = encodeShard(params, payload, KEY);
  const r = memReader(file);
  const h = await readShardHeader(r);
  const rand = prng(4);
  for (let i = 0; i < 50; i++) {
    const off = rand() % payload.length;
    const len = rand() % (payload.length - off + 1);
    r.calls = 0;
    const got = await verifiedRead(r, h, KEY, off, len);
    t.true(got.equals(payload.subarray(off, off + len)));
    t.true(r.calls <= 2);
  }
  t.is((await verifiedRead(r, h, KEY, payload.length, 0)).length, 0);
  await t.throwsAsync(verifiedRead(r, h, KEY, payload.length - 1, 2), { instanceOf: FormatError });
});

test('verifiedRead: bit flip is BitrotError at that block; truncation is FormatError', async (t) => {
  const file = Buffer.from(encodeShard(params, payload, KEY));
  const start = dataStartBytes(4);
  file[start + 2 * 16384 + 77] ^= 0x10;
  const h = decodeHeader(file);
  const err = await t.throwsAsync(verifiedRead(memReader(file), h, KEY, 16384, 2 * 16384 + 100), {
    instanceOf: BitrotError,
  });
  t.is(err.blockIndex, 2);
  t.is(err.site.fileId, params.fileId);
  t.true(
    (await verifiedRead(memReader(file), h, KEY, 0, 2 * 16384)).equals(payload.subarray(0, 2 * 16384)),
    'other blocks still read',
  );
  const short = file.subarray(0, start + 3 * 16384 + 10);
  t.is(
    (await t.throwsAsync(verifiedRead(memReader(short), h, KEY, 3 * 16384, 100), { instanceOf: FormatError })).field,
    'data',
  );
  const noTable = file.subarray(0, 4096 + 40);
  t.is(
    (await t.throwsAsync(verifiedRead(memReader(noTable), h, KEY, 3 * 16384, 100), { instanceOf: FormatError })).field,
    'hash_table',
  );
  await t.throwsAsync(readShardHeader(memReader(file.subarray(0, 100))), { instanceOf: FormatError });
});

test('a correct block at the wrong position fails (spec §4.1)', (t) => {
  const file = Buffer.from(encodeShard(params, payload, KEY));
  const start = dataStartBytes(4);
  const b0 = Buffer.from(file.subarray(start, start + 16384));
  file.copy(file, start, start + 16384, start + 2 * 16384);
  b0.copy(file, start + 16384);
  t.is(t.throws(() => verifyShardBytes(file, KEY), { instanceOf: BitrotError }).blockIndex, 0);
  const other = encodeShard({ ...params, shardIndex: 1 }, payload, KEY);
  const misdirected = Buffer.concat([encodeShard(params, payload, KEY).subarray(0, 4096), other.subarray(4096)]);
  t.is(t.throws(() => verifyShardBytes(misdirected, KEY), { instanceOf: BitrotError }).blockIndex, 0);
});

test('verifyShardBytes decodes a whole file and names truncation', (t) => {
  const file = encodeShard(params, payload, KEY);
  const { header, payload: got } = verifyShardBytes(file, KEY);
  t.true(got.equals(payload));
  t.is(header.shardDataLenBytes, BigInt(payload.length));
  t.is(t.throws(() => verifyShardBytes(file.subarray(0, 5000), KEY), { instanceOf: FormatError }).field, 'hash_table');
  t.is(t.throws(() => verifyShardBytes(file.subarray(0, 8192 + 100), KEY), { instanceOf: FormatError }).field, 'data');
  const empty = encodeShard({ ...params, chunkLogicalLenBytes: 0n, contentLenBytes: 0n }, Buffer.alloc(0), KEY);
  t.is(empty.length, 4096);
  t.is(verifyShardBytes(empty, KEY).payload.length, 0);
});

test('fuzz: verifyShardBytes on random and mutated files only throws ChunkfsError', (t) => {
  const rand = prng(99);
  const small = randomBytes(rand, 9000);
  const valid = encodeShard(
    { ...params, bitrotBlockBytes: 4096, chunkLogicalLenBytes: 9000n, contentLenBytes: 9000n },
    small,
    KEY,
  );
  let failures = 0;
  for (let i = 0; i < 1500; i++) {
    let b: Buffer;
    if (i % 4 === 0) b = randomBytes(rand, rand() % 20000);
    else {
      b = Buffer.from(valid);
      for (let f = 0; f < 1 + (rand() % 3); f++) b[rand() % b.length] ^= 1 << rand() % 8;
      if (i % 4 === 1) b = b.subarray(0, rand() % b.length);
    }
    try {
      verifyShardBytes(b, KEY);
    } catch (e) {
      failures++;
      if (!(e instanceof ChunkfsError)) t.fail(`untyped throw: ${String(e)}`);
    }
  }
  t.true(failures > 1000);
});
