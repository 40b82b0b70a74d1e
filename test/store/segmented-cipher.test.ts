// Cipher format v2 at the store level (DESIGN §10, src/chunk-segments.ts): random reads of encrypted
// uncompressed chunks read and decrypt only their segments; a shard whose hashes pass but whose
// segment tag fails is served around on replica and EC layouts (the failing shard queued for heal);
// chunks stored in cipher format v1 before this change still read.
import test from 'ava';
import * as fs from 'node:fs';
import { deriveDataKey, seal } from '../../src/chunk-cipher';
import { isSegmented } from '../../src/chunk-segments';
import { openPayload } from '../../src/payload-cipher';
import { encodeShard, verifyShardBytes } from '../../src/shard';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from '../../src/header';
import { openConfig } from '../../store/config';
import { ROOT_INO } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { openStoreMetaOf } from '../helpers/pg-meta';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

/** Random reads of [0, data.length) compared with data: lengths 1..20 KiB at random offsets. */
async function randomReads(store: Store, ino: number, data: Buffer, seed: number, count = 60): Promise<number> {
  const rnd = prng(seed);
  let bad = 0;
  for (let i = 0; i < count; i++) {
    const len = 1 + Math.floor(rnd() * 20_000);
    const at = Math.floor(rnd() * (data.length - len));
    if (!(await store.read(ino, at, len)).equals(data.subarray(at, at + len))) bad++;
  }
  return bad;
}

type Env = { decoded: { segments: { get(k: string): unknown }; get(ref: unknown): unknown } };
/** What the segment reader learnt of a chunk version: its v2 layout, 'v1', or undefined (never read by segments). */
function learnt(store: Store, ino: number, chunkIndex: number, version: bigint): unknown {
  return (store as unknown as { env: Env }).env.decoded.segments.get(`${ino}/${chunkIndex}/${version}`);
}

function chunkVersions(store: Store, ino: number): bigint[] {
  const db = (store as unknown as { db: import('../../store/meta/sql-engine').Db }).db;
  return (
    db.prepare('SELECT version FROM chunks WHERE ino = ? AND version > 0 ORDER BY chunk_index').all(ino) as Array<{
      version: bigint;
    }>
  ).map((r) => r.version);
}

for (const layout of ['replica:3,aes256gcm', 'ec:4+2,aes256gcm']) {
  test(`${layout}: random reads decrypt segments only and return the data; whole reads too`, async (t) => {
    const { store, dir } = await smallStore(layout, 6, { smallFileMaxBytes: 0 });
    const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
    const data = randomBytes(prng(3), 16 * SMALL.chunkSizeBytes + 777); // reads within 256 KiB of the last one are sequential: most are not
    await store.write(f.ino, 0, data);
    await store.close();
    const again = await Store.open(dir);
    t.is(await randomReads(again, f.ino, data, 11), 0);
    const versions = chunkVersions(again, f.ino);
    const bySegments = versions.map((v, c) => learnt(again, f.ino, c, v)).filter((l) => l !== undefined);
    t.true(bySegments.length >= 8, `chunks read by segments: ${bySegments.length} of ${versions.length}`);
    for (const l of bySegments) t.like(l, { segmentBytes: 16384, plainLenBytes: SMALL.chunkSizeBytes });
    t.true((await again.read(f.ino, 0, data.length)).equals(data));
    t.is((await again.scrub()).badCount, 0);
    await again.close();
  });
}

/** Rewrite one shard of a file's chunk with a payload byte flipped and fresh hashes: §9 passes, only a segment tag can tell. */
function forge(dir: string, file: string): void {
  const { key } = openConfig(dir);
  const { header, payload } = verifyShardBytes(fs.readFileSync(file), key);
  payload[payload.length >> 1] ^= 0x5a;
  const params = {
    ...header,
    compressed: (header.flags & FLAG_COMPRESSED) !== 0,
    encrypted: (header.flags & FLAG_ENCRYPTED) !== 0,
  };
  fs.writeFileSync(file, encodeShard(params, payload, key));
}

for (const [layout, shard] of [
  ['replica:3,aes256gcm', 0],
  ['ec:4+2,aes256gcm', 1],
] as const) {
  test(`${layout}: a shard failing a segment tag (hashes pass) is served around and queued for heal; heal mends it`, async (t) => {
    const { store, dir } = await smallStore(layout, 6, { smallFileMaxBytes: 0 });
    const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
    const data = randomBytes(prng(4), SMALL.chunkSizeBytes);
    await store.write(f.ino, 0, data);
    const file = (await store.shardPath(f.ino, 0, shard))!;
    await store.close();
    forge(dir, file);
    const again = await Store.open(dir);
    // Random reads first (the segment path), then the whole chunk: every byte right.
    t.is(await randomReads(again, f.ino, data, 12, 30), 0);
    t.true((await again.read(f.ino, 0, data.length)).equals(data));
    const s = await again.status();
    t.is(s.counters.unrecoverable_reads, 0);
    t.true(s.healQueueLength >= 1, 'the forged shard is queued');
    t.true(
      again.healQueue(10).some((e) => e.shardIndex === shard),
      JSON.stringify(again.healQueue(10)),
    );
    await again.heal();
    t.is((await again.scrub()).badCount, 0, 'mended');
    await again.close();
  });
}

test('chunks stored in cipher format v1 (one GCM message) before v2 still read, at random and whole', async (t) => {
  const { store, dir } = await smallStore('replica:3,aes256gcm', 6, { smallFileMaxBytes: 0 });
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(5), 4 * SMALL.chunkSizeBytes);
  await store.write(f.ino, 0, data);
  const versions = chunkVersions(store, f.ino);
  const files = await Promise.all([0, 1, 2].map(async (i) => (await store.shardPath(f.ino, 0, i))!));
  await store.close();
  // Chunk 0 re-stored as v1 (what the previous version of chunkfs wrote): shards and chunk map.
  const { key, storeKey } = openConfig(dir);
  const dataKey = deriveDataKey(storeKey!, { fileId: BigInt(f.ino), chunkIndex: 0n, version: versions[0] });
  let v1Len = 0;
  const nonce = Buffer.alloc(12, 3);
  for (const file of files) {
    const { header, payload } = verifyShardBytes(fs.readFileSync(file), key);
    t.true(isSegmented(payload), 'written as v2');
    const v1 = seal(dataKey, openPayload(dataKey, payload), nonce);
    v1Len = v1.length;
    fs.writeFileSync(
      file,
      encodeShard({ ...header, chunkLogicalLenBytes: BigInt(v1.length), compressed: false, encrypted: true }, v1, key),
    );
  }
  const db = openStoreMetaOf(dir);
  db.prepare('UPDATE chunks SET stored_len = ? WHERE ino = ? AND chunk_index = 0 AND version = ?').run(
    v1Len,
    f.ino,
    versions[0],
  );
  db.close();
  const again = await Store.open(dir);
  t.is(await randomReads(again, f.ino, data, 13), 0);
  t.is(learnt(again, f.ino, 0, versions[0]), 'v1', 'the segment reader saw v1 and decoded it whole');
  t.true((await again.read(f.ino, 0, data.length)).equals(data));
  t.is((await again.scrub()).badCount, 0, 'scrub checks the v1 tag');
  await again.close();
});
