// The healer (store/upkeep/heal.ts) through its own API on a store's chunk environment and a
// FaultyIo: healChunk finds every shard that does not verify and rebuilds it (spec §8.1 write, read
// back); a verify-only pass rebuilds nothing and says when a chunk is past its redundancy; heal()
// drains the queue, drops entries of versions that are gone, and keeps an entry whose rebuild fails
// (backed off for the background healer, tried at once by an explicit heal).
import test from 'ava';
import * as fs from 'node:fs';
import { parseBitrotKey } from '../../../src/keying';
import { verifyShardBytes } from '../../../src/shard';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { FileIo } from '../../../store/file-io';
import { Healer } from '../../../store/upkeep/heal';
import { SMALL } from '../helpers';
import { FileFixture, fileFixture } from './fixture';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import type { PgDb } from '../../../store/meta/postgres/engine';
import type { ChunkRef } from '../../../store/chunks/chunk-ref';
import { PG_BIN_DIR } from '../../helpers/pg-cluster';

function healerOf(f: FileFixture): Healer {
  return new Healer(f.env, (f.store as unknown as { files: FileIo }).files);
}

function verifiesOnDisk(f: FileFixture, path: string): boolean {
  try {
    verifyShardBytes(fs.readFileSync(path), parseBitrotKey(fs.readFileSync(`${f.dir}/bitrot.key`)));
    return true;
  } catch {
    return false;
  }
}

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`${layout}: healChunk rebuilds a dropped and a flipped shard; verify-only finds them and writes nothing`, async (t) => {
    const f = await fileFixture(layout, 2);
    const ref = f.ref(1);
    const dropped = f.env.shards.path(ref, 0);
    const flipped = f.env.shards.path(ref, 2);
    fs.rmSync(dropped);
    const bytes = fs.readFileSync(flipped);
    bytes[bytes.length - 100] ^= 1;
    fs.writeFileSync(flipped, bytes);
    f.env.shards.forgetAll();
    const healer = healerOf(f);
    const look = await healer.healChunk(f.ino, 1, false);
    t.like(look, { examined: ref.diskIds.length, badCount: 2, healed: 0 });
    t.deepEqual(
      look.bad.map((b) => b.shardIndex),
      [0, 2],
    );
    t.false(fs.existsSync(dropped), 'verify-only: nothing written');
    const fixed = await healer.healChunk(f.ino, 1);
    t.like(fixed, { badCount: 2, healed: 2 });
    t.true(verifiesOnDisk(f, dropped) && verifiesOnDisk(f, flipped));
    t.is((await healer.healChunk(f.ino, 1, false)).badCount, 0);
    t.true((await f.store.read(f.ino, 0, f.data.length)).equals(f.data));
    await f.store.close();
  });
}

test('verify-only on a chunk past its redundancy says it is lost, shard by shard', async (t) => {
  const f = await fileFixture('replica:3', 1);
  for (const i of [0, 1, 2]) fs.rmSync(f.env.shards.path(f.ref(0), i));
  f.env.shards.forgetAll();
  const r = await healerOf(f).healChunk(f.ino, 0, false);
  t.is(r.badCount, 3);
  t.is(r.failed.length, 3);
  t.regex(r.failed[0].error, /no replica verifies \(all 3 bad or missing\)/);
  await f.store.close();
});

