// The intent log's applier (store/chunks/applier.ts, DESIGN §5): durable intents wait in the backlog, reads show
// them at once, the applier writes them into the shards later (replica: patched in place; EC: one
// new version for all the intents of a chunk), the backlog is bounded, and a reopen applies what
// was left; a patch that fails on one replica becomes a new version at the retry, and one that keeps
// failing stays in the log. Opened with { applier: false } so the test decides when the applier runs
// (applyNow, the applier's drain).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseBitrotKey } from '../../../src/keying';
import { verifyShardBytes } from '../../../src/shard';
import { dataStartBytes } from '../../../src/region';
import { BACKLOG_INTENTS_MAX } from '../../../store/chunks/intent-backlog';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import { Store } from '../../../store/store';
import { SMALL, prng, randomBytes, smallStore } from '../helpers';

const CS = SMALL.chunkSizeBytes;
const BB = SMALL.bitrotBlockBytes;

async function heldStore(layout: string): Promise<{ s: Store; dir: string; ino: number; data: Buffer }> {
  const { store, dir } = await smallStore(layout, 6, { smallFileMaxBytes: 0 });
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  const data = randomBytes(prng(3), CS);
  await store.write(ino, 0, data);
  await store.close();
  return { s: await Store.open(dir, { applier: false }), dir, ino, data };
}

function maxVersion(s: Store, ino: number): bigint {
  return (
    s.ns.db.prepare('SELECT max_version AS v FROM chunks WHERE ino = ? AND chunk_index = 0').get(ino) as { v: bigint }
  ).v;
}

test("replica:3: an fsync'd partial write is read back from the log before the shards have it, then patched in place", async (t) => {
  const { s, dir, ino, data } = await heldStore('replica:3');
  const update = randomBytes(prng(4), 3000);
  await s.write(ino, 5000, update);
  await s.sync();
  update.copy(data, 5000);
  t.true((await s.read(ino, 0, CS)).equals(data), 'the file shows the logged bytes at once');
  const key = parseBitrotKey(fs.readFileSync(path.join(dir, 'bitrot.key')));
  const paths = await Promise.all([0, 1, 2].map((i) => s.shardPath(ino, 0, i)));
  for (const p of paths)
    t.false(verifyShardBytes(fs.readFileSync(p!), key).payload.equals(data), 'not yet in the shards');
  t.is((await s.status()).intentBacklog.intents, 1);
  const version = maxVersion(s, ino);
  await s.applyNow();
  for (const p of paths)
    t.true(verifyShardBytes(fs.readFileSync(p!), key).payload.equals(data), `${p}: patched in place`);
  t.is(maxVersion(s, ino), version, 'no new version for a replica patch');
  const st = await s.status();
  t.is(st.intentBacklog.intents, 0);
  t.is(st.openIntents, 0);
  await s.close();
});

test("replica:3: fsync'd writes scattered over one chunk are patched in one go; every replica's hash table covers old and new blocks", async (t) => {
  const { s, dir, ino, data } = await heldStore('replica:3');
  // Runs at blocks 2, 9-10, 40 and the last block: the table range between them is rewritten as read.
  const writes: Array<[number, number]> = [
    [2 * BB + 10, 100],
    [9 * BB + 4000, 500],
    [40 * BB, BB],
    [CS - 300, 300],
  ];
  const random = prng(11);
  for (const [at, n] of writes) {
    const bytes = randomBytes(random, n);
    await s.write(ino, at, bytes);
    bytes.copy(data, at);
  }
  await s.sync();
  t.is((await s.status()).intentBacklog.intents, writes.length);
  await s.applyNow();
  t.is((await s.status()).intentBacklog.intents, 0);
  const key = parseBitrotKey(fs.readFileSync(path.join(dir, 'bitrot.key')));
  for (const i of [0, 1, 2]) {
    const p = (await s.shardPath(ino, 0, i))!;
    // verifyShardBytes checks every block against its entry: a patched entry at the wrong place, or
    // an untouched one between the runs not written back as it was, fails here.
    t.true(
      verifyShardBytes(fs.readFileSync(p), key).payload.equals(data),
      `${p}: every block verifies and holds the new bytes`,
    );
  }
  await s.close();
  const r = await Store.open(dir);
  t.true((await r.read(ino, 0, CS)).equals(data));
  t.is((await r.scrub()).badCount, 0);
  await r.close();
});

