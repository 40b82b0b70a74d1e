import test from 'ava';
import { hashBlocks, hashEntry, verifyBlock } from '../../src/hashtable';
import { highway256, loadHighway } from '../../src/highway';
import { blockKey } from '../../src/keying';
import { KEY, prng, randomBytes } from './fixtures';

test.before(async () => loadHighway());

const pos = { fileId: 42n, chunkIndex: 1n, shardIndex: 2, version: 3n };

test('entries are position-keyed digests in block order, zero padded (spec §4)', (t) => {
  const data = randomBytes(prng(1), 4096 * 5 + 100);
  const table = hashBlocks(KEY, pos, data, 4096);
  t.is(table.length, 4096);
  for (let i = 0; i < 6; i++) {
    const block = data.subarray(i * 4096, Math.min((i + 1) * 4096, data.length));
    t.deepEqual(hashEntry(table, i), highway256(blockKey(KEY, pos, i), block));
  }
  t.true(table.subarray(6 * 32).every((x) => x === 0));
});

test('verifyBlock accepts the right block and rejects wrong position, data or entry', (t) => {
  const data = randomBytes(prng(2), 8192);
  const table = hashBlocks(KEY, pos, data, 4096);
  const b0 = data.subarray(0, 4096);
  const b1 = data.subarray(4096);
  t.true(verifyBlock(KEY, pos, 0, b0, hashEntry(table, 0)));
  t.true(verifyBlock(KEY, pos, 1, b1, hashEntry(table, 1)));
  t.false(verifyBlock(KEY, pos, 1, b0, hashEntry(table, 0)), 'right block at wrong index');
  t.false(verifyBlock(KEY, { ...pos, shardIndex: 3 }, 0, b0, hashEntry(table, 0)), 'wrong shard');
  t.false(verifyBlock(KEY, { ...pos, version: 4n }, 0, b0, hashEntry(table, 0)), 'wrong version');
  const flipped = Buffer.from(b0);
  flipped[100] ^= 1;
  t.false(verifyBlock(KEY, pos, 0, flipped, hashEntry(table, 0)), 'bit flip');
  t.throws(() => hashEntry(table, 128));
});

test('large table spans several pages', (t) => {
  const data = Buffer.alloc(4096 * 200, 7);
  const table = hashBlocks(KEY, pos, data, 4096);
  t.is(table.length, 8192);
  t.notDeepEqual(hashEntry(table, 0), hashEntry(table, 1), 'same bytes, different position');
});
