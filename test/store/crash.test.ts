// Crash at every step of the write protocol (DESIGN §5), through FaultyIo: after
// recovery every block reads the same on all replicas and equals the old or the
// new data, acknowledged data is intact, nothing outside the range changed.
// Also: ENOSPC mid-write returns an error and the old data stays readable.
import test from 'ava';
import { sqliteOnlyTest } from '../helpers/pg-meta';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseBitrotKey } from '../../src/keying';
import { verifyShardBytes } from '../../src/shard';
import { DISK_MARKER_FILE } from '../../store/disk-identity';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { openCrashable, reopenAfterCrash, crashTestLog, metaEndsAtCrash } from './crash-harness';
import { SMALL, prng, randomBytes, smallStore, copyStore } from './helpers';

interface Scenario {
  name: string;
  layout: string;
  offset: number;
  length: number;
  /** Crash points from which the journaled intent is durable: recovery must apply it (DESIGN §5). */
  newFromStep?: number;
  /** The old bytes compress (text), so a compressing layout stores them compressed (DESIGN §10). */
  text?: boolean;
}

const BB = SMALL.bitrotBlockBytes;
const CS = SMALL.chunkSizeBytes;
const SCENARIOS: Scenario[] = [
  // The intent log's commit is two steps (pwrite, fdatasync): durable from the third on, for every
  // layout (EC and transformed chunks log their partial writes there too, DESIGN §5).
  {
    name: 'replica RMW across blocks',
    layout: 'replica:3',
    offset: 3 * BB - 100,
    length: 2 * BB + 300,
    newFromStep: 3,
  },
  {
    name: 'replica write across a chunk boundary (RMW + new tail)',
    layout: 'replica:3',
    offset: CS - 5000,
    length: 10_000,
  },
  {
    name: 'EC partial write (intent, then a new version)',
    layout: 'ec:2+1',
    offset: 70_000,
    length: 9_000,
    newFromStep: 3,
  },
  // Transformed chunks (DESIGN §10): a partial write is an intent, then a new version of the chunk.
  {
    name: 'compressed replica partial write (intent, then a new version)',
    layout: 'replica:3,zstd',
    offset: 3 * BB - 100,
    length: 2 * BB + 300,
    newFromStep: 3,
    text: true,
  },
  {
    name: 'encrypted replica partial write (a sealed log record, then a new version)',
    layout: 'replica:3,aes256gcm',
    offset: 5 * BB + 10,
    length: 300,
    newFromStep: 3,
  },
  {
    name: 'encrypted EC partial write (intent, then a new version)',
    layout: 'ec:2+1,lz4,aes256gcm',
    offset: 70_000,
    length: 9_000,
    newFromStep: 3,
    text: true,
  },
];
const OLD_BYTES = CS + 20_000;

/** Old bytes that compress: numbered lines. */
function textBytes(length: number): Buffer {
  let s = '';
  for (let i = 0; s.length < length; i++) s += `old line ${i}: nothing but words that repeat ${i % 13}\n`;
  return Buffer.from(s.slice(0, length));
}

async function pristine(layout: string, text = false): Promise<{ dir: string; ino: number; old: Buffer }> {
  const { store, dir } = await smallStore(layout, 6);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const old = text ? textBytes(OLD_BYTES) : randomBytes(prng(5), OLD_BYTES);
  await store.write(f.ino, 0, old);
  await store.close();
  return { dir, ino: f.ino, old };
}

/** All replica shard files of each chunk hold identical verified payloads. */
function replicasAgree(dir: string, replica: boolean): boolean {
  const key = parseBitrotKey(fs.readFileSync(path.join(dir, 'bitrot.key')));
  const byChunk = new Map<string, Buffer[]>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name !== DISK_MARKER_FILE) {
        // the disk identity marker is not a shard
        const { header, payload } = verifyShardBytes(fs.readFileSync(p), key);
        const k = `${header.fileId}/${header.chunkIndex}/${header.version}`;
        byChunk.set(k, [...(byChunk.get(k) ?? []), payload]);
      }
    }
  };
  walk(path.join(dir, 'disks'));
  return !replica || [...byChunk.values()].every((ps) => ps.every((p) => p.equals(ps[0])));
}

