// The store writes shard files in parts (header+table, then payload in place):
// the bytes must equal src/shard.ts encodeShard exactly.
import test from 'ava';
import { loadHighway } from '../../src/highway';
import { parseBitrotKey } from '../../src/keying';
import { encodeShard } from '../../src/shard';
import { encodeShardParts } from '../../store/chunks/shard-encode';
import { prng, randomBytes } from './helpers';

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

test('EC payloads without a split copy equal the §6 split + RS parity', async (t) => {
  const { encodeEcShards } = await import('../../store/chunks/ec-chunk');
  const { splitChunk } = await import('../../src/mapping');
  const { rsCodec } = await import('../../src/rs');
  const { parseLayout } = await import('../../src/layout');
  for (const [layout, len] of [
    ['ec:4+2', 256 * 1024],
    ['ec:2+1', 128 * 1024],
    ['ec:4+2', 100_000],
    ['ec:3+2', 192 * 1024],
  ] as const) {
    const l = parseLayout(layout);
    const k = l.kind === 'ec' ? l.k : 1;
    const m = l.kind === 'ec' ? l.m : 0;
    const ref = {
      ino: 2,
      fileId: 2n,
      chunkIndex: 0,
      version: 1n,
      logicalLenBytes: len,
      stored: null,
      diskIds: [0, 1, 2, 3, 4, 5],
      fl: {
        layout: l,
        chunkSizeBytes: 256 * 1024,
        bitrotBlockBytes: 4096,
        ecBlockSizeBytes: 64 * 1024,
        placementSeed: 1n,
        clusterMapEpoch: 1,
      },
    };
    const content = randomBytes(prng(len), len);
    const got = encodeEcShards(ref, content).map((p) => (Array.isArray(p) ? Buffer.concat(p) : Buffer.from(p)));
    const g = { k, m, ecBlockSizeBytes: 64 * 1024, chunkLogicalLenBytes: len };
    const data = splitChunk(g, content);
    const want = [...data, ...rsCodec(k, m).encode(data)];
    t.is(got.length, want.length);
    got.forEach((p, i) => t.true(p.equals(want[i]), `${layout} len ${len} shard ${i}`));
  }
});
