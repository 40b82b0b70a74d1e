import test from 'ava';
import { EcGeometry, joinChunk, locate, mapRange, shardDataLenBytes, splitChunk } from '../../src/mapping';
import { prng, randomBytes } from './fixtures';

const MiB = 1 << 20;
const g4: EcGeometry = { k: 4, m: 2, ecBlockSizeBytes: MiB, chunkLogicalLenBytes: 4 * MiB };

/** Byte-at-a-time model of spec §6 + DESIGN §3, independent of mapRange. */
function modelLocate(g: EcGeometry, c: number): [number, number] {
  const eb = Math.floor(c / g.ecBlockSizeBytes);
  const ebLen = Math.min(g.ecBlockSizeBytes, g.chunkLogicalLenBytes - eb * g.ecBlockSizeBytes);
  const frag = Math.ceil(ebLen / g.k);
  const off = c % g.ecBlockSizeBytes;
  return [Math.floor(off / frag), eb * Math.ceil(g.ecBlockSizeBytes / g.k) + (off % frag)];
}

test('spec §6 worked numbers for EC 4+2, EB 1 MiB', (t) => {
  t.is(shardDataLenBytes(g4), MiB);
  t.deepEqual(locate(g4, 0), { ebIndex: 0, dataShard: 0, shardOffsetBytes: 0, fragmentBytes: 262144 });
  t.deepEqual(locate(g4, 262144), { ebIndex: 0, dataShard: 1, shardOffsetBytes: 0, fragmentBytes: 262144 });
  t.deepEqual(locate(g4, MiB + 5), { ebIndex: 1, dataShard: 0, shardOffsetBytes: 262144 + 5, fragmentBytes: 262144 });
  t.deepEqual(locate(g4, 4 * MiB - 1), { ebIndex: 3, dataShard: 3, shardOffsetBytes: MiB - 1, fragmentBytes: 262144 });
});

test('short last erasure block uses ceil(L/k) (DESIGN §3)', (t) => {
  const g = { k: 4, m: 2, ecBlockSizeBytes: MiB, chunkLogicalLenBytes: MiB + 10 };
  t.is(shardDataLenBytes(g), 262144 + 3);
  t.deepEqual(locate(g, MiB + 9), { ebIndex: 1, dataShard: 3, shardOffsetBytes: 262144, fragmentBytes: 3 });
  t.is(shardDataLenBytes({ k: 3, m: 1, ecBlockSizeBytes: 10, chunkLogicalLenBytes: 25 }), 4 + 4 + 2);
  t.is(shardDataLenBytes({ ...g, chunkLogicalLenBytes: 0 }), 0);
});

test('a small range inside one fragment touches one data shard; straddling touches two', (t) => {
  t.deepEqual(
    mapRange(g4, 1000, 2000).map((p) => p.dataShard),
    [0],
  );
  const s = mapRange(g4, 262144 - 10, 30);
  t.deepEqual(
    s.map((p) => [p.dataShard, p.shardOffsetBytes, p.lengthBytes]),
    [
      [0, 262134, 10],
      [1, 0, 20],
    ],
  );
  const across = mapRange(g4, MiB - 4, 8);
  t.deepEqual(
    across.map((p) => [p.dataShard, p.ebIndex, p.shardOffsetBytes]),
    [
      [3, 0, 262140],
      [0, 1, 262144],
    ],
  );
});

test('mapRange agrees with a byte model over random geometries', (t) => {
  const rand = prng(7);
  for (let iter = 0; iter < 200; iter++) {
    const k = 1 + (rand() % 7);
    const eb = 1 + (rand() % 50);
    const g = { k, m: 1, ecBlockSizeBytes: eb, chunkLogicalLenBytes: rand() % 200 };
    if (g.chunkLogicalLenBytes === 0) continue;
    const c = rand() % g.chunkLogicalLenBytes;
    const len = rand() % (g.chunkLogicalLenBytes - c + 1);
    const pieces = mapRange(g, c, len);
    let at = c;
    for (const p of pieces) {
      t.is(p.chunkOffsetBytes, at);
      for (let j = 0; j < p.lengthBytes; j++) {
        const [shard, off] = modelLocate(g, at + j);
        if (shard !== p.dataShard || off !== p.shardOffsetBytes + j)
          t.fail(`mismatch at ${at + j} in ${JSON.stringify(g)}`);
      }
      at += p.lengthBytes;
    }
    t.is(at, c + len);
  }
});

test('splitChunk / joinChunk round trip with zero padding', (t) => {
  const rand = prng(9);
  for (const g of [
    g4,
    { k: 3, m: 2, ecBlockSizeBytes: 1000, chunkLogicalLenBytes: 2501 },
    { k: 1, m: 0, ecBlockSizeBytes: 64, chunkLogicalLenBytes: 100 },
  ]) {
    const chunk = randomBytes(rand, g.chunkLogicalLenBytes);
    const shards = splitChunk(g, chunk);
    t.is(shards.length, g.k);
    for (const s of shards) t.is(s.length, shardDataLenBytes(g));
    t.true(joinChunk(g, shards).equals(chunk));
  }
  const g = { k: 3, m: 2, ecBlockSizeBytes: 1000, chunkLogicalLenBytes: 2001 };
  const shards = splitChunk(g, Buffer.alloc(2001, 0xaa));
  t.is(shards[0].length, 334 * 2 + 1);
  t.is(shards[2][333], 0, 'padding of the last fragment of a full block (3*334 > 1000)');
  t.is(shards[1][334 * 2], 0, 'short last block: 1 byte split over k=3, shard 1 gets nothing');
  t.is(shards[0][334 * 2], 0xaa);
});
