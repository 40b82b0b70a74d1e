// store/small/compactor.ts: sealing rewrites a full container once in its target layout (a needle
// read then touches at most the data shards that hold it, and sealed shards are never written), and
// compaction moves the live needles out of a sealed container past the dead ratio and reclaims it;
// an open container that is mostly dead is retired first; a compaction whose writes fail (FaultyIo)
// moves nothing and says so (CompactionError: the container, where the appends went, their disks).
// The mount's background rounds take a due container only once its dead bytes held still for a
// round (removals in progress: an rm -rf), at most COMPACT_DEFER_ROUNDS_MAX rounds late, and drop a
// container with no live needle without reading it.
import test from 'ava';
import { Store } from '../../../store/store';
import { FaultyIo } from '../../../store/io/faulty-io';
import { IoFile, NodeIo, OpenMode } from '../../../store/io/io';
import { prng, randomBytes, smallStore } from '../helpers';
import { PACK, containerRows } from './containers';
import { CompactReport, emptyCompactReport } from '../../../store/small/compactor';
import { COMPACT_DEFER_ROUNDS_MAX } from '../../../store/small/settled-containers';

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

// An open container that is mostly dead is retired, sealed and compacted without waiting to fill:
// before, its dead needles held their space until it reached capacity.
const RETIRE_FILE_BYTES = 8 * 1024;
const RETIRE_FILES = 100;
const RETIRE_DELETED = 70;

test('a mostly dead open container is retired and compacted by a compaction round; the live files read back', async (t) => {
  const { store } = await smallStore('replica:3', 6, {
    smallFileMaxBytes: RETIRE_FILE_BYTES,
    containerCapacityBytes: 1 << 20,
  });
  t.teardown(() => store.close());
  const inos: number[] = [];
  for (let i = 0; i < RETIRE_FILES; i++) {
    const a = store.ns.create(1, `f${i}`, 0o644, 0, 0);
    await store.write(a.ino, 0, Buffer.alloc(RETIRE_FILE_BYTES, i));
    inos.push(a.ino);
  }
  for (let i = 0; i < RETIRE_DELETED; i++) {
    store.ns.unlink(1, `f${i}`);
    await store.deleteFile(inos[i]);
  }
  const before = (await store.status()).containers;
  t.is(before.open, 1);
  t.true(before.deadBytes >= RETIRE_DELETED * RETIRE_FILE_BYTES, `dead ${before.deadBytes}`);
  t.is(before.compactionBacklog, 1);
  const r = await store.compact();
  t.is(r.compacted, 1, JSON.stringify(r));
  t.is(r.needlesMoved, RETIRE_FILES - RETIRE_DELETED);
  const after = (await store.status()).containers;
  t.is(after.deadBytes, 0);
  t.is(after.liveBytes, (RETIRE_FILES - RETIRE_DELETED) * RETIRE_FILE_BYTES);
  for (let i = RETIRE_DELETED; i < RETIRE_FILES; i++)
    t.true((await store.read(inos[i], 0, RETIRE_FILE_BYTES)).equals(Buffer.alloc(RETIRE_FILE_BYTES, i)), `file ${i}`);
  const reclaimed = await store.reclaimNow();
  t.true(reclaimed.versionsDeleted > 0, "the old container's chunks are reclaimed");
});

