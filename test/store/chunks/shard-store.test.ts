// store/chunks/shard-store.ts on its own: a ShardStore over three disk directories and a FaultyIo,
// no Store. Whole-shard writes (spec §8.1: nothing under the final name until it is whole, temps
// of a cut-off write removed with the chunk), verified reads with the header cross-checked against
// the inode Layout (spec §1, §9), in-place block patches (spec §8.2), and the gates: an
// unavailable disk or a vanished identity marker is never touched, and a write gate that throws
// (a lost lease, DESIGN §9) stops every change.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BitrotError } from '../../../src/errors';
import { loadHighway } from '../../../src/highway';
import { parseBitrotKey } from '../../../src/keying';
import { parseLayout } from '../../../src/layout';
import { dataStartBytes } from '../../../src/region';
import { verifyShardBytes } from '../../../src/shard';
import { ChunkRef } from '../../../store/chunks/chunk-ref';
import { HeaderMismatchError, ShardStore } from '../../../store/chunks/shard-store';
import { DISK_MARKER_FILE, DiskUnavailableError } from '../../../store/disk-identity';
import { FaultyIo } from '../../../store/io/faulty-io';
import { Io, IoFile, NodeIo, OpenMode } from '../../../store/io/io';
import { allocHuge } from '../../../src/huge-buffer';
import { prng, randomBytes, tmpDir } from '../helpers';

const BB = 4096;
const DISKS = [0, 1, 2];

interface Fixture {
  shards: ShardStore;
  io: FaultyIo;
  roots: Map<number, string>;
  offline: Map<number, string>;
  key: Buffer;
}

/** NodeIo that counts its opens by mode, and may refuse O_DIRECT as tmpfs does (EINVAL). */
class OpenCounter extends NodeIo {
  readonly modes: OpenMode[] = [];
  refuseDirect = false;
  override open(p: string, mode: OpenMode): Promise<IoFile> {
    this.modes.push(mode);
    if (mode === 'create-direct' && this.refuseDirect)
      return Promise.reject(Object.assign(new Error(`EINVAL: open '${p}'`), { code: 'EINVAL' }));
    return super.open(p, mode);
  }
}

async function fixture(opens: Io = new NodeIo()): Promise<Fixture> {
  await loadHighway();
  const base = tmpDir('chunkfs-shard-store-');
  const roots = new Map(DISKS.map((d) => [d, path.join(base, `d${d}`)]));
  for (const root of roots.values()) {
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, DISK_MARKER_FILE), '{}'); // writeShard checks only that it is there
  }
  const offline = new Map<number, string>();
  const gate = {
    unavailable: (d: number) => offline.get(d),
    setUnavailable: (d: number, reason: string) => void offline.set(d, reason),
  };
  const key = randomBytes(prng(7), 32);
  const io = new FaultyIo(opens);
  return { shards: new ShardStore(io, parseBitrotKey(key), roots, gate), io, roots, offline, key };
}

function replicaRef(lengthBytes: number, version = 1n): ChunkRef {
  return {
    ino: 40,
    fileId: 40n,
    chunkIndex: 2,
    version,
    logicalLenBytes: lengthBytes,
    stored: null,
    diskIds: DISKS,
    fl: {
      layout: parseLayout('replica:3'),
      chunkSizeBytes: 256 * 1024,
      bitrotBlockBytes: BB,
      ecBlockSizeBytes: 64 * 1024,
      placementSeed: 11n,
      clusterMapEpoch: 1,
    },
  };
}

/** Every file under the disks (the identity markers left out). */
function filesUnder(roots: Map<number, string>): string[] {
  return [...roots.values()].flatMap((root) =>
    (fs.readdirSync(root, { recursive: true, encoding: 'utf8' }) as string[])
      .map((f) => path.join(root, f))
      .filter((f) => fs.statSync(f).isFile() && !f.endsWith(DISK_MARKER_FILE)),
  );
}

