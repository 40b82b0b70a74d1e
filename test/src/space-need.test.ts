// Disk bytes a file's logical bytes need once stored (src/space-need.ts): every shard with its
// header, hash table and EOF pad (spec §2-§5), whole chunks then a last partial one.
import test from 'ava';
import { storedBytesUpperBound } from '../../src/space-need';
import { parseLayout } from '../../src/layout';

const MIB = 1 << 20;
const KIB = 1024;

test('replica:3 stores three shards of header, hash table and payload padded to 4 KiB', (t) => {
  const l = { layout: parseLayout('replica:3'), chunkSizeBytes: 4 * MIB, bitrotBlockBytes: 64 * KIB };
  t.is(storedBytesUpperBound(l, 0), 0);
  // 64 blocks x 32-byte hashes: one 4 KiB page of hash table after the 4 KiB header.
  t.is(storedBytesUpperBound(l, 4 * MIB), 3 * (4 * KIB + 4 * KIB + 4 * MIB));
  t.is(storedBytesUpperBound(l, 100), 3 * (4 * KIB + 4 * KIB + 4 * KIB), 'a 100-byte file: one padded page');
  t.is(storedBytesUpperBound(l, 9 * MIB), 2 * 3 * (8 * KIB + 4 * MIB) + 3 * (8 * KIB + MIB));
});

test('ec:4+2 stores k + m shards of a quarter chunk each', (t) => {
  const l = { layout: parseLayout('ec:4+2'), chunkSizeBytes: 4 * MIB, bitrotBlockBytes: 64 * KIB };
  t.is(storedBytesUpperBound(l, 4 * MIB), 6 * (8 * KIB + MIB));
  t.is(storedBytesUpperBound(l, 4 * KIB + 1), 6 * (8 * KIB + 4 * KIB), 'a shard of 1,025 bytes: one padded page');
});
