// store/chunks/ec-chunk.ts: the EC shard payloads of a chunk, encoded without copying the data
// shards out of the content, equal spec §6's split plus Reed-Solomon parity.
import test from 'ava';
import { prng, randomBytes } from '../helpers';

test('EC payloads without a split copy equal the §6 split + RS parity', async (t) => {
  const { encodeEcShards } = await import('../../../store/chunks/ec-chunk');
  const { splitChunk } = await import('../../../src/mapping');
  const { rsCodec } = await import('../../../src/rs');
  const { parseLayout } = await import('../../../src/layout');
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
