// store/chunks/ec-chunk.ts: the EC shard payloads of a chunk, encoded without copying the data
// shards out of the content, equal spec §6's split plus Reed-Solomon parity; a chunk that is not
// whole erasure blocks copies only its short last block's padded fragments, into buffers from alloc.
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
    ['ec:4+2', 1],
    ['ec:4+2', 3],
    ['ec:4+2', 64 * 1024 + 1],
    ['ec:4+2', 3 * 64 * 1024 + 48 * 1024],
    ['ec:4+2', 3 * 64 * 1024 + 7 * 4096 + 5],
    ['ec:2+1', 64 * 1024 + 4096],
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
    // Buffers from alloc hold old bytes (a pool's): the padding must be written, not assumed zero.
    const allocated: number[] = [];
    const alloc = (n: number): Buffer => {
      allocated.push(n);
      return Buffer.alloc(n, 0xa5);
    };
    const payloads = encodeEcShards(ref, content, alloc);
    const got = payloads.map((p) => (Array.isArray(p) ? Buffer.concat(p) : Buffer.from(p)));
    const copiedBytes = payloads
      .slice(0, k)
      .flatMap((p) => (Array.isArray(p) ? p : [p]))
      .filter((s) => s.buffer !== content.buffer)
      .reduce((n, s) => n + s.length, 0);
    const g = { k, m, ecBlockSizeBytes: 64 * 1024, chunkLogicalLenBytes: len };
    const data = splitChunk(g, content);
    const want = [...data, ...rsCodec(k, m).encode(data)];
    t.is(got.length, want.length);
    got.forEach((p, i) => t.true(p.equals(want[i]), `${layout} len ${len} shard ${i}`));
    // Memory: m parity shards, and at most the short last block's k fragments, no chunk-sized split
    // (when the fragments of a full erasure block are whole bitrot blocks; ec:3+2's are not).
    const shardBytes = want[0].length;
    const ebBytes = 64 * 1024;
    if (ebBytes % (k * 4096) !== 0) continue;
    const lastFragmentBytes = Math.ceil((len % ebBytes || ebBytes) / k);
    t.true(copiedBytes <= k * lastFragmentBytes, `${layout} len ${len}: ${copiedBytes} data bytes copied`);
    t.true(
      allocated.length <= m + 1 && allocated.reduce((a, b) => a + b, 0) <= m * shardBytes + k * lastFragmentBytes,
      `${layout} len ${len}: allocated ${allocated.join(', ')}`,
    );
  }
});
