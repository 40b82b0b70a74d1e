// store/chunks/shard-encode.ts: the store writes shard files in parts (header+table, then payload in
// place): the bytes must equal src/shard.ts encodeShard exactly.
import test from 'ava';
import { loadHighway } from '../../../src/highway';
import { parseBitrotKey } from '../../../src/keying';
import { encodeShard } from '../../../src/shard';
import { encodeShardParts } from '../../../store/chunks/shard-encode';
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
