// store/upkeep/tag-check.ts (DESIGN §10): a shard rewritten with fresh hashes over other bytes (a bad
// write, or a forgery without the key) passes §9 and only the GCM tag shows it. For a replica the
// shards whose payload fails the tag are named; for EC the one data shard without which the payload
// authenticates; when no one shard explains it, it says so. Chunks that are not encrypted are not
// checked.
import test from 'ava';
import { ChunkRef, shardDataLen } from '../../../store/chunks/chunk-ref';
import { tagCheckable, tagFailures, tagOk } from '../../../store/upkeep/tag-check';
import { FileFixture, fileFixture } from './fixture';

/** Shard i rewritten through the store with fresh hashes over its payload with one byte flipped. */
async function forge(f: FileFixture, ref: ChunkRef, i: number, at = 100): Promise<void> {
  const payload = await f.env.shards.readWhole(ref, i);
  payload[at % shardDataLen(ref)] ^= 1;
  await f.env.shards.writeShard(ref, i, payload);
}

test('replica: the forged replicas are named; the chunk still authenticates from the others', async (t) => {
  const f = await fileFixture('replica:3,aes256gcm', 1);
  const ref = f.ref(0);
  t.true(tagCheckable(f.env, ref));
  t.deepEqual(await tagFailures(f.env, ref), { shards: new Set(), unexplained: false });
  await forge(f, ref, 1);
  await forge(f, ref, 2, 5000);
  t.deepEqual(await tagFailures(f.env, ref), { shards: new Set([1, 2]), unexplained: false });
  t.true(tagOk(f.env, ref, await f.env.shards.readWhole(ref, 0)));
  t.false(tagOk(f.env, ref, await f.env.shards.readWhole(ref, 1)));
  await f.store.close();
});

test('EC: the one forged data shard is found by leaving each out; two are unexplained', async (t) => {
  const f = await fileFixture('ec:4+2,aes256gcm', 1);
  const ref = f.ref(0);
  await forge(f, ref, 2);
  t.deepEqual(await tagFailures(f.env, ref), { shards: new Set([2]), unexplained: false });
  await forge(f, ref, 0);
  t.deepEqual(await tagFailures(f.env, ref), { shards: new Set(), unexplained: true });
  await f.store.close();
});

test('a chunk that is not encrypted is not checked', async (t) => {
  const f = await fileFixture('replica:3', 1);
  const ref = f.ref(0);
  t.false(tagCheckable(f.env, ref));
  await forge(f, ref, 1);
  t.deepEqual(await tagFailures(f.env, ref), { shards: new Set(), unexplained: false });
  await f.store.close();
});
