// Small files as needles in containers (issue 9; spec §11, DESIGN §5 "Small files").
import test from 'ava';
import * as fs from 'node:fs';
import { Store } from '../../store/store';
import { decodeNeedleHeader } from '../../src/needle';
import { prng, randomBytes, smallStore } from './helpers';
import { IoFile, NodeIo, OpenMode } from '../../store/io/io';

const PACK = { smallFileMaxBytes: 16 * 1024 };

function containerRows(store: Store): Array<Record<string, unknown>> {
  return (store.ns.db.prepare('SELECT * FROM containers ORDER BY id').all() as Array<Record<string, unknown>>).map(
    (r) => ({ ...r }),
  );
}

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
  store.ns.db
    .prepare('UPDATE inodes SET slice_offset = ?, slice_cookie = ? WHERE ino = ?')
    .run(ra.slice_offset, ra.slice_cookie, b.ino);
  await t.throwsAsync(store.read(b.ino, 0, 11), { message: /EIO.*needle/ });
  t.is((await store.status()).counters.needle_mismatches, 3);
  t.true((await store.read(a.ino, 0, 11)).equals(Buffer.from('secret of a')));
  await store.close();
});

/** An Io that records every path a call could change, and the shard files each read touches. */
class SpyIo extends NodeIo {
  changed: string[] = [];
  readPaths: string[] = [];
  override async open(p: string, mode: OpenMode): Promise<IoFile> {
    if (mode !== 'read') this.changed.push(`open-${mode} ${p}`);
    const f = await super.open(p, mode);
    const spy = this.readPaths;
    return new Proxy(f, {
      get(target, prop, recv) {
        const v = Reflect.get(target, prop, recv) as unknown;
        if (typeof v !== 'function') return v;
        if (String(prop).startsWith('pread'))
          return (...args: unknown[]) => {
            spy.push(p);
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        return (v as (...a: unknown[]) => unknown).bind(target);
      },
    });
  }
  override async rename(from: string, to: string): Promise<void> {
    this.changed.push(`rename ${from} ${to}`);
    return super.rename(from, to);
  }
  override async unlink(p: string): Promise<void> {
    this.changed.push(`unlink ${p}`);
    return super.unlink(p);
  }
}

function hex16(n: number): string {
  return n.toString(16).padStart(16, '0');
}

async function fillUntilSealed(
  store: Store,
  rnd: () => number,
  prefix: string,
  sizeMax: number,
): Promise<Array<{ ino: number; data: Buffer }>> {
  const files: Array<{ ino: number; data: Buffer }> = [];
  const sealed = (): number => containerRows(store).filter((r) => r.state === 'sealed').length;
  const before = sealed();
  for (let round = 0; round < 100 && sealed() === before; round++) {
    const batch = [];
    for (let i = 0; i < 8; i++) {
      const a = store.ns.create(1, `${prefix}${round}-${i}`, 0o644, 0, 0);
      batch.push({ ino: a.ino, data: randomBytes(rnd, 100 + Math.floor(rnd() * (sizeMax - 100))) });
    }
    await Promise.all(batch.map((f) => store.write(f.ino, 0, f.data)));
    files.push(...batch);
  }
  return files;
}

test('seal rewrites a full ec:4+2 container once as EC; a needle read touches at most 2 data shards, no parity; sealed shards are never written', async (t) => {
  const { store, dir } = await smallStore('ec:4+2', 6, {
    ...PACK,
    containerCapacityBytes: 96 * 1024,
    smallFileMaxBytes: 8 * 1024,
  });
  const rnd = prng(9);
  const files = await fillUntilSealed(store, rnd, 'f', 8 * 1024);
  const sealed = containerRows(store).find((r) => r.state === 'sealed')!;
  t.truthy(sealed, 'a container was sealed');
  const sid = Number(sealed.id);
  t.is(store.ns.getattr(sid)!.layout, 'ec:4+2', 'sealed: rewritten in the target layout');
  t.is(sealed.sealed_from !== null, true);
  for (const f of files) t.true((await store.read(f.ino, 0, f.data.length)).equals(f.data));
  await store.close();

  const spy = new SpyIo();
  const s2 = await Store.open(dir, { io: spy });
  const inSealed = files.filter(
    (f) =>
      Number(
        (s2.ns.db.prepare('SELECT slice_container AS c FROM inodes WHERE ino = ?').get(f.ino) as { c: bigint }).c,
      ) === sid,
  );
  t.true(inSealed.length > 3);
  let touchedAny = 0;
  for (const f of inSealed) {
    spy.readPaths = [];
    t.true((await s2.read(f.ino, 0, f.data.length)).equals(f.data));
    const shards = new Set(spy.readPaths.filter((p) => p.includes(hex16(sid))));
    t.true(shards.size <= 2, `needle of ${f.data.length} bytes touched ${shards.size} shard files`);
    t.false(
      [...shards].some((p) => /\/(4|5)\.shard$/.test(p)),
      'no parity read while data shards are healthy',
    );
    touchedAny += shards.size;
  }
  t.true(touchedAny > 0, 'the reads went to the sealed container');
  // Overwrite, unlink and more appends: nothing touches the sealed container's shards.
  spy.changed = [];
  for (const f of inSealed.slice(0, 3)) await s2.write(f.ino, 0, Buffer.from('rewritten'));
  const victim = inSealed[3];
  const name = s2.ns.readdir(1).find((e) => e.ino === victim.ino)!.name;
  s2.ns.unlink(1, name);
  await s2.deleteFile(victim.ino);
  await fillUntilSealed(s2, rnd, 'g', 8 * 1024);
  await s2.sync();
  t.true(spy.changed.length > 0, 'the spy sees writes');
  t.deepEqual(
    spy.changed.filter((p) => p.includes(hex16(sid))),
    [],
    'no write touched a sealed container',
  );
  const f0 = inSealed[0].data;
  t.true(
    (await s2.read(inSealed[0].ino, 0, f0.length)).equals(Buffer.concat([Buffer.from('rewritten'), f0.subarray(9)])),
    'overwrite kept the old bytes after it',
  );
  const st = await s2.status();
  t.true(
    st.containers.sealed >= 2 && st.containers.deadBytes > 0 && st.containers.liveBytes > 0,
    JSON.stringify(st.containers),
  );
  await s2.close();
});

test('compaction moves live needles out of a sealed container with dead/capacity >= 0.4 and reclaims it', async (t) => {
  const { store } = await smallStore('replica:3', 6, {
    containerCapacityBytes: 64 * 1024,
    smallFileMaxBytes: 8 * 1024,
  });
  const rnd = prng(10);
  const files = await fillUntilSealed(store, rnd, 'f', 8 * 1024);
  const sid = Number(containerRows(store).find((r) => r.state === 'sealed')!.id);
  const inSealed = files.filter(
    (f) =>
      Number(
        (store.ns.db.prepare('SELECT slice_container AS c FROM inodes WHERE ino = ?').get(f.ino) as { c: bigint }).c,
      ) === sid,
  );
  t.is((await store.compact()).compacted, 0, 'nothing is dead yet');
  // Kill most of its needles: unlink half, overwrite a quarter.
  const kept: Array<{ ino: number; data: Buffer }> = [];
  for (const [i, f] of inSealed.entries()) {
    if (i % 4 === 0) {
      kept.push(f);
    } else if (i % 4 === 1) {
      const d = Buffer.from(`new ${i}`);
      await store.write(f.ino, 0, d);
      await store.truncate(f.ino, d.length);
      kept.push({ ino: f.ino, data: d });
    } else {
      const name = store.ns.readdir(1).find((e) => e.ino === f.ino)!.name;
      store.ns.unlink(1, name);
      await store.deleteFile(f.ino);
    }
  }
  const before = (await store.status()).containers;
  t.true(before.compactionBacklog >= 1);
  const report = await store.compact();
  t.true(report.compacted >= 1, JSON.stringify(report));
  t.true(report.needlesMoved >= inSealed.filter((_, i) => i % 4 === 0).length);
  t.is(store.ns.getattr(sid), null, 'the old container inode is gone');
  t.false(containerRows(store).some((r) => Number(r.id) === sid));
  for (const f of [...kept, ...files.filter((f) => !inSealed.includes(f))])
    t.true((await store.read(f.ino, 0, f.data.length + 1)).equals(f.data));
  await store.reclaimNow();
  const scrub = await store.scrub();
  t.deepEqual(scrub.leaks.paths, []);
  t.is(scrub.badCount, 0);
  await store.close();
});

// Issue 24 item 1: one file's commit failing halfway (here after it repointed its slice) must not
// leave that half-done change, nor fail the other needles of the same container append.
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
