// store/small/needle-io.ts: a needle is read back verified and checked (spec §11.4): one whose
// bytes rot fails over to another replica, counted and healed; one that is not the file's (file_id)
// is never returned; a needle commit that fails halfway fails that file alone, not its batch; a
// container write that fails (FaultyIo) fails its batch and commits nothing.
import test from 'ava';
import * as fs from 'node:fs';
import { Slice } from '../../../src/slice';
import { ChunkEnv } from '../../../store/chunks/chunk-env';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { ContainerHost, readNeedle } from '../../../store/small/needle-io';
import { Store } from '../../../store/store';
import { prng, randomBytes, smallStore, writeBehind } from '../helpers';
import { PACK, containerRows } from './containers';

test('small files survive reopen; a needle whose bytes rot fails over to another replica, counted and healed', async (t) => {
  const { store, dir } = await smallStore('replica:3', 6, PACK);
  const a = store.ns.create(1, 'a', 0o644, 0, 0);
  const data = randomBytes(prng(3), 3000);
  await store.write(a.ino, 0, data);
  await store.sync();
  const cid = Number(containerRows(store)[0].id);
  await store.close();
  const s2 = await Store.open(dir);
  t.true((await s2.read(a.ino, 0, 3000)).equals(data));
  // Flip a needle byte on replica 0: its §9 hash fails and the read goes to replica 1.
  const p = (await s2.shardPath(cid, 0, 0))!;
  const buf = fs.readFileSync(p);
  buf[8192 + 40] ^= 0xff;
  fs.writeFileSync(p, buf);
  await s2.close();
  const s3 = await Store.open(dir);
  t.true((await s3.read(a.ino, 0, 3000)).equals(data));
  const st = await s3.status();
  t.true(st.counters.bitrot_errors + st.counters.needle_mismatches >= 1);
  t.true(st.healQueueLength >= 1);
  await s3.heal();
  t.is((await s3.status()).healQueueLength, 0);
  t.true(
    fs
      .readFileSync(p)
      .subarray(8192)
      .equals(buf.subarray(8192).map((x, i) => (i === 40 ? x ^ 0xff : x))),
    'healed replica holds the needle again',
  );
  await s3.close();
});

test("a needle that is not the file's (file_id check) is never returned: EIO, counted on every replica", async (t) => {
  const { store } = await smallStore('replica:3', 6, PACK);
  const a = store.ns.create(1, 'a', 0o644, 0, 0);
  await store.write(a.ino, 0, Buffer.from('secret of a'));
  const b = store.ns.create(1, 'b', 0o644, 0, 0);
  await store.write(b.ino, 0, Buffer.from('secret of b'));
  // A stale or corrupt pointer: b's slice names a's needle (same cookie, so only file_id tells).
  const ra = store.ns.db.prepare('SELECT slice_offset, slice_cookie FROM inodes WHERE ino = ?').get(a.ino) as Record<
    string,
    bigint
  >;
  const damage = store.ns.db.prepare('UPDATE inodes SET slice_offset = ?, slice_cookie = ? WHERE ino = ?');
  writeBehind(store.ns.db, () => damage.run(ra.slice_offset, ra.slice_cookie, b.ino));
  await t.throwsAsync(store.read(b.ino, 0, 11), { message: /EIO.*needle/ });
  t.is((await store.status()).counters.needle_mismatches, 3);
  t.true((await store.read(a.ino, 0, 11)).equals(Buffer.from('secret of a')));
  await store.close();
});

// One file's commit failing halfway (here after it repointed its slice) must not leave that
// half-done change, nor fail the other needles of the same container append.
test('a needle commit that fails halfway is rolled back and fails that file alone, not its append batch', async (t) => {
  const { store } = await smallStore('replica:3', 6, PACK);
  const files = ['a', 'b', 'c'].map((n) => store.ns.create(1, n, 0o644, 0, 0));
  await store.write(files[1].ino, 0, Buffer.from('old b'));
  const fio = (
    store as unknown as {
      files: {
        appender: { append(r: unknown): Promise<unknown> };
        slices: { get(ino: number): unknown; set(ino: number, s: unknown): void };
      };
    }
  ).files;
  const before = fio.slices.get(files[1].ino);
  const results = await Promise.allSettled(
    files.map((f, i) =>
      fio.appender.append({
        ino: f.ino,
        packClass: 'replica:3',
        data: Buffer.from(`new ${f.ino}`),
        commit: (slice: unknown) => {
          fio.slices.set(f.ino, slice);
          if (i === 1) throw new RangeError('injected: bad value in the commit');
        },
      }),
    ),
  );
  t.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.deepEqual(fio.slices.get(files[1].ino), before, 'the failed commit left its slice as it was');
  t.deepEqual(await store.read(files[1].ino, 0, 100), Buffer.from('old b'));
  t.deepEqual(fio.slices.get(files[0].ino), (results[0] as PromiseFulfilledResult<unknown>).value);
  await store.close();
});