test('a whole-shard write decodes to its payload, verifies, and reads back any range verified', async (t) => {
  const f = await fixture();
  const payload = randomBytes(prng(1), 3 * BB + 100);
  const ref = replicaRef(payload.length);
  for (const i of [0, 1, 2]) await f.shards.writeShard(ref, i, payload);
  t.deepEqual(filesUnder(f.roots).sort(), [0, 1, 2].map((i) => f.shards.path(ref, i)).sort(), 'no temp file left');
  for (const i of [0, 1, 2]) {
    const bytes = fs.readFileSync(f.shards.path(ref, i));
    t.true(verifyShardBytes(bytes, parseBitrotKey(f.key)).payload.equals(payload), `shard ${i}`);
    t.true((await f.shards.readWhole(ref, i)).equals(payload));
  }
  for (const [at, n] of [
    [0, 1],
    [BB - 3, 7],
    [2 * BB, BB + 100],
    [0, payload.length],
  ]) {
    t.true((await f.shards.readVerified(ref, 1, at, n)).equals(payload.subarray(at, at + n)), `range ${at}+${n}`);
    const into = Buffer.alloc(n + 5, 0xee);
    await f.shards.readVerifiedInto(ref, 2, at, n, into, 5);
    t.true(into.subarray(5).equals(payload.subarray(at, at + n)), `range ${at}+${n} into a buffer`);
  }
});

test('zero pages in runs of 64 KiB or more stay holes, past the page cache and through it', async (t) => {
  const f = await fixture();
  const huge = allocHuge(2 << 20);
  const aligned = huge.subarray(0, 256 * BB); // 1 MiB, page-aligned: written past the page cache
  aligned.fill(0);
  randomBytes(prng(5), 4 * BB).copy(aligned, 100 * BB); // data amid zeros: holes before and after it
  const loose = Buffer.from(aligned); // the same bytes where O_DIRECT cannot take them
  const ref = replicaRef(aligned.length);
  const ref2 = replicaRef(loose.length, 2n);
  await f.shards.writeShard(ref, 0, aligned);
  await f.shards.writeShard(ref2, 1, loose);
  t.is(f.shards.directCount, 1, 'one direct write, one through the page cache');
  for (const [r, i, want] of [
    [ref, 0, aligned],
    [ref2, 1, loose],
  ] as const) {
    const p = f.shards.path(r, i);
    const st = fs.statSync(p);
    t.is(st.size, dataStartBytes(aligned.length / BB) + aligned.length, 'the file spans the whole payload');
    // head (header + table) and 4 data pages + the last page; a file system may round up its extents
    t.true(
      st.blocks * 512 <= dataStartBytes(aligned.length / BB) + 16 * BB,
      `shard ${i}: ${st.blocks * 512} bytes allocated`,
    );
    t.true(verifyShardBytes(fs.readFileSync(p), parseBitrotKey(f.key)).payload.equals(want), `shard ${i} verifies`);
    t.true((await f.shards.readWhole(r, i)).equals(want));
  }
});

test('aligned payloads are written past the page cache (O_DIRECT), others through it; both read back verified', async (t) => {
  const opens = new OpenCounter();
  const f = await fixture(opens);
  const huge = allocHuge(2 << 20);
  randomBytes(prng(3), 64 * BB).copy(huge, 4 * BB);
  const aligned = huge.subarray(4 * BB, 68 * BB); // in allocHuge's memory, at a page offset, whole pages
  const ref = replicaRef(aligned.length);
  for (const i of [0, 1, 2]) await f.shards.writeShard(ref, i, aligned);
  t.is(f.shards.directCount, 3, 'three direct writes');
  const loose = randomBytes(prng(4), 64 * BB); // a Buffer whose address JavaScript cannot know
  const ref2 = replicaRef(loose.length, 2n);
  await f.shards.writeShard(ref2, 0, loose);
  const short = aligned.subarray(0, 3 * BB + 100); // not whole pages
  await f.shards.writeShard(replicaRef(short.length, 3n), 1, short);
  t.is(f.shards.directCount, 3, 'the others through the page cache');
  t.deepEqual(
    opens.modes.filter((m) => m.startsWith('create')),
    ['create-direct', 'create-direct', 'create-direct', 'create-exclusive', 'create-exclusive'],
  );
  for (const i of [0, 1, 2]) t.true((await f.shards.readWhole(ref, i)).equals(aligned), `direct shard ${i}`);
  t.true((await f.shards.readWhole(ref2, 0)).equals(loose));
  t.true(verifyShardBytes(fs.readFileSync(f.shards.path(ref, 0)), parseBitrotKey(f.key)).payload.equals(aligned));
});

