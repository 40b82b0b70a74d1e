// store/chunks/shard-encode.ts: the store writes shard files in parts (header+table, then payload in
// place): the bytes must equal src/shard.ts encodeShard exactly.
import test from 'ava';
import { loadHighway } from '../../../src/highway';
import { parseBitrotKey } from '../../../src/keying';
import { encodeShard } from '../../../src/shard';
import {
  HASH_ASYNC_BYTES_MIN,
  encodeShardParts,
  hashShardPartsAsync,
  shardPartsUnhashed,
} from '../../../store/chunks/shard-encode';
import { prng, randomBytes } from '../helpers';

test('encodeShardParts + payload + pad == encodeShard', async (t) => {
  await loadHighway();
  const key = parseBitrotKey(randomBytes(prng(1), 32));
  for (const len of [0, 1, 4095, 4096, 16384 * 3 + 7, 300_000]) {
    const payload = randomBytes(prng(len + 2), len);
    const params = {
      fileId: 77n,
      chunkIndex: 3n,
      version: 9n,
      shardIndex: 1,
      ecK: 1,
      ecM: 0,
      ecAlgo: 0,
      bitrotBlockBytes: 16384,
      chunkLogicalLenBytes: BigInt(len),
      createdUnixNanos: 123n,
      ecBlockSizeBytes: 0n,
      placementSeed: 5n,
      clusterMapEpoch: 1n,
      chunkSizeBytes: 4194304n,
      contentLenBytes: BigInt(len),
    };
    const parts = encodeShardParts(params, payload, key);
    const assembled = Buffer.concat([parts.head, payload, Buffer.alloc(parts.padBytes)]);
    t.true(assembled.equals(encodeShard(params, payload, key)), `length ${len}`);
  }
});

test('hashShardPartsAsync (on the libuv pool, slices at once) fills the same head as encodeShard', async (t) => {
  await loadHighway();
  const key = parseBitrotKey(randomBytes(prng(3), 32));
  const bb = 16384;
  for (const len of [4096, HASH_ASYNC_BYTES_MIN - 4096, HASH_ASYNC_BYTES_MIN, 4 * 1024 * 1024, 4 * 1024 * 1024 - 7]) {
    const whole = randomBytes(prng(len + 5), len);
    const params = {
      fileId: 78n,
      chunkIndex: 4n,
      version: 10n,
      shardIndex: 2,
      ecK: 1,
      ecM: 0,
      ecAlgo: 0,
      bitrotBlockBytes: bb,
      chunkLogicalLenBytes: BigInt(len),
      createdUnixNanos: 124n,
      ecBlockSizeBytes: 0n,
      placementSeed: 6n,
      clusterMapEpoch: 1n,
      chunkSizeBytes: 4194304n,
      contentLenBytes: BigInt(len),
    };
    // As the write-back hands them: block-aligned slices (the last one short), and as one buffer.
    const cut = Math.min(len, 2 * bb * Math.floor(len / (4 * bb)));
    for (const payload of [whole, [whole.subarray(0, cut), whole.subarray(cut)]]) {
      const parts = shardPartsUnhashed(params, payload);
      await hashShardPartsAsync(parts, params, payload, key);
      const assembled = Buffer.concat([parts.head, whole, Buffer.alloc(parts.padBytes)]);
      t.true(
        assembled.equals(encodeShard(params, whole, key)),
        `length ${len}, ${Array.isArray(payload) ? 2 : 1} slices`,
      );
    }
  }
});
