// store/small/small-files.ts: which writes of a file go to a needle (spec §11, DESIGN §5 "Small
// files"): small files are needles in containers with no shards of their own; every change writes a
// new needle and the old one turns dead; growing past the threshold moves the file to chunks.
import test from 'ava';
import * as fs from 'node:fs';
import { Store } from '../../../store/store';
import { decodeNeedleHeader } from '../../../src/needle';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { prng, randomBytes, smallStore } from '../helpers';
import { PACK, containerRows } from './containers';

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`small files are needles, read back, no shards of their own: ${layout}`, async (t) => {
    const { store } = await smallStore(layout, 6, PACK);
    const rnd = prng(1);
    const files = [];
    for (let i = 0; i < 20; i++) {
      const a = store.ns.create(1, `f${i}`, 0o644, 0, 0);
      files.push({ ino: a.ino, data: randomBytes(rnd, 1 + Math.floor(rnd() * 16_000)) });
    }
    await Promise.all(files.map((f) => store.write(f.ino, 0, f.data)));
    for (const f of files) {
      t.true((await store.read(f.ino, 0, f.data.length + 10)).equals(f.data));
      t.is(store.ns.getattr(f.ino)!.sizeBytes, f.data.length);
      t.is(await store.shardPath(f.ino, 0, 0), null, 'no chunk of its own');
    }
    const rows = containerRows(store);
    t.is(rows.length, 1, 'one open container per pack class');
    t.is(rows[0].state, 'open');
    const c = store.ns.getattr(Number(rows[0].id))!;
    t.is(c.layout, 'replica:3', 'open container: replica with the target fault tolerance (ec:4+2 -> replica:3)');
    t.false(
      store.ns.readdir(1).some((e) => e.ino === Number(rows[0].id)),
      'no listing shows a container',
    );
    const versions = store.ns.db
      .prepare('SELECT chunk_index, max_version FROM chunks WHERE ino = ?')
      .all(rows[0].id) as Array<{ max_version: bigint }>;
    t.deepEqual(
      versions.map((v) => Number(v.max_version)),
      [1],
      'the 20 concurrent writes were one container append',
    );
    t.deepEqual((await store.status()).layoutsInUse, [{ layout, files: 20 }], 'containers are not user files');
    // The needles are on disk in the container's shard, with magic and owner.
    const first = store.ns.db.prepare('SELECT slice_offset FROM inodes WHERE ino = ?').get(files[0].ino) as {
      slice_offset: bigint;
    };
    const shard = fs.readFileSync((await store.shardPath(Number(rows[0].id), 0, 0))!);
    const header = decodeNeedleHeader(shard.subarray(8192 + Number(first.slice_offset))); // 4096 header + one page of hash table
    t.is(header.fileId, BigInt(files[0].ino));
    await store.close();
  });
}

test('overwrite, append, truncate write new needles; growing past the threshold moves to chunks; unlink adds dead bytes', async (t) => {
  const { store } = await smallStore('replica:3', 6, PACK);
  const a = store.ns.create(1, 'a', 0o644, 0, 0);
  const model = Buffer.from('hello world');
  await store.write(a.ino, 0, model);
  await store.write(a.ino, 6, Buffer.from('WORLD!!'));
  const m2 = Buffer.from('hello WORLD!!');
  t.true((await store.read(a.ino, 0, 100)).equals(m2));
  await store.truncate(a.ino, 5);
  t.true((await store.read(a.ino, 0, 100)).equals(Buffer.from('hello')));
  await store.truncate(a.ino, 8);
  t.true((await store.read(a.ino, 0, 100)).equals(Buffer.from('hello\0\0\0')));
  const rows = containerRows(store);
  t.true(Number(rows[0].dead_bytes) > 0, 'replaced needles are dead');
  // Grow past small_file_max: chunks of its own, slice gone.
  const big = randomBytes(prng(2), 20_000);
  await store.write(a.ino, 8, big);
  const want = Buffer.concat([Buffer.from('hello\0\0\0'), big]);
  t.true((await store.read(a.ino, 0, want.length)).equals(want));
  t.not(await store.shardPath(a.ino, 0, 0), null);
  t.is(
    (store.ns.db.prepare('SELECT slice_container FROM inodes WHERE ino = ?').get(a.ino) as { slice_container: unknown })
      .slice_container,
    null,
  );
  // Hard link, rename, chmod, unlink of a small file.
  const b = store.ns.create(1, 'b', 0o644, 0, 0);
  await store.write(b.ino, 0, Buffer.from('small'));
  store.ns.link(b.ino, 1, 'b2');
  store.ns.rename(1, 'b', 1, 'c');
  store.ns.setattr(b.ino, { mode: 0o600 });
  t.true((await store.read(b.ino, 0, 10)).equals(Buffer.from('small')));
  const deadBefore = Number(containerRows(store)[0].dead_bytes);
  store.ns.unlink(1, 'c');
  t.true((await store.read(b.ino, 0, 10)).equals(Buffer.from('small')));
  store.ns.unlink(1, 'b2');
  await store.deleteFile(b.ino);
  t.true(Number(containerRows(store)[0].dead_bytes) > deadBefore);
  await store.close();
});

test('a file growing past the threshold whose chunks cannot be stored stays the needle it was', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const { store } = await smallStore('replica:3', 6, { ...PACK, io });
  const a = store.ns.create(1, 'a', 0o644, 0, 0);
  await store.write(a.ino, 0, Buffer.from('small and safe'));
  const slice = (): unknown =>
    store.ns.db.prepare('SELECT slice_container AS c, slice_offset AS o FROM inodes WHERE ino = ?').get(a.ino);
  const before = slice();
  // The file's own chunk would be its first shards: every shard write of it fails.
  io.addFault({ op: 'open', path: (p) => p.includes(`${a.ino.toString(16).padStart(16, '0')}.v`), error: 'EIO' });
  await t.throwsAsync(store.write(a.ino, 0, randomBytes(prng(4), PACK.smallFileMaxBytes + 1)));
  io.clearFaults();
  t.deepEqual(slice(), before, 'the slice is dropped only with the commit of the chunks');
  t.deepEqual(await store.read(a.ino, 0, 100), Buffer.from('small and safe'));
  t.is(store.ns.getattr(a.ino)!.sizeBytes, 14);
  const big = randomBytes(prng(5), PACK.smallFileMaxBytes + 1);
  await store.write(a.ino, 0, big);
  t.true((await store.read(a.ino, 0, big.length)).equals(big), 'moved to chunks once they can be stored');
  await store.close();
});