test('a disk that refuses O_DIRECT (EINVAL, as tmpfs) is written through the page cache from then on', async (t) => {
  const opens = new OpenCounter();
  opens.refuseDirect = true;
  const f = await fixture(opens);
  const huge = allocHuge(2 << 20);
  randomBytes(prng(5), 16 * BB).copy(huge);
  const payload = huge.subarray(0, 16 * BB);
  const ref = replicaRef(payload.length);
  await f.shards.writeShard(ref, 0, payload);
  await f.shards.writeShard(replicaRef(payload.length, 2n), 0, payload);
  t.is(f.shards.directCount, 0);
  t.deepEqual(
    opens.modes.filter((m) => m.startsWith('create')),
    ['create-direct', 'create-exclusive', 'create-exclusive'],
    'refused once, never asked again',
  );
  t.true((await f.shards.readWhole(ref, 0)).equals(payload));
  t.deepEqual(
    filesUnder(f.roots).filter((p) => p.includes('.tmp.')),
    [],
    'no temp file left',
  );
});

test('a write cut off before its flush leaves nothing under the final name; deleteChunk removes its temp file', async (t) => {
  const f = await fixture();
  const payload = randomBytes(prng(2), 2 * BB);
  const ref = replicaRef(payload.length);
  f.io.addFault({ op: 'fdatasync', path: '.tmp.', error: 'EIO', count: 1 });
  await t.throwsAsync(f.shards.writeShard(ref, 0, payload), { message: /EIO/ });
  t.false(fs.existsSync(f.shards.path(ref, 0)), 'no shard under the final name');
  const left = filesUnder(f.roots);
  t.is(left.length, 1, 'the temp file of the cut-off write');
  t.regex(left[0], /\.tmp\./);
  t.is(await f.shards.deleteChunk(ref, 3), 0);
  t.deepEqual(filesUnder(f.roots), [], 'the temp file went with the chunk');
  t.false(fs.existsSync(path.dirname(path.dirname(f.shards.path(ref, 0)))), 'and its empty directories');
});

test('a header that disagrees with the inode Layout is a HeaderMismatchError naming the field, never a read', async (t) => {
  const f = await fixture();
  const payload = randomBytes(prng(3), BB);
  const ref = replicaRef(payload.length);
  await f.shards.writeShard(ref, 0, payload);
  const moved = { ...ref, fl: { ...ref.fl, placementSeed: 12n } }; // same path, other placement
  const err = await t.throwsAsync(f.shards.readVerified(moved, 0, 0, 10), { instanceOf: HeaderMismatchError });
  t.regex(err!.message, /placementSeed/);
  await t.throwsAsync(f.shards.readWhole(moved, 0), { instanceOf: HeaderMismatchError });
  t.true((await f.shards.readVerified(ref, 0, 0, 10)).equals(payload.subarray(0, 10)), 'the right layout reads');
});

test('a flipped bit fails the read of its block only; once the block is right again it reads', async (t) => {
  const f = await fixture();
  const payload = randomBytes(prng(4), 4 * BB);
  const ref = replicaRef(payload.length);
  await f.shards.writeShard(ref, 0, payload);
  t.true((await f.shards.readVerified(ref, 0, 0, BB)).equals(payload.subarray(0, BB)), 'header and table cached');
  const p = f.shards.path(ref, 0);
  const at = dataStartBytes(4) + 3 * BB + 5; // in the last block's data
  const flip = (): void => {
    const fd = fs.openSync(p, 'r+');
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, at);
    b[0] ^= 1;
    fs.writeSync(fd, b, 0, 1, at);
    fs.closeSync(fd);
  };
  flip();
  await t.throwsAsync(f.shards.readVerified(ref, 0, 3 * BB, 10), { instanceOf: BitrotError });
  await t.throwsAsync(f.shards.readWhole(ref, 0), { instanceOf: BitrotError });
  t.true((await f.shards.readVerified(ref, 0, BB, BB)).equals(payload.subarray(BB, 2 * BB)), 'other blocks read');
  flip();
  t.true((await f.shards.readVerified(ref, 0, 3 * BB, 10)).equals(payload.subarray(3 * BB, 3 * BB + 10)));
});

