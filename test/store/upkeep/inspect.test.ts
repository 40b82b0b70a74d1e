// `chunkfs inspect`'s core (store/upkeep/inspect.ts) on shard files a store wrote: a good shard
// decodes and verifies, its path agreeing with its header; a flipped block is named; a shard under
// another shard's path is caught; an unreadable or truncated file is said to be; every shard of a
// chunk is found on the disks, every version present; a container's replica shard lists its needles.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseBitrotKey } from '../../../src/keying';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { decodeEcVersions, diskOf, findChunkShards, inspectShardFile } from '../../../store/upkeep/inspect';
import { damageShard } from '../../../store/upkeep/shard-damage';
import { SMALL, smallStore } from '../helpers';
import { FileFixture, fileFixture, internals } from './fixture';

const BB = SMALL.bitrotBlockBytes;

function keyOf(f: { dir: string }): ReturnType<typeof parseBitrotKey> {
  return parseBitrotKey(fs.readFileSync(path.join(f.dir, 'bitrot.key')));
}

function rootOf(f: FileFixture, p: string): string {
  return diskOf(f.store.diskPaths(), p)!.root;
}

test('a good shard verifies and agrees with its path; a flipped block is named', async (t) => {
  const f = await fileFixture('replica:3', 1);
  const ref = f.ref(0);
  const p = f.env.shards.path(ref, 1);
  const good = await inspectShardFile(new NodeIo(), keyOf(f), p, rootOf(f, p));
  t.like(good, {
    ok: true,
    layout: 'replica',
    pathAgrees: true,
    blockCount: SMALL.chunkSizeBytes / BB,
    badBlockCount: 0,
  });
  t.is(good.header!.fileId, String(ref.fileId));
  await damageShard(f.env, ref, 1, 'data', 9);
  const bad = await inspectShardFile(new NodeIo(), keyOf(f), p, rootOf(f, p));
  t.like(bad, { ok: false, badBlockCount: 1, badBlocks: [9] });
  await f.store.close();
});

test("a shard under another shard's path, a truncated one and an unreadable one are each said to be", async (t) => {
  const f = await fileFixture('replica:3', 1);
  const ref = f.ref(0);
  const p0 = f.env.shards.path(ref, 0);
  const moved = path.join(path.dirname(p0), '7.shard'); // shard 0's bytes where shard 7 would be
  fs.copyFileSync(p0, moved);
  const wrong = await inspectShardFile(new NodeIo(), keyOf(f), moved, rootOf(f, moved));
  t.like(wrong, { pathAgrees: false, badBlockCount: 0, ok: false });
  fs.truncateSync(moved, 8192);
  t.regex((await inspectShardFile(new NodeIo(), keyOf(f), moved)).dataError ?? '', /^truncated: 8192 bytes/);
  const io = new FaultyIo(new NodeIo());
  io.addFault({ op: 'pread', path: p0, error: 'EIO' });
  const unreadable = await inspectShardFile(io, keyOf(f), p0);
  t.regex(unreadable.dataError ?? '', /^cannot read: EIO/);
  t.false(unreadable.ok);
  fs.rmSync(moved);
  await f.store.close();
});

test('every shard of a chunk is found, every version present; EC versions decode from their data shards', async (t) => {
  const f = await fileFixture('ec:4+2,zstd', 1);
  const z = f.store.ns.create(1, 'z', 0o644, 0, 0).ino;
  const text = Buffer.alloc(SMALL.chunkSizeBytes, 'compressible text ');
  await f.store.write(z, 0, text);
  await f.store.write(z, 0, text); // a second version; the first waits for reclaim
  const ref = internals(f.store).files.chunkRef(z, 0);
  t.not(ref.stored, null, 'stored compressed');
  const found = await findChunkShards(new NodeIo(), f.store.diskPaths(), ref.fileId, 0);
  t.deepEqual(
    found.map((s) => [s.version, s.shardIndex]),
    [ref.version - 1n, ref.version].flatMap((v) => [0, 1, 2, 3, 4, 5].map((i) => [v, i])),
  );
  t.deepEqual(
    found.filter((s) => s.version === ref.version).map((s) => s.path),
    [0, 1, 2, 3, 4, 5].map((i) => f.env.shards.path(ref, i)),
  );
  t.deepEqual(await findChunkShards(new NodeIo(), f.store.diskPaths(), ref.fileId, 1), [], 'no chunk 1');
  const decoded = await decodeEcVersions(new NodeIo(), keyOf(f), found, { storeKey: null });
  t.deepEqual(
    decoded.map((d) => [d.version, d.decoded.ok, d.decoded.rawBytes]),
    [ref.version - 1n, ref.version].map((v) => [String(v), true, text.length]),
  );
  t.true(decoded[1].decoded.ratio! > 10);
  await f.store.close();
});

test("a container's replica shard lists its needles, each with its file id and a checked crc", async (t) => {
  const { store, dir } = await smallStore('replica:3', 6, { smallFileMaxBytes: 16 * 1024 });
  const inos: number[] = [];
  for (const name of ['a', 'b', 'c']) {
    const ino = store.ns.create(1, name, 0o644, 0, 0).ino;
    await store.write(ino, 0, Buffer.from(`needle of ${name}`));
    inos.push(ino);
  }
  await store.sync();
  await store.applyNow(); // the appends after the first are intents until applied
  const cid = Number((store.ns.db.prepare('SELECT id FROM containers').get() as { id: bigint }).id);
  const p = (await store.shardPath(cid, 0, 0))!;
  const r = await inspectShardFile(new NodeIo(), keyOf({ dir }), p, undefined, {
    storeKey: internals(store).env.storeKey,
  });
  t.is(r.needles!.count, 3);
  t.deepEqual(
    r.needles!.listed.map((n) => [Number(n.fileId), n.crcOk, n.dataLenBytes]),
    inos.map((ino, i) => [ino, true, `needle of ${'abc'[i]}`.length]),
  );
  await store.close();
});
