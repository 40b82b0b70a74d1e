// store/upkeep/shard-damage.ts (`chunkfs inject corrupt|drop`, DESIGN §7): each kind of damage
// lands where it says and is what a verified read then meets (a data block or its hash entry:
// bitrot of that block; the header: a header check; drop: the file gone), on that shard alone;
// out-of-range shards and blocks are refused naming the range, and an EC byte maps to its data shard.
import test from 'ava';
import * as fs from 'node:fs';
import { BitrotError, FormatError } from '../../../src/errors';
import { FsError } from '../../../store/fs-error';
import { damageShard, shardByteOf } from '../../../store/upkeep/shard-damage';
import { SMALL } from '../helpers';
import { fileFixture } from './fixture';

const BB = SMALL.bitrotBlockBytes;

test('data, hash and header damage fail the next verified read of that shard only; drop removes it', async (t) => {
  const f = await fileFixture('replica:3', 1);
  const ref = f.ref(0);
  const data = await damageShard(f.env, ref, 0, 'data', 5);
  t.like(data, { shardIndex: 0, kind: 'data', blockIndex: 5, shards: 3 });
  const err = await t.throwsAsync(f.env.shards.readVerified(ref, 0, 5 * BB, 10), { instanceOf: BitrotError });
  t.is((err as BitrotError).blockIndex, 5);
  t.true(
    (await f.env.shards.readVerified(ref, 0, 4 * BB, BB)).equals(f.data.subarray(4 * BB, 5 * BB)),
    'block 4 reads',
  );
  const hash = await damageShard(f.env, ref, 1, 'hash', 7);
  t.like(hash, { shardIndex: 1, blockIndex: 7 });
  await t.throwsAsync(f.env.shards.readVerified(ref, 1, 7 * BB, 1), { instanceOf: BitrotError });
  await damageShard(f.env, ref, 2, 'header', 0);
  await t.throwsAsync(f.env.shards.readWhole(ref, 2), { instanceOf: FormatError });
  const drop = await damageShard(f.env, ref, 2, 'drop', 0);
  t.false(fs.existsSync(drop.path));
  t.true((await f.store.read(f.ino, 0, 5 * BB)).equals(f.data.subarray(0, 5 * BB)), 'undamaged blocks still read');
  await f.store.close();
});

test('without a shard index the damage goes to the shard a read tries first', async (t) => {
  const f = await fileFixture('replica:3', 1);
  const r = await damageShard(f.env, f.ref(0), undefined, 'data', 0);
  t.is(r.shardIndex, r.readOrder[0]);
  await f.store.close();
});

test('out-of-range shards and blocks are refused naming the range; nothing is touched', async (t) => {
  const f = await fileFixture('ec:4+2', 1);
  const ref = f.ref(0);
  const before = fs.readFileSync(f.env.shards.path(ref, 0));
  await t.throwsAsync(damageShard(f.env, ref, 6, 'data', 0), { instanceOf: FsError, message: /shards 0\.\.5/ });
  await t.throwsAsync(damageShard(f.env, ref, 0, 'data', 16), { message: /has 16 block\(s\) \(0\.\.15\)/ });
  t.true(fs.readFileSync(f.env.shards.path(ref, 0)).equals(before));
  // ec:4+2, 64 KiB EC blocks cut in 16 KiB pieces, one per data shard (spec §6): chunk byte 20,000
  // is in data shard 1, byte 70,000 in the second stripe's first piece (data shard 0).
  t.deepEqual(shardByteOf(ref, 20_000, undefined), { shardIndex: 1, shardOffsetBytes: 20_000 - 16_384 });
  t.deepEqual(shardByteOf(ref, 70_000, 0), { shardIndex: 0, shardOffsetBytes: 16_384 + (70_000 - 65_536) });
  t.throws(() => shardByteOf(ref, 20_000, 2), { message: /in data shard 1 of layout ec:4\+2, not shard 2/ });
  await f.store.close();
});