test('patchBlocks writes several runs and their hash entries in place: the shard verifies with the new bytes', async (t) => {
  const f = await fixture();
  const payload = randomBytes(prng(5), 10 * BB + 123);
  const ref = replicaRef(payload.length);
  await f.shards.writeShard(ref, 0, payload);
  t.true((await f.shards.readVerified(ref, 0, 0, 10)).equals(payload.subarray(0, 10)), 'cached before the patch');
  const runs = [
    { firstBlock: 1, span: randomBytes(prng(6), 2 * BB) },
    { firstBlock: 7, span: randomBytes(prng(7), BB) },
    { firstBlock: 10, span: randomBytes(prng(8), 123) }, // the short last block
  ];
  const want = Buffer.from(payload);
  for (const r of runs) Buffer.from(r.span).copy(want, r.firstBlock * BB);
  const version = ref.version;
  await f.shards.patchBlocks(ref, 0, runs);
  t.true(verifyShardBytes(fs.readFileSync(f.shards.path(ref, 0)), parseBitrotKey(f.key)).payload.equals(want));
  t.true((await f.shards.readVerified(ref, 0, 0, want.length)).equals(want), 'no stale cached table');
  t.is(ref.version, version, 'in place: the same version');
  await t.throwsAsync(f.shards.patchBlocks(ref, 0, [{ firstBlock: 10, span: Buffer.alloc(BB) }]), {
    message: /inside shard_data_len/,
  });
});

test('an unavailable disk, a vanished marker or a closed write gate: nothing is written or removed', async (t) => {
  const f = await fixture();
  const payload = randomBytes(prng(9), BB);
  const ref = replicaRef(payload.length);
  await f.shards.writeShard(ref, 0, payload);
  f.offline.set(1, 'disk 1 is someone else');
  await t.throwsAsync(f.shards.writeShard(ref, 1, payload), { instanceOf: DiskUnavailableError });
  await t.throwsAsync(f.shards.readVerified(ref, 1, 0, 1), { instanceOf: DiskUnavailableError });
  fs.rmSync(path.join(f.roots.get(2)!, DISK_MARKER_FILE));
  await t.throwsAsync(f.shards.writeShard(ref, 2, payload), { instanceOf: DiskUnavailableError });
  t.regex(f.offline.get(2) ?? '', /identity marker/, 'the disk is marked unavailable');
  t.deepEqual(fs.readdirSync(f.roots.get(2)!), [], 'no directory made on the bare mount point');
  f.shards.writeGate = () => {
    throw new Error('lease lost');
  };
  await t.throwsAsync(f.shards.deleteShard(ref, 0), { message: 'lease lost' });
  await t.throwsAsync(f.shards.patchBlocks(ref, 0, [{ firstBlock: 0, span: Buffer.alloc(BB) }]), {
    message: 'lease lost',
  });
  t.true((await f.shards.readWhole(ref, 0)).equals(payload), 'the shard is untouched');
});

test('deleteChunk is best effort per shard: a failing disk is counted, the others are removed', async (t) => {
  const f = await fixture();
  const payload = randomBytes(prng(10), BB);
  const ref = replicaRef(payload.length);
  for (const i of [0, 1, 2]) await f.shards.writeShard(ref, i, payload);
  f.io.addFault({ op: 'unlink', path: f.roots.get(1)!, error: 'EIO' });
  t.is(await f.shards.deleteChunk(ref, 3), 1);
  t.deepEqual(filesUnder(f.roots), [f.shards.path(ref, 1)]);
  f.io.clearFaults();
  t.is(await f.shards.deleteChunk(ref, 3), 0, 'a second pass finishes (missing shards are fine)');
  t.deepEqual(filesUnder(f.roots), []);
});

test('prepareDirs makes each shard chunk directory ahead of its write (none on a disk whose marker vanished); a write whose prepared directory went makes it again', async (t) => {
  const f = await fixture();
  const payload = randomBytes(prng(13), BB);
  const ref = replicaRef(payload.length);
  fs.rmSync(path.join(f.roots.get(2)!, DISK_MARKER_FILE));
  await f.shards.prepareDirs(ref); // never rejects: disk 2's write reports its marker
  for (const i of [0, 1]) t.true(fs.statSync(path.dirname(f.shards.path(ref, i))).isDirectory(), `shard ${i}'s dir`);
  t.deepEqual(fs.readdirSync(f.roots.get(2)!), [], 'no directory made on the bare mount point');
  t.deepEqual(filesUnder(f.roots), [], 'directories only: no shard file');
  fs.rmdirSync(path.dirname(f.shards.path(ref, 1))); // removed from outside after it was prepared
  for (const i of [0, 1]) await f.shards.writeShard(ref, i, payload);
  await t.throwsAsync(f.shards.writeShard(ref, 2, payload), { instanceOf: DiskUnavailableError });
  for (const i of [0, 1]) t.true((await f.shards.readWhole(ref, i)).equals(payload), `shard ${i} reads back`);
});