test('a compaction whose writes fail moves nothing, reports it (container, disks), keeps the container; every file reads; the next round does it', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const { store } = await smallStore('replica:3', 6, {
    smallFileMaxBytes: RETIRE_FILE_BYTES,
    containerCapacityBytes: 1 << 20,
    io,
  });
  t.teardown(() => store.close());
  const inos: number[] = [];
  for (let i = 0; i < RETIRE_FILES; i++) {
    const a = store.ns.create(1, `f${i}`, 0o644, 0, 0);
    await store.write(a.ino, 0, Buffer.alloc(RETIRE_FILE_BYTES, i));
    inos.push(a.ino);
  }
  for (let i = 0; i < RETIRE_DELETED; i++) {
    store.ns.unlink(1, `f${i}`);
    await store.deleteFile(inos[i]);
  }
  const rowsBefore = containerRows(store);
  io.addFault({ op: 'pwrite', path: '.shard', error: 'EIO' });
  const failed = await store.compact();
  io.clearFaults();
  t.like(failed, { compacted: 0, needlesMoved: 0 }, 'each needle whose append failed stays where it is');
  // Reported, not a round that did nothing: the container kept, where the appends went and their disks.
  const live = RETIRE_FILES - RETIRE_DELETED;
  t.is(failed.needlesFailed, live);
  t.is(failed.errors.length, 1, failed.errors.join('\n'));
  const id = Number(rowsBefore[0].id);
  t.regex(
    failed.errors[0],
    new RegExp(
      `^compaction of container ${id}: ${live} of ${live} live needles could not be appended to container \\d+ ` +
        '\\(EIO: only 0 of 2 required shards written to disks \\d+, \\d+, \\d+ .*\\); they stay readable in ' +
        `container ${id}, kept for a later round`,
    ),
  );
  t.is((await store.status()).containers.compactionBacklog, 1, 'still due');
  t.true(
    containerRows(store).some((r) => r.id === rowsBefore[0].id),
    'the container is kept: slices still name it',
  );
  for (let i = RETIRE_DELETED; i < RETIRE_FILES; i++)
    t.true((await store.read(inos[i], 0, RETIRE_FILE_BYTES)).equals(Buffer.alloc(RETIRE_FILE_BYTES, i)), `file ${i}`);
  const again = await store.compact();
  t.is(again.compacted, 1, JSON.stringify(again));
  t.is((await store.status()).containers.deadBytes, 0);
});

const BACKGROUND =
  "the mount's compactor logs its rounds' errors (one line naming container and disks, a minute apart) and counts them";
