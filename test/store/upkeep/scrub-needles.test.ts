// Scrub walks the needles (store/upkeep/scrub-needles.ts, spec §11.4): every small file's slice is
// read back and its needle checked (magic, file_id, cookie, data_crc32c). A slice that names no
// needle of its own file is reported with the inode, on a store whose shards all verify; needles no
// replica can be read for (FaultyIo) are each reported.
import test from 'ava';
import { ChunkEnv } from '../../../store/chunks/chunk-env';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { SliceRows } from '../../../store/meta/slice-rows';
import { ContainerHost } from '../../../store/small/needle-io';
import { scrubNeedles } from '../../../store/upkeep/scrub-needles';
import { prng, randomBytes, smallStore, writeBehind } from '../helpers';

const PACK = { smallFileMaxBytes: 16 * 1024 };

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`scrub checks every needle; a slice naming a foreign needle is reported: ${layout}`, async (t) => {
    const { store } = await smallStore(layout, 6, PACK);
    const rnd = prng(7);
    const inos: number[] = [];
    for (let i = 0; i < 30; i++) {
      const a = store.ns.create(1, `f${i}`, 0o644, 0, 0);
      await store.write(a.ino, 0, randomBytes(rnd, 1 + Math.floor(rnd() * 16_000)));
      inos.push(a.ino);
    }
    const clean = await store.scrub();
    t.deepEqual(clean.needles, { checked: 30, badCount: 0, bad: [] });
    t.is(clean.badCount, 0);
    // f3's slice now names f4's needle (a metadata bug, not bitrot: every shard still verifies).
    const other = store.ns.db
      .prepare('SELECT slice_offset, slice_length, slice_cookie FROM inodes WHERE ino = ?')
      .get(inos[4]) as Record<string, bigint>;
    const damage = store.ns.db.prepare(
      'UPDATE inodes SET slice_offset = ?, slice_length = ?, slice_cookie = ? WHERE ino = ?',
    );
    writeBehind(store.ns.db, () => damage.run(other.slice_offset, other.slice_length, other.slice_cookie, inos[3]));
    const found = await store.scrub();
    t.is(found.badCount, 0, 'the shards verify');
    t.is(found.needles.checked, 30);
    t.is(found.needles.badCount, 1);
    t.is(found.needles.bad[0].ino, inos[3]);
    t.regex(found.needles.bad[0].error, /needle|file_id|inode/);
    await store.close();
  });
}

test('scrubNeedles() with every replica of the container failing its reads: each needle reported, none skipped', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const { store } = await smallStore('replica:3', 6, { ...PACK, io });
  const inos: number[] = [];
  for (let i = 0; i < 5; i++) {
    const a = store.ns.create(1, `f${i}`, 0o644, 0, 0);
    await store.write(a.ino, 0, Buffer.from(`file ${i}`));
    inos.push(a.ino);
  }
  await store.sync();
  await store.applyNow(); // the needles in the shards, not only in the intent backlog
  const s = store as unknown as { env: ChunkEnv; files: ContainerHost & { slices: SliceRows } };
  s.env.shards.forgetAll();
  io.addFault({ op: 'pread', path: '.shard', error: 'EIO' });
  const r = await scrubNeedles(s.env, s.files, s.files.slices);
  t.like(r, { checked: 5, badCount: 5 });
  t.deepEqual(
    r.bad.map((b) => b.ino),
    inos,
  );
  io.clearFaults();
  t.like(await scrubNeedles(s.env, s.files, s.files.slices), { checked: 5, badCount: 0 });
  await store.close();
});
