// Crash at every mutation step of a compaction (spec §11.5, DESIGN §5 "Small files"): live needles of a sealed
// container past the dead ratio are copied into the open container, their slices repointed in one
// transaction, then the old container is reclaimed. Process kill and power loss (FaultyIo puts
// meta.db-wal back to its last full commit). After recovery every fsync'd small file reads its bytes
// (from the old container or the new one, never another file's), no container is left half made,
// every shard and every needle verifies, nothing leaks, and a second compaction finishes the job.
// A third mode runs the reclaimer after the compaction and keeps its shard deletes through the power
// loss (DESIGN §5 free last): the old container must still be there if the commit that retired it was lost.
import test from 'ava';
import { sqliteOnlyTest } from '../helpers/pg-meta';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { openCrashable, reopenAfterCrash } from './crash-harness';
import { SMALL, prng, randomBytes, tmpDir, copyStore } from './helpers';

const CAPACITY_BYTES = 48_000;
const FILE_BYTES_MAX = 4000;

interface Pristine {
  dir: string;
  live: Array<{ ino: number; data: Buffer }>;
  sealedId: number;
}

function sealedIds(s: Store): number[] {
  return (
    s.ns.db.prepare(`SELECT id FROM containers WHERE state = 'sealed' ORDER BY id`).all() as Array<{ id: bigint }>
  ).map((r) => Number(r.id));
}

/** A sealed container with about 2/3 of its needles dead (unlinked or rewritten), everything fsync'd. */
async function pristine(layout: string): Promise<Pristine> {
  const dir = path.join(tmpDir(), 'store');
  const store = await Store.create(dir, {
    disks: 6,
    layout,
    ...SMALL,
    smallFileMaxBytes: 16 * 1024,
    containerCapacityBytes: CAPACITY_BYTES,
  });
  const rnd = prng(21);
  const files: Array<{ ino: number; data: Buffer; name: string }> = [];
  for (let i = 0; i < 200 && sealedIds(store).length === 0; i++) {
    const name = `f${i}`;
    const f = store.ns.create(1, name, 0o644, 0, 0);
    const data = randomBytes(rnd, 200 + Math.floor(rnd() * (FILE_BYTES_MAX - 200)));
    await store.write(f.ino, 0, data);
    files.push({ ino: f.ino, data, name });
    await store.compact(); // seals the container once it is full
  }
  const [sealedId] = sealedIds(store);
  if (sealedId === undefined) throw new Error('pristine: no container was sealed');
  const live: Array<{ ino: number; data: Buffer }> = [];
  for (const [i, f] of files.entries()) {
    if (i % 3 === 0) {
      live.push(f);
    } else if (i % 3 === 1) {
      const d = Buffer.from(`rewritten ${i}`);
      await store.write(f.ino, 0, d);
      await store.truncate(f.ino, d.length);
      live.push({ ino: f.ino, data: d });
    } else {
      store.ns.unlink(1, f.name);
      await store.deleteFile(f.ino);
    }
  }
  await store.sync();
  await store.close();
  return { dir, live, sealedId };
}

/** reclaim: the reclaimer runs before the sync (it may delete the old container's shards). */
async function compactAndSync(s: Store, reclaim: boolean): Promise<void> {
  await s.compact();
  if (reclaim) await s.reclaimNow();
  await s.sync();
}

/**
 * kill: a process kill. power: a power loss. power, deletes durable: a power loss that keeps every
 * shard-file delete while meta.db-wal goes back to its last full commit, with the reclaimer run
 * after the compaction (DESIGN §5 free last: the old container's shards stay until the
 * commit that retired it is durable).
 */
const MODES = [
  { name: 'process kill', power: false, reclaim: false },
  { name: 'power loss', power: true, reclaim: false },
  { name: 'power loss, reclaimer run, shard deletes durable', power: true, reclaim: true },
];

for (const layout of ['replica:3', 'ec:4+2'])
  for (const mode of MODES) {
    const { power, reclaim } = mode;
    if (reclaim && layout !== 'replica:3') continue; // the reclaimer's order does not depend on the layout
    (power ? sqliteOnlyTest : test)(`crash at every mutation of a compaction (${mode.name}): ${layout}`, async (t) => {
      const p = await pristine(layout);
      const countIo = new FaultyIo(new NodeIo());
      const counting = await Store.open(copyStore(p.dir), { io: countIo });
      const base = countIo.mutationCount;
      const report = await counting.compact();
      if (reclaim) await counting.reclaimNow();
      await counting.sync();
      const steps = countIo.mutationCount - base;
      await counting.close();
      t.is(report.compacted, 1, `the sealed container is compacted (${JSON.stringify(report)})`);
      t.true(steps > 3, `protocol has steps (${steps})`);

      for (let n = 1; n <= steps + 1; n++) {
        const baseDir = copyStore(p.dir);
        const { s, io } = await openCrashable(baseDir, power, { unlinksDurable: reclaim });
        io.crashBeforeMutation(io.mutationCount + n, { torn: n % 2 === 0, seed: n });
        let acknowledged = true;
        try {
          await compactAndSync(s, reclaim);
        } catch {
          acknowledged = false;
        }
        if (n > steps) t.true(acknowledged, 'the compaction without a crash completes');
        await io.whenRestored();
        const { r, dir: copy } = await reopenAfterCrash(s, baseDir, power);
        for (const f of p.live)
          t.true((await r.read(f.ino, 0, f.data.length + 1)).equals(f.data), `step ${n}: small file ${f.ino} intact`);
        t.is(
          (r.ns.db.prepare(`SELECT count(*) AS n FROM containers WHERE state = 'sealing'`).get() as { n: bigint }).n,
          0n,
          `step ${n}: no half-made seal`,
        );
        // The store goes on: the compaction is finished by the next one, then everything verifies.
        await r.compact();
        t.false(sealedIds(r).includes(p.sealedId), `step ${n}: the old container is gone after the next compaction`);
        for (const f of p.live)
          t.true(
            (await r.read(f.ino, 0, f.data.length + 1)).equals(f.data),
            `step ${n}: small file ${f.ino} intact after compacting again`,
          );
        await r.reclaimNow();
        await r.heal();
        const scrub = await r.scrub();
        t.deepEqual(scrub.leaks.paths, [], `step ${n}: no shard left that nothing accounts for`);
        t.is(scrub.badCount, 0, `step ${n}: every live shard verifies`);
        t.deepEqual(scrub.needles.bad, [], `step ${n}: every needle checks`);
        const slices = Number(
          (r.ns.db.prepare('SELECT count(*) AS n FROM inodes WHERE slice_container IS NOT NULL').get() as { n: bigint })
            .n,
        );
        t.true(
          slices > 0 && scrub.needles.checked === slices,
          `step ${n}: every slice's needle checked (${scrub.needles.checked} of ${slices})`,
        );
        await r.close();
        fs.rmSync(path.dirname(copy), { recursive: true, force: true });
        if (copy !== baseDir) fs.rmSync(path.dirname(baseDir), { recursive: true, force: true });
      }
    });
  }