/**
 * A process kill of a store whose metadata operations commit in groups (DESIGN §5 "Group commit"):
 * groups this long, so that only full commits commit them while a scenario runs.
 */
const LONG_GROUP_MS = 60_000;
const CRASHES = [
  { name: 'process kill', power: false, grouped: false },
  { name: 'power loss', power: true, grouped: false },
  { name: 'process kill, metadata groups', power: false, grouped: true },
];

for (const sc of SCENARIOS)
  for (const { name, power, grouped } of CRASHES) {
    (power || grouped ? sqliteOnlyTest : test)(`crash at every mutation (${name}): ${sc.name}`, async (t) => {
      const { dir, ino, old } = await pristine(sc.layout, sc.text);
      const update = randomBytes(prng(77), sc.length);
      const expectedNew = Buffer.from(
        old.length >= sc.offset + sc.length
          ? old
          : Buffer.concat([old, Buffer.alloc(sc.offset + sc.length - old.length)]),
      );
      update.copy(expectedNew, sc.offset);
      // Count the mutating calls of one uninterrupted write.
      const countIo = new FaultyIo(new NodeIo());
      const counting = await Store.open(copyStore(dir), { io: countIo });
      const base = countIo.mutationCount;
      await counting.write(ino, 0 + sc.offset, update);
      await counting.sync();
      await counting.applyNow(); // the intents' second half: the applier writes them into the shards
      const steps = countIo.mutationCount - base;
      await counting.close();
      t.true(steps > 3, `protocol has steps (${steps})`);

      for (let n = 1; n <= steps + 1; n++) {
        const base = copyStore(dir);
        const { s, io } = await openCrashable(base, power, grouped ? { metaGroupMs: LONG_GROUP_MS } : {});
        io.crashBeforeMutation(io.mutationCount + n, { torn: n % 2 === 0, seed: n });
        let acknowledged = true;
        try {
          await s.write(ino, sc.offset, update);
          await s.sync(); // fsync: acknowledged means durable, under power loss too
        } catch {
          acknowledged = false;
        }
        await s.applyNow(); // a crash may also cut the applier (DESIGN §5: intent durable, shards partly patched)
        // (A crash on the last shard of a quorum write may still be acknowledged: quorum was durable.)
        if (n > steps) t.true(acknowledged, 'the write without a crash is acknowledged');
        await io.whenRestored();
        const { r, dir: copy } = await reopenAfterCrash(s, base, power, grouped);
        t.true(
          replicasAgree(copy, sc.layout.startsWith('replica')),
          `step ${n}: all replicas agree, every shard verifies`,
        );
        const size = r.ns.getattr(ino)!.sizeBytes;
        const got = await r.read(ino, 0, expectedNew.length);
        t.true(size === old.length || size === expectedNew.length, `step ${n}: size old or new`);
        if (acknowledged) t.true(got.equals(expectedNew), `step ${n}: acknowledged write intact`);
        if (sc.newFromStep !== undefined && n >= sc.newFromStep)
          t.true(got.equals(expectedNew), `step ${n}: the durable first replica wins`);
        // Outside the written range: the old bytes (zeros past the old end).
        const oldView = Buffer.concat([old, Buffer.alloc(Math.max(0, got.length - old.length))]);
        t.true(
          got.subarray(0, sc.offset).equals(oldView.subarray(0, sc.offset)),
          `step ${n}: before the range unchanged`,
        );
        const after = sc.offset + sc.length;
        t.true(got.subarray(after).equals(oldView.subarray(after, got.length)), `step ${n}: after the range unchanged`);
        // Inside: each bitrot block old or new.
        for (let b = Math.floor(sc.offset / BB) * BB; b < after; b += BB) {
          const lo = Math.max(b, sc.offset);
          const hi = Math.min(b + BB, after, got.length);
          if (lo >= hi) continue;
          const piece = got.subarray(lo, hi);
          t.true(
            piece.equals(oldView.subarray(lo, hi)) || piece.equals(expectedNew.subarray(lo, hi)),
            `step ${n}: block at ${b} old or new`,
          );
        }
        await r.reclaimNow();
        await r.heal(); // a quorum write cut on its last shard was committed with that shard queued
        const scrub = await r.scrub();
        t.deepEqual(scrub.leaks.paths, [], `step ${n}: no shard left that nothing accounts for`);
        t.is(scrub.badCount, 0, `step ${n}: every live shard verifies`);
        await r.close();
        fs.rmSync(path.dirname(copy), { recursive: true, force: true });
        if (copy !== base) fs.rmSync(path.dirname(base), { recursive: true, force: true });
      }
    });
  }

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`ENOSPC mid-write returns an error, old data intact: ${layout}`, async (t) => {
    const { dir, ino, old } = await pristine(layout);
    const io = new FaultyIo(new NodeIo());
    const s = await Store.open(dir, { io, log: crashTestLog });
    // The filesystem fills up after a few shard files were written.
    io.addFault({ op: 'pwrite', path: '.tmp.', error: 'ENOSPC', skip: 1 });
    const whole = randomBytes(prng(8), CS);
    await t.throwsAsync(s.write(ino, 0, whole), { code: 'ENOSPC' } as never);
    // A partial write inside a chunk is done once its intent is in the log (meta.db, DESIGN §5): the
    // applier cannot write it into the full disks now, keeps it, and the next open applies it.
    const partial = randomBytes(prng(9), 3000);
    await s.write(ino, 10_000, partial);
    partial.copy(old, 10_000);
    await t.throwsAsync(s.write(ino, 2 * CS, whole), { code: 'ENOSPC' } as never); // a new chunk
    t.true(
      (await s.read(ino, 0, old.length)).equals(old),
      'old data, with the logged partial write, readable after ENOSPC',
    );
    t.is(s.ns.getattr(ino)!.sizeBytes, old.length);
    io.clearFaults();
    await s.close();
    const r = await Store.open(dir);
    await r.reclaimNow();
    const scrub = await r.scrub();
    t.deepEqual(scrub.leaks.paths, [], 'the failed writes left nothing the reclaim queue does not account for');
    t.true((await r.read(ino, 0, old.length)).equals(old));
    t.true(replicasAgree(dir, layout.startsWith('replica')));
    await r.close();
  });
}