test("ec:4+2: 40 small fsync'd writes to one chunk cost one rewrite, and read back exactly before and after", async (t) => {
  const { s, dir, ino, data } = await heldStore('ec:4+2');
  const random = prng(9);
  const version = maxVersion(s, ino);
  for (let i = 0; i < 40; i++) {
    const at = Math.floor(random() * (CS - 200));
    const bytes = randomBytes(random, 1 + Math.floor(random() * 200));
    await s.write(ino, at, bytes);
    bytes.copy(data, at);
  }
  t.true((await s.read(ino, 0, CS)).equals(data), 'before the applier');
  t.is(maxVersion(s, ino), version, 'nothing rewritten by the writes themselves');
  await s.applyNow();
  t.is(maxVersion(s, ino), version + 1n, 'one new version for all 40 intents');
  t.like(
    (await s.status()).intentBacklog,
    { appliedIntents: 40, appliedChunks: 1 },
    'status: 40 intents in one chunk write',
  );
  t.true((await s.read(ino, 0, CS)).equals(data), 'after the applier');
  await s.close();
  const r = await Store.open(dir);
  t.true((await r.read(ino, 0, CS)).equals(data), 'after a reopen');
  await r.reclaimNow();
  t.is((await r.scrub()).badCount, 0);
  await r.close();
});

test('ec:4+2: a rewrite whose read meets a flipped bit in a data shard rebuilds that range from the others', async (t) => {
  // The rewrite reads the chunk straight into its buffer (DESIGN §6 "Read buffers"): the bad shard's
  // unverified bytes there must be overwritten by the rebuilt range, never written into the new version.
  const { s, dir, ino, data } = await heldStore('ec:4+2');
  const random = prng(11);
  for (let i = 0; i < 8; i++) {
    const at = Math.floor(random() * (CS - 100));
    const bytes = randomBytes(random, 1 + Math.floor(random() * 100));
    await s.write(ino, at, bytes);
    bytes.copy(data, at);
  }
  const shards = (fs.readdirSync(path.join(dir, 'disks'), { recursive: true }) as string[]).filter((f) =>
    f.endsWith(`${path.sep}c0${path.sep}0.shard`),
  );
  t.is(shards.length, 1, 'one version of chunk 0: its data shard 0');
  const bad = path.join(dir, 'disks', shards[0]);
  const b = fs.readFileSync(bad);
  b[dataStartBytes(Math.ceil(CS / 4 / BB)) + BB + 9] ^= 0x04; // block 1 of data shard 0
  fs.writeFileSync(bad, b);
  const version = maxVersion(s, ino);
  await s.applyNow();
  t.is(maxVersion(s, ino), version + 1n, 'the intents rewritten as a new version');
  const st = await s.status();
  t.true(st.counters.bitrot_errors >= 1 && st.counters.reconstructions >= 1, 'the bad range was rebuilt');
  t.true((await s.read(ino, 0, CS)).equals(data), 'the new version holds the stored bytes and the intents');
  await s.close();
  const r = await Store.open(dir);
  await r.reclaimNow();
  t.true((await r.read(ino, 0, CS)).equals(data), 'after a reopen');
  t.is((await r.scrub()).badCount, 0, 'the new version verifies; the damaged one is reclaimed');
  await r.close();
});

test('a crash with intents in the log: the reopen applies them before the first read; scrub is clean', async (t) => {
  for (const layout of ['replica:3', 'ec:4+2']) {
    const { s, dir, ino, data } = await heldStore(layout);
    const update = randomBytes(prng(5), 20_000);
    await s.write(ino, 3 * BB - 7, update);
    update.copy(data, 3 * BB - 7);
    // Abandoned without close (a kill): the backlog is only in the log.
    (s as unknown as { db: { close(): void } }).db.close();
    (s as unknown as { lock: { release(): void } }).lock.release();
    const r = await Store.open(dir);
    t.is(r.recoveryReport.intentsResolved, 1, `${layout}: applied at open`);
    t.is((await r.status()).openIntents, 0);
    t.true((await r.read(ino, 0, CS)).equals(data), `${layout}: every logged byte`);
    await r.reclaimNow();
    const scrub = await r.scrub();
    t.is(scrub.badCount, 0);
    t.deepEqual(scrub.leaks.paths, []);
    await r.close();
  }
});