test('an append whose container write fails fails every needle of its batch and commits nothing; the next append works', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const { store } = await smallStore('replica:3', 6, { ...PACK, io });
  const files = ['a', 'b', 'c'].map((n) => store.ns.create(1, n, 0o644, 0, 0));
  await store.write(files[0].ino, 0, Buffer.from('first a')); // the open container and its first chunk
  const fio = (
    store as unknown as {
      files: {
        appender: { append(r: unknown): Promise<unknown> };
        slices: { get(ino: number): unknown; set(ino: number, s: unknown): void };
      };
    }
  ).files;
  const append = (ino: number, text: string): Promise<unknown> =>
    fio.appender.append({
      ino,
      packClass: 'replica:3',
      data: Buffer.from(text),
      commit: (slice: unknown) => fio.slices.set(ino, slice),
    });
  const slicesBefore = files.map((f) => fio.slices.get(f.ino));
  const rowsBefore = containerRows(store);
  io.addFault({ op: ['pwrite', 'open'], path: '.shard', error: 'EIO' }); // every container shard, beyond redundancy
  const results = await Promise.allSettled(files.map((f) => append(f.ino, `new ${f.ino}`)));
  io.clearFaults();
  t.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected', 'rejected'],
  );
  t.deepEqual(
    files.map((f) => fio.slices.get(f.ino)),
    slicesBefore,
    'no slice repointed',
  );
  t.is(containerRows(store)[0].used_bytes, rowsBefore[0].used_bytes, 'the append offset did not move');
  t.deepEqual(await store.read(files[0].ino, 0, 100), Buffer.from('first a'));
  const again = await Promise.allSettled(files.map((f) => append(f.ino, `again ${f.ino}`)));
  t.deepEqual(
    again.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'fulfilled'],
  );
  const internals = store as unknown as { env: ChunkEnv; files: ContainerHost };
  for (const f of files) {
    const needle = await readNeedle(internals.env, internals.files, f.ino, fio.slices.get(f.ino) as Slice);
    t.deepEqual(needle, Buffer.from(`again ${f.ino}`), 'each file reads its own needle');
  }
  await store.reclaimNow();
  const scrub = await store.scrub();
  t.is(scrub.badCount, 0);
  t.deepEqual(scrub.leaks.paths, []);
  await store.close();
});

// An append takes one pack class; the needles of another stay queued in their order for the next.
test('needles of two pack classes queued together: each class its own container, in the order they came', async (t) => {
  const { store } = await smallStore('replica:3', 6, PACK);
  const fio = (store as unknown as { files: { appender: { append(r: unknown): Promise<Slice> } } }).files;
  const classes = ['replica:3', 'replica:2', 'replica:3', 'replica:2', 'replica:3', 'replica:2'];
  const files = classes.map((_, i) => store.ns.create(1, `f${i}`, 0o644, 0, 0));
  const slices = await Promise.all(
    files.map((f, i) =>
      fio.appender.append({
        ino: f.ino,
        packClass: classes[i],
        data: Buffer.from(`needle ${i}`),
        commit: () => undefined,
      }),
    ),
  );
  for (const cls of ['replica:3', 'replica:2']) {
    const mine = slices.filter((_, i) => classes[i] === cls);
    t.is(new Set(mine.map((s) => s.containerId)).size, 1, `${cls}: one container`);
    const offsets = mine.map((s) => s.offsetBytes);
    t.deepEqual(
      offsets,
      [...offsets].sort((a, b) => (a < b ? -1 : 1)),
      `${cls}: offsets in the order appended`,
    );
  }
  t.not(slices[0].containerId, slices[1].containerId, 'each class its own container');
  t.is(containerRows(store).length, 2);
  await store.close();
});
