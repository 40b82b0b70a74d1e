// A transaction group's close meets a failing shard (DESIGN §5): a failed flush of one shard file,
// or of the directories of one disk, is a failed shard of that chunk, queued for heal, as a failed
// write is without groups. The write quorum decides: a chunk whose other shards were flushed is
// committed and the file keeps its bytes. A close that cannot keep a chunk leaves the file a
// prefix and reports EIO to that file's next fsync, not to another file's.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

const CS = SMALL.chunkSizeBytes;

async function pristine(layout: string): Promise<{ dir: string; ino: number; other: number; old: Buffer }> {
  const { store, dir } = await smallStore(layout, 6);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const other = store.ns.create(1, 'other', 0o644, 0, 0);
  const old = randomBytes(prng(5), 2 * CS);
  await store.write(f.ino, 0, old);
  await store.close();
  return { dir, ino: f.ino, other: other.ino, old };
}

/** The disk directory (d0..d5) holding shard `shard` of the uncommitted group's chunk `chunk` of ino. */
function diskOfShard(dir: string, ino: number, chunk: number, shard: number): string {
  const disks = path.join(dir, 'disks');
  const file = `${ino.toString(16).padStart(16, '0')}.v`;
  for (const d of fs.readdirSync(disks)) {
    const found = (fs.readdirSync(path.join(disks, d), { recursive: true }) as string[]).some((p) => {
      const parts = p.split(path.sep);
      const n = parts.length;
      return (
        n >= 3 && parts[n - 3].startsWith(file) && parts[n - 2] === `c${chunk}` && parts[n - 1] === `${shard}.shard`
      );
    });
    if (found) return d;
  }
  throw new Error(`no shard ${shard} of chunk ${chunk} of file ${ino} under ${disks}`);
}

const faults = [
  {
    what: "an EIO on the flush of one replica's shard files",
    rule: () => ({
      op: 'fdatasync' as const,
      path: (p: string) => p.endsWith(`${path.sep}0.shard`),
      error: 'EIO' as const,
    }),
  },
  {
    what: "an EIO on the directory flushes of one replica's disk",
    rule: (disk: string) => ({
      op: 'fsyncDir' as const,
      path: `${path.sep}disks${path.sep}${disk}${path.sep}`,
      error: 'EIO' as const,
    }),
  },
];

for (const layout of ['replica:3', 'ec:2+1'])
  for (const { what, rule } of faults)
    test(`${layout}: ${what} at a group's close loses no byte; the shard goes to the heal queue`, async (t) => {
      const { dir, ino, old } = await pristine(layout);
      const io = new FaultyIo(new NodeIo());
      const s = await Store.open(dir, { io });
      const tail = randomBytes(prng(21), 2 * CS - 777);
      const expected = Buffer.concat([old, tail]);
      try {
        s.startGroups();
        await s.write(ino, 2 * CS, tail); // chunks 2 and 3: written, not flushed
        io.addFault(rule(diskOfShard(dir, ino, 2, 0)));
        await s.sync(); // the write quorum holds for every chunk: nothing to report
        io.clearFaults();
        t.is(s.ns.getattr(ino)!.sizeBytes, expected.length, 'the size covers the group');
        t.true((await s.read(ino, 0, expected.length)).equals(expected), 'the bytes read back');
        const queued = s.healQueue(100).filter((e) => e.ino === ino && e.chunkIndex === 2 && e.shardIndex === 0);
        t.is(queued.length, 1, 'the shard whose flush failed is queued for heal');
      } finally {
        await s.close();
      }
      const again = await Store.open(dir);
      try {
        t.is(again.ns.getattr(ino)!.sizeBytes, expected.length, 'the group was committed');
        t.true((await again.read(ino, 0, expected.length)).equals(expected), 'its bytes are there after reopen');
        await again.heal();
        t.is((await again.status()).healQueueLength, 0, 'heal rewrote the failed shard');
        const scrub = await again.scrub();
        t.is(scrub.badCount, 0, 'every live shard verifies');
      } finally {
        await again.close();
      }
    });

test('a chunk a group cannot keep: the file stays a prefix; EIO goes to its own next fsync, once', async (t) => {
  const { dir, ino, other, old } = await pristine('replica:3');
  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { io });
  try {
    s.startGroups();
    const tail = randomBytes(prng(22), 2 * CS);
    const otherBytes = randomBytes(prng(23), CS);
    await s.write(ino, 2 * CS, tail);
    await s.write(other, 0, otherBytes);
    // Every replica of the file's chunk 3 fails its flush: below quorum, so the size stops at its start.
    io.addFault({ op: 'fdatasync', path: (p) => p.includes(`${path.sep}c3${path.sep}`), error: 'EIO' });
    await s.sync(other); // the other file's fsync closes the group: its bytes are durable, it has no error
    io.clearFaults();
    t.is(s.ns.getattr(ino)!.sizeBytes, 3 * CS, 'the size stops before the chunk not kept (prefix rule)');
    t.true((await s.read(ino, 0, 3 * CS)).equals(Buffer.concat([old, tail.subarray(0, CS)])));
    t.true((await s.read(other, 0, CS)).equals(otherBytes));
    const err = await t.throwsAsync(s.sync(ino));
    t.regex(err!.message, /required shards flushed/);
    t.is((err as { code?: string }).code, 'EIO');
    await t.notThrowsAsync(s.sync(ino), 'reported once');
  } finally {
    await s.close();
  }
});

test("a passing fault on two of three replicas at a group's close: they are written again, no byte is lost", async (t) => {
  const { dir, ino, old } = await pristine('replica:3');
  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { io });
  const tail = randomBytes(prng(24), CS);
  const expected = Buffer.concat([old, tail]);
  try {
    s.startGroups();
    await s.write(ino, 2 * CS, tail); // chunk 2: written, not flushed
    // Shard 0's file is lost before the group flushes it (as `chunkfs inject drop` does), and the
    // first flush of shard 1 fails: one replica flushed, below the quorum of 2.
    const d0 = diskOfShard(dir, ino, 2, 0);
    const lost = (fs.readdirSync(path.join(dir, 'disks', d0), { recursive: true }) as string[]).find((p) =>
      p.endsWith(`${path.sep}c2${path.sep}0.shard`),
    )!;
    fs.unlinkSync(path.join(dir, 'disks', d0, lost));
    io.addFault({
      op: 'fdatasync',
      path: (p) => p.endsWith(`${path.sep}c2${path.sep}1.shard`),
      error: 'EIO',
      count: 1,
    });
    await s.sync(ino); // nothing lost: nothing to report
    t.is(s.ns.getattr(ino)!.sizeBytes, expected.length);
    t.true((await s.read(ino, 0, expected.length)).equals(expected));
  } finally {
    await s.close();
  }
  const again = await Store.open(dir);
  try {
    t.true((await again.read(ino, 0, expected.length)).equals(expected), 'committed, bytes there after reopen');
    const scrub = await again.scrub();
    t.is(scrub.badCount, 0, 'both shards were written again: every shard verifies');
  } finally {
    await again.close();
  }
});