test('the backlog is bounded: a writer waits for room, and goes on once the applier made it', async (t) => {
  const { s, ino, data } = await heldStore('replica:3');
  // One intent per 4 KiB block write: fill to the intent bound (the byte bound is larger here).
  const blocks = CS / BB;
  let n = 0;
  while ((await s.status()).intentBacklog.intents < BACKLOG_INTENTS_MAX) {
    const b = Buffer.alloc(BB, n & 0xff);
    await s.write(ino, (n % blocks) * BB, b);
    b.copy(data, (n % blocks) * BB);
    n++;
  }
  let done = false;
  const last = Buffer.alloc(BB, 0xab);
  const waiting = s.write(ino, 0, last).then(() => {
    done = true;
  });
  last.copy(data, 0);
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.false(done, 'the writer waits at the bound');
  await s.applyNow();
  await waiting;
  t.true(done);
  t.true((await s.read(ino, 0, CS)).equals(data));
  await s.close();
});

/** heldStore's store opened again over a FaultyIo, with one fsync'd partial write pending. */
async function faultyHeld(layout: string): Promise<{ s: Store; io: FaultyIo; dir: string; ino: number; data: Buffer }> {
  const { s: first, dir, ino, data } = await heldStore(layout);
  await first.close();
  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { applier: false, io, log: () => undefined });
  const update = randomBytes(prng(12), 5000);
  await s.write(ino, 3 * BB + 11, update);
  await s.sync();
  update.copy(data, 3 * BB + 11);
  return { s, io, dir, ino, data };
}

test('a replica patch that fails on one replica: the chunk is rewritten as one new version at the retry', async (t) => {
  const { s, io, dir, ino, data } = await faultyHeld('replica:3');
  const version = maxVersion(s, ino);
  // The first patch write to replica 1 fails; replica 0 is patched already: the replicas now differ.
  io.addFault({ op: 'pwrite', path: (p) => p.endsWith('/1.shard'), error: 'EIO', count: 1 });
  await s.applyNow();
  const st = await s.status();
  t.is(st.intentBacklog.intents, 0, 'applied at the retry');
  t.regex(st.intentBacklog.lastError, /replica patch failed on replica\(s\) 1/);
  t.is(maxVersion(s, ino), version + 1n, 'one new version supersedes the replicas that differ');
  t.true((await s.read(ino, 0, CS)).equals(data));
  await s.reclaimNow();
  const scrub = await s.scrub();
  t.is(scrub.badCount, 0);
  t.deepEqual(scrub.leaks.paths, []);
  await s.close();
  const r = await Store.open(dir);
  t.true((await r.read(ino, 0, CS)).equals(data), 'after a reopen');
  await r.close();
});

test('an apply that keeps failing leaves its intent in the log, reported; the next open applies it', async (t) => {
  const { s, io, dir, ino, data } = await faultyHeld('replica:3');
  io.addFault({ op: 'pwrite', path: '.shard', error: 'EIO' }); // every shard write (patches, new versions' temps)
  await s.applyNow(); // resolves: a drain ends when every chunk left failed once more
  const st = await s.status();
  t.is(st.intentBacklog.intents, 1, 'kept');
  t.regex(st.intentBacklog.lastError, new RegExp(`ino ${ino} chunk 0: `), 'the chunk that failed');
  t.true((await s.read(ino, 0, CS)).equals(data), 'the file still shows the logged bytes');
  (s as unknown as { db: { close(): void } }).db.close(); // abandoned (the disks are gone)
  (s as unknown as { lock: { release(): void } }).lock.release();
  const r = await Store.open(dir);
  t.is(r.recoveryReport.intentsResolved, 1, 'applied at open');
  t.true((await r.read(ino, 0, CS)).equals(data));
  t.is((await r.scrub()).badCount, 0);
  await r.close();
});