test(BACKGROUND, async (t) => {
  const { store: made, dir } = await smallStore('replica:3', 6, {
    smallFileMaxBytes: RETIRE_FILE_BYTES,
    containerCapacityBytes: 1 << 20,
  });
  await made.close();
  const io = new FaultyIo(new NodeIo());
  const lines: string[] = [];
  const store = await Store.open(dir, { io, log: (line) => lines.push(line) });
  t.teardown(() => store.close());
  const inos: number[] = [];
  for (let i = 0; i < RETIRE_FILES; i++) {
    const a = store.ns.create(1, `f${i}`, 0o644, 0, 0);
    await store.write(a.ino, 0, Buffer.alloc(RETIRE_FILE_BYTES, i));
    inos.push(a.ino);
  }
  for (let i = 0; i < RETIRE_DELETED; i++) {
    store.ns.unlink(1, `f${i}`);
    await store.deleteFile(inos[i]);
  }
  io.addFault({ op: 'pwrite', path: '.shard', error: 'EIO' });
  store.startBackground(); // its compactor runs a round a second
  for (let waited = 0; (await store.status()).compaction.errors < 2; waited++) {
    t.true(waited < 6000, 'two background rounds fail');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const { lastError } = (await store.status()).compaction;
  t.regex(lastError, /^compaction of container \d+: .* to container \d+ \(EIO: .* disks \d+, \d+, \d+/);
  const logged = lines.filter((l) => l.startsWith('compactor: '));
  t.is(logged.length, 1, `rate-limited: ${logged.join('\n')}`);
  t.regex(logged[0], /^compactor: compaction of container \d+: .*disks \d+, \d+, \d+.*check those disks/);
  io.clearFaults();
});

/** One round of the mount's background compactor (its timer's round), without the timer. */
function backgroundRound(store: Store): Promise<CompactReport> {
  return store['compactor'].runOnce(emptyCompactReport(), true);
}

async function retireSetup(): Promise<{ store: Store; dir: string; inos: number[] }> {
  const { store: made, dir } = await smallStore('replica:3', 6, {
    smallFileMaxBytes: RETIRE_FILE_BYTES,
    containerCapacityBytes: 1 << 20,
  });
  const inos: number[] = [];
  for (let i = 0; i < RETIRE_FILES; i++) {
    const a = made.ns.create(1, `f${i}`, 0o644, 0, 0);
    await made.write(a.ino, 0, Buffer.alloc(RETIRE_FILE_BYTES, i));
    inos.push(a.ino);
  }
  return { store: made, dir, inos };
}

async function remove(store: Store, inos: number[], i: number): Promise<void> {
  store.ns.unlink(1, `f${i}`);
  await store.deleteFile(inos[i]);
}

test('a background round leaves a container still gaining dead bytes; it compacts it once they held still for a round', async (t) => {
  const { store, inos } = await retireSetup();
  t.teardown(() => store.close());
  for (let i = 0; i < RETIRE_DELETED; i++) await remove(store, inos, i);
  t.is((await store.status()).containers.compactionBacklog, 1);
  const first = await backgroundRound(store);
  t.is(first.needlesMoved, 0, `first seen due: it waits a round ${JSON.stringify(first)}`);
  await remove(store, inos, RETIRE_DELETED); // removals go on: the next round waits again
  const second = await backgroundRound(store);
  t.is(second.needlesMoved, 0, JSON.stringify(second));
  t.is((await store.status()).containers.open, 1, 'not retired either');
  const third = await backgroundRound(store);
  t.is(third.compacted, 1, `the dead bytes held still for a round ${JSON.stringify(third)}`);
  t.is(third.needlesMoved, RETIRE_FILES - RETIRE_DELETED - 1);
  t.is((await store.status()).containers.deadBytes, 0);
  for (let i = 0; i < RETIRE_FILES; i++) {
    if (i <= RETIRE_DELETED) t.is(store.ns.lookup(1, `f${i}`), null, `f${i} stays removed`);
    else t.true((await store.read(inos[i], 0, RETIRE_FILE_BYTES)).equals(Buffer.alloc(RETIRE_FILE_BYTES, i)));
  }
});

test(`removals in every round defer a container at most ${COMPACT_DEFER_ROUNDS_MAX} rounds`, async (t) => {
  const { store, inos } = await retireSetup();
  t.teardown(() => store.close());
  for (let i = 0; i < RETIRE_DELETED; i++) await remove(store, inos, i);
  let deferred = 0;
  for (let i = RETIRE_DELETED; ; i++) {
    const r = await backgroundRound(store);
    if (r.compacted > 0) break;
    deferred++;
    t.true(deferred <= COMPACT_DEFER_ROUNDS_MAX, `deferred ${deferred} rounds`);
    await remove(store, inos, i);
  }
  t.is(deferred, COMPACT_DEFER_ROUNDS_MAX);
  const gone = RETIRE_DELETED + COMPACT_DEFER_ROUNDS_MAX;
  for (let i = gone; i < RETIRE_FILES; i++)
    t.true((await store.read(inos[i], 0, RETIRE_FILE_BYTES)).equals(Buffer.alloc(RETIRE_FILE_BYTES, i)), `f${i}`);
});

test('a container whose every needle is dead is dropped without reading it', async (t) => {
  const { store: filled, dir, inos } = await retireSetup();
  for (let i = 0; i < RETIRE_FILES; i++) await remove(filled, inos, i);
  await filled.close();
  const io = new SpyIo(); // a fresh open: nothing of the container cached
  const store = await Store.open(dir, { io });
  t.teardown(() => store.close());
  t.is((await backgroundRound(store)).compacted, 0, 'first seen due: it waits a round');
  const r = await backgroundRound(store);
  t.is(r.compacted, 1, JSON.stringify(r));
  t.is(r.needlesMoved, 0);
  t.deepEqual(
    io.readPaths.filter((p) => p.endsWith('.shard')),
    [],
    'no shard of the container read',
  );
  const st = (await store.status()).containers;
  t.is(st.deadBytes, 0);
  t.is(st.liveBytes, 0);
});
