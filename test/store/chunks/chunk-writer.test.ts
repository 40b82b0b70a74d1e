// store/chunks/chunk-writer.ts through its own entry, writePieces, on a store's chunk environment
// (a FaultyIo under it): which piece becomes a fresh version and which a journaled intent (DESIGN
// §5), what one call commits (versions named only once their shards are written; the size a prefix
// that never covers a piece that failed), and that a failed piece's reserved version is reclaimed.
import test from 'ava';
import { FileLayout } from '../../../store/chunks/chunk-ref';
import { ChunkEnv } from '../../../store/chunks/chunk-env';
import { ChunkWriter } from '../../../store/chunks/chunk-writer';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { Store } from '../../../store/store';
import { testMetaEngine } from '../../helpers/pg-meta';
import { SMALL, prng, randomBytes, smallStore } from '../helpers';

const CS = SMALL.chunkSizeBytes;
const BB = SMALL.bitrotBlockBytes;

interface Fixture {
  store: Store;
  io: FaultyIo;
  ino: number;
  writer: ChunkWriter;
  env: ChunkEnv;
  fl: FileLayout;
  /** writePieces on the file, then FileIo's cached row of it dropped (as store/file-io.ts does after a write). */
  put(pieces: Piece[], durable?: boolean): Promise<boolean>;
}

type Piece = { c: number; offIn: number; bytes: Uint8Array };

async function fixture(layout: string): Promise<Fixture> {
  const io = new FaultyIo(new NodeIo());
  const { store } = await smallStore(layout, 6, { smallFileMaxBytes: 0, io });
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  const internals = store as unknown as {
    env: ChunkEnv;
    files: { writer: ChunkWriter; layoutOf(i: number): FileLayout; forget(i: number): void };
  };
  const { writer, layoutOf, forget } = internals.files;
  const fl = layoutOf.call(internals.files, ino);
  const put = async (pieces: Piece[], durable = true): Promise<boolean> => {
    try {
      return await writer.writePieces(ino, fl, pieces, null, undefined, null, durable);
    } finally {
      forget.call(internals.files, ino);
    }
  };
  return { store, io, ino, writer, env: internals.env, fl, put };
}

function version(f: Fixture, c: number): bigint {
  return f.env.map.get(f.ino, c)?.version ?? 0n;
}

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`${layout}: new chunks and whole rewrites are fresh versions; a write inside a chunk is a journaled intent`, async (t) => {
    const f = await fixture(layout);
    const data = randomBytes(prng(1), 2 * CS + 1000);
    const pieces = [0, 1, 2].map((c) => ({
      c,
      offIn: 0,
      bytes: data.subarray(c * CS, Math.min((c + 1) * CS, data.length)),
    }));
    await f.put(pieces);
    t.deepEqual(
      [0, 1, 2].map((c) => version(f, c) > 0n),
      [true, true, true],
    );
    t.is(f.store.ns.getattr(f.ino)!.sizeBytes, data.length, 'the size is the end of the pieces');
    const before = [0, 1, 2].map((c) => version(f, c));

    const inside = randomBytes(prng(2), 3000);
    await f.put([{ c: 1, offIn: 5 * BB + 7, bytes: inside }]);
    inside.copy(data, CS + 5 * BB + 7);
    t.is(version(f, 1), before[1], 'inside the chunk: no new version');
    t.true(f.env.backlog.has(f.ino, 1), 'a durable intent waits for the applier');
    const whole = randomBytes(prng(3), CS);
    await f.put([{ c: 0, offIn: 0, bytes: whole }]);
    whole.copy(data, 0);
    t.true(version(f, 0) > before[0], 'a whole rewrite: a new version');
    const past = randomBytes(prng(4), 2000);
    await f.put([{ c: 2, offIn: 500, bytes: past }]);
    past.copy(data, 2 * CS + 500);
    t.true(version(f, 2) > before[2], 'a write past the chunk end: copy-on-write');
    t.false(f.env.backlog.has(f.ino, 2));
    t.true((await f.store.read(f.ino, 0, data.length)).equals(data), 'the file shows every piece');
    await f.store.applyNow();
    t.false(f.env.backlog.has(f.ino, 1), 'applied');
    t.true((await f.store.read(f.ino, 0, data.length)).equals(data));
    t.is((await f.store.scrub()).badCount, 0);
    await f.store.close();
  });
}

test('a piece that cannot be stored: the others commit, the size stops before it, its version is reclaimed', async (t) => {
  const f = await fixture('replica:3');
  const data = randomBytes(prng(5), 3 * CS);
  // Every shard of chunk 1 fails (beyond redundancy); chunks 0 and 2 are written.
  f.io.addFault({ op: 'open', path: (p) => p.includes('/c1/') && p.includes('.tmp.'), error: 'EIO' });
  const pieces = [0, 1, 2].map((c) => ({ c, offIn: 0, bytes: data.subarray(c * CS, (c + 1) * CS) }));
  await t.throwsAsync(f.put(pieces));
  f.io.clearFaults();
  t.true(version(f, 0) > 0n && version(f, 2) > 0n, 'the stored pieces are committed');
  t.is(version(f, 1), 0n, 'the failed piece is not');
  t.is(f.store.ns.getattr(f.ino)!.sizeBytes, CS, 'the size ends where the failed piece starts');
  t.true((await f.store.read(f.ino, 0, CS)).equals(data.subarray(0, CS)));
  const reclaimed = await f.store.reclaimNow();
  t.true(reclaimed.versionsDeleted >= 1, "the failed piece's reserved version was queued for reclaim");
  const scrub = await f.store.scrub();
  t.is(scrub.badCount, 0);
  t.deepEqual(scrub.leaks.paths, [], 'no shard of it left behind');
  await f.store.close();
});

test('the durable flag: an intent no fsync waits for is logged without a flush of its own', async (t) => {
  const f = await fixture('replica:3');
  await f.put([{ c: 0, offIn: 0, bytes: randomBytes(prng(6), CS) }]);
  const syncs = f.io.syncCount;
  await f.put([{ c: 0, offIn: 100, bytes: Buffer.from('abc') }], false);
  t.is(f.io.syncCount, syncs, 'no device flush for it');
  t.true(f.env.backlog.has(f.ino, 0));
  await f.put([{ c: 0, offIn: 200, bytes: Buffer.from('def') }]);
  // SQLite: a durable intent is a record of the intent log file, flushed through the Io; PostgreSQL
  // commits it on the server (no Io flush to count).
  if (testMetaEngine() === 'sqlite') t.true(f.io.syncCount > syncs, 'a durable one flushes');
  t.is(
    (await f.store.read(f.ino, 100, 103)).subarray(0, 3).toString() + (await f.store.read(f.ino, 200, 3)).toString(),
    'abcdef',
  );
  await f.store.close();
});

test('one piece per chunk in a call', async (t) => {
  const f = await fixture('replica:3');
  const b = Buffer.alloc(10);
  await t.throwsAsync(
    f.writer.writePieces(
      f.ino,
      f.fl,
      [
        { c: 0, offIn: 0, bytes: b },
        { c: 0, offIn: 20, bytes: b },
      ],
      null,
    ),
    { message: /one piece per chunk/ },
  );
  await f.store.close();
});