test('crash at every mutation of a truncate that shortens a chunk and drops others', async (t) => {
  const { dir, ino, old } = await pristine('replica:3');
  const newSize = 100_000; // inside chunk 0: chunk 0 is rewritten shorter, chunk 1 dropped
  const countIo = new FaultyIo(new NodeIo());
  const counting = await Store.open(copyStore(dir), { io: countIo });
  const base = countIo.mutationCount;
  await counting.truncate(ino, newSize);
  const steps = countIo.mutationCount - base;
  await counting.close();
  t.true(steps > 3);
  for (let n = 1; n <= steps + 1; n++) {
    const copy = copyStore(dir);
    const io = new FaultyIo(new NodeIo());
    const s = await Store.open(copy, { io, log: crashTestLog });
    const metaWrites = metaEndsAtCrash(s, io); // a process kill: nothing commits after it
    io.crashBeforeMutation(io.mutationCount + n, { torn: n % 2 === 1, seed: n });
    let acknowledged = true;
    try {
      await s.truncate(ino, newSize);
    } catch {
      acknowledged = false;
    }
    metaWrites();
    await s.close();
    await io.whenRestored();
    const r = await Store.open(copy);
    const size = r.ns.getattr(ino)!.sizeBytes;
    if (acknowledged) t.is(size, newSize, `step ${n}: acknowledged truncate holds`);
    t.true(size === newSize || size === old.length, `step ${n}: size old or new`);
    t.true((await r.read(ino, 0, old.length)).equals(old.subarray(0, size)), `step ${n}: content is the old prefix`);
    // Growing again must show zeros, never the dropped bytes.
    await r.truncate(ino, old.length);
    const regrown = await r.read(ino, 0, old.length);
    t.true(regrown.subarray(0, size).equals(old.subarray(0, size)));
    t.true(regrown.subarray(size).equals(Buffer.alloc(old.length - size)), `step ${n}: no stale bytes past the size`);
    t.true(replicasAgree(copy, true));
    await r.close();
    fs.rmSync(path.dirname(copy), { recursive: true, force: true });
  }
});