test('heal(): a rebuild that fails stays queued and backs off; an explicit heal retries it; a gone version is dropped', async (t) => {
  const io = new FaultyIo(new NodeIo());
  const f = await fileFixture('replica:3', 2, io);
  const ref = f.ref(0);
  const target = f.env.shards.path(ref, 1);
  fs.rmSync(target);
  f.env.map.queueHeal(f.ino, 0, ref.version, 1, 'test: dropped');
  f.env.map.queueHeal(f.ino, 1, f.ref(1).version + 7n, 0, 'test: a version that is not live');
  io.addFault({ op: 'open', path: (p) => p.startsWith(target + '.tmp.'), error: 'ENOSPC' });
  const healer = healerOf(f);
  const first = await healer.heal();
  t.like(first, { examined: 2, healed: 0, dropped: 1 });
  t.is(first.failed.length, 1);
  t.regex(first.failed[0].error, /ENOSPC/);
  t.is(f.env.map.healQueueLength(), 1, 'kept queued');
  const background = await healer.heal(Number.MAX_SAFE_INTEGER, { honourBackoff: true });
  t.like(background, { examined: 0, deferred: 1 }, 'backing off');
  io.clearFaults();
  const explicit = await healer.heal();
  t.like(explicit, { examined: 1, healed: 1 });
  t.is(f.env.map.healQueueLength(), 0);
  t.true(verifiesOnDisk(f, target));
  t.true((await f.store.read(f.ino, 0, SMALL.chunkSizeBytes)).equals(f.data.subarray(0, SMALL.chunkSizeBytes)));
  await f.store.close();
});

/** How long another session holds the directory table's lock (a pass that blocked behind it would wait this long). */
const PG_LOCK_S = 2;
const POLL_MS = 20;
const POLLS_MAX = 3000;

/** On PostgreSQL: another process holds dirents' write lock for PG_LOCK_S; resolves once it is granted. */
async function lockDirents(db: PgDb): Promise<{ ended: Promise<unknown> }> {
  const psql = spawn(path.join(PG_BIN_DIR, 'psql'), [
    db.url,
    '-c',
    `BEGIN; LOCK TABLE dirents IN EXCLUSIVE MODE; SELECT pg_sleep(${PG_LOCK_S}); COMMIT;`,
  ]);
  const ended = new Promise((resolve) => psql.on('exit', resolve));
  const held = db.prepare(
    "SELECT count(*) AS n FROM pg_locks WHERE relation = 'dirents'::regclass AND mode = 'ExclusiveLock' AND granted",
  );
  for (let i = 0; i < POLLS_MAX && (held.get() as { n: bigint }).n !== 1n; i++)
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  return { ended };
}

test('heal(): a pass reads and writes the metadata only once the replies to operations answered meanwhile are read (DESIGN §9)', async (t) => {
  const f = await fileFixture('replica:3', 2);
  for (const c of [0, 1]) {
    fs.rmSync(f.env.shards.path(f.ref(c), 1));
    f.env.map.queueHeal(f.ino, c, f.ref(c).version, 1, 'test: dropped');
  }
  f.env.shards.forgetAll();
  const pg = f.env.db.engine === 'postgres' ? (f.env.db as unknown as PgDb) : null;
  let unlocked: Promise<unknown> = Promise.resolve();
  // Each statement the pass sends while replies are unread: it waited for them, holding the thread.
  const blocked: string[] = [];
  let request = false;
  if (pg !== null) {
    await pg.settle();
    unlocked = (await lockDirents(pg)).ended;
    const execPrepared = pg.execPrepared.bind(pg);
    pg.execPrepared = (name, text, values) => {
      if (pg.repliesPending && !request) blocked.push(text);
      return execPrepared(name, text, values);
    };
  }
  // A request served while the pass awaits its first shard read (as a mount serves them): a create,
  // answered once sent (DESIGN §9); the server cannot run it while the lock is held.
  const shards = f.env.shards;
  const readWhole = shards.readWhole.bind(shards);
  let created = false;
  shards.readWhole = (ref: ChunkRef, i: number): Promise<Buffer> => {
    if (!created) {
      created = true;
      request = true;
      f.store.ns.create(1, 'during', 0o644, 0, 0);
      request = false;
    }
    return readWhole(ref, i);
  };
  const r = await healerOf(f).heal();
  t.like(r, { examined: 2, healed: 2 });
  t.true(created);
  t.deepEqual(blocked, [], 'no statement of the pass waited behind the answered create');
  await unlocked;
  t.not(f.store.ns.lookup(1, 'during'), null);
  t.true((await f.store.read(f.ino, 0, f.data.length)).equals(f.data));
  await f.store.close();
});
