// fsync'd partial writes of EC and transformed chunks through the intent log file (DESIGN §5 "The
// log is a file of its own", §10 "Log records"), as for raw replica chunks: one record per write
// holding exactly the bytes written (sealed when the layout encrypts), one log commit per fsync, no
// intent row and no read of the stored chunk on the fsync's path; reads show the bytes at once; a
// kill leaves them in the log and the reopen folds them into a new version before it answers. A
// plain record over an encrypting layout is refused at open; intent rows an older build left in an
// EC store still replay once; a crash at every step of a rewrite that a new write meets (that write
// is logged again over the new version) loses no acknowledged byte.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LogRecordError } from '../../src/log-record-cipher';
import { RECORD_FLAG_SEALED, encodeRecord } from '../../src/intent-record';
import { INTENT_LOG_FILE } from '../../store/chunks/intent-log';
import { INTENT_SPAN_BYTES_MAX } from '../../store/chunks/intent-span';
import { PlainIntentError } from '../../store/chunks/plain-intent';
import { ROOT_INO } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { shardsWholeAfterHeal } from '../helpers/shards-whole';
import { openStoreMetaOf, sqliteOnlyTest } from '../helpers/pg-meta';
import { SMALL, copyStore, prng, randomBytes, smallStore } from './helpers';
import { FaultyIo, type IoOp } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import type { SqliteDb } from '../../store/meta/sqlite/engine';
import { crashTestLog, metaEndsAtCrash, reopenAfterCrash } from './crash-harness';
import { HeldFaultyIo } from './held-renames';
import { logFileRecords } from './log-file-records';

const CS = SMALL.chunkSizeBytes;
const BB = SMALL.bitrotBlockBytes;
const CHUNKS = 3;
const WRITES = 8;
const WRITE_BYTES = 4096;
const MARKER = Buffer.from('MARKER-ec-transformed-log-');

/** Abandon a store as a process kill does: nothing more reaches its files. */
function kill(s: Store): void {
  (s as unknown as { db: { close(): void } }).db.close();
  (s as unknown as { lock: { release(): void } }).lock.release();
}

/** Bytes that compress (numbered lines), so a compressing layout stores its chunks transformed. */
function textBytes(length: number): Buffer {
  let s = '';
  for (let i = 0; s.length < length; i++) s += `line ${i}: words that repeat and compress ${i % 17}\n`;
  return Buffer.from(s.slice(0, length));
}

/** A closed store with one file of CHUNKS whole chunks (compressible, so transforms apply). */
async function storeWithFile(layout: string): Promise<{ dir: string; ino: number; data: Buffer }> {
  const { store, dir } = await smallStore(layout, 6, { smallFileMaxBytes: 0 });
  const ino = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0).ino;
  const data = textBytes(CHUNKS * CS);
  await store.write(ino, 0, data);
  await store.close();
  return { dir, ino, data };
}

/** WRITES fsync'd 4 KiB writes inside the file's chunks (none aligned to a block), each starting with MARKER. */
async function fsyncedWrites(s: Store, ino: number, data: Buffer): Promise<void> {
  const random = prng(7);
  for (let i = 0; i < WRITES; i++) {
    const at = Math.floor(random() * (CHUNKS * CS - 2 * WRITE_BYTES)) + 1;
    const bytes = Buffer.concat([MARKER, randomBytes(prng(50 + i), WRITE_BYTES - MARKER.length)]);
    await s.write(ino, at, bytes);
    await s.sync();
    bytes.copy(data, at);
  }
}

const LAYOUTS = ['ec:4+2', 'ec:2+1,zstd', 'replica:3,zstd', 'replica:3,aes256gcm', 'ec:2+1,lz4,aes256gcm'];
for (const layout of LAYOUTS) {
  const encrypts = layout.includes('aes256gcm');
  const title = `${layout}: fsync'd partial writes are log file records of exactly the bytes written; a kill keeps them`;
  sqliteOnlyTest(title, async (t) => {
    const { dir, ino, data } = await storeWithFile(layout);
    const s = await Store.open(dir, { applier: false });
    const transformed = s.ns.db.prepare('SELECT count(*) AS n FROM chunks WHERE stored_len IS NOT NULL').get() as {
      n: bigint;
    };
    t.is(Number(transformed.n), layout.startsWith('ec:4+2') ? 0 : CHUNKS, 'the chunks are stored transformed');
    const before = (await s.status()).intentBacklog;
    await fsyncedWrites(s, ino, data);
    const after = (await s.status()).intentBacklog;
    t.is(after.logFlushes - before.logFlushes, WRITES, 'one log commit (one device flush) per fsync');
    t.is(Number((s.ns.db.prepare('SELECT count(*) AS n FROM intents').get() as { n: bigint }).n), 0, 'no intent row');
    t.is(after.intents, WRITES);
    t.is(after.bytes, WRITES * WRITE_BYTES, 'the backlog holds exactly the bytes written');
    const { bytes, records } = logFileRecords(dir);
    t.is(records.length, WRITES);
    for (const { record: r } of records) {
      t.is(r.lengthBytes, WRITE_BYTES, 'exactly the bytes written');
      t.is((r.flags & RECORD_FLAG_SEALED) !== 0, encrypts, encrypts ? 'sealed' : 'plain');
    }
    t.is(bytes.indexOf(MARKER) === -1, encrypts, encrypts ? 'no plaintext in the log' : 'the bytes as written');
    t.true((await s.read(ino, 0, data.length)).equals(data), 'reads show them at once');
    kill(s);
    const r = await Store.open(dir);
    t.deepEqual(r.recoveryReport.errors, []);
    t.is(r.recoveryReport.intentsResolved, WRITES, 'replayed before the open returned');
    t.is((await r.status()).openIntents, 0);
    t.true((await r.read(ino, 0, data.length)).equals(data), "every fsync'd byte");
    t.is((await r.scrub()).badCount, 0);
    await r.close();
    const again = await Store.open(dir);
    t.is(again.recoveryReport.intentsResolved, 0, 'replayed once');
    t.true((await again.read(ino, 0, data.length)).equals(data));
    await again.close();
  });
}

/** The log file with its first record replaced by rec (same place: a record of another length ends the chain there). */
function replaceFirstRecord(
  dir: string,
  make: (r: ReturnType<typeof logFileRecords>['records'][0]['record']) => Buffer,
): Buffer {
  const file = path.join(dir, INTENT_LOG_FILE);
  const saved = fs.readFileSync(file);
  const { records } = logFileRecords(dir);
  const first = records[0];
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, make(first.record), 0, undefined, first.offsetBytes);
  fs.closeSync(fd);
  return saved;
}

const PLAIN = 'a plain log record over an encrypting layout is refused at open, naming it; so is a sealed one altered';
sqliteOnlyTest(PLAIN, async (t) => {
  const { dir, ino, data } = await storeWithFile('ec:2+1,lz4,aes256gcm');
  const s = await Store.open(dir, { applier: false });
  const bytes = Buffer.alloc(300, 0x5a);
  await s.write(ino, 2 * BB + 7, bytes);
  await s.sync();
  bytes.copy(data, 2 * BB + 7);
  const version = (
    s.ns.db.prepare('SELECT version FROM chunks WHERE ino = ? AND chunk_index = 0').get(ino) as {
      version: bigint;
    }
  ).version;
  kill(s);
  // The same record with plain bytes in it (its CRC made right): written by no build.
  const saved = replaceFirstRecord(dir, (r) =>
    encodeRecord({ ...r, flags: r.flags & ~RECORD_FLAG_SEALED, payload: Buffer.alloc(r.lengthBytes, 0x66) }),
  );
  const site = `\\(file ${ino}, chunk 0, version ${version}\\)`;
  await t.throwsAsync(Store.open(dir), {
    instanceOf: PlainIntentError,
    message: new RegExp(`^intent log record 1 holds plain bytes for a chunk whose layout encrypts.*${site}$`),
  });
  fs.writeFileSync(path.join(dir, INTENT_LOG_FILE), saved);
  replaceFirstRecord(dir, (r) => {
    const payload = Buffer.from(r.payload);
    payload[20] ^= 1;
    return encodeRecord({ ...r, payload });
  });
  await t.throwsAsync(Store.open(dir), { instanceOf: LogRecordError, message: /intent log record 1.*tag mismatch/ });
  fs.writeFileSync(path.join(dir, INTENT_LOG_FILE), saved);
  const r = await Store.open(dir);
  t.true((await r.read(ino, 0, data.length)).equals(data), 'the record as written replays');
  await r.close();
});

sqliteOnlyTest(
  'an EC store with intent rows an older build left: they replay once at open, then they are gone',
  async (t) => {
    const { dir, ino, data } = await storeWithFile('ec:4+2');
    const meta = openStoreMetaOf(dir);
    const version = (
      meta.prepare('SELECT version FROM chunks WHERE ino = ? AND chunk_index = 1').get(ino) as {
        version: bigint;
      }
    ).version;
    // A row as the older path wrote it: its whole block span with the new bytes in, plain (no encryption).
    const span = Buffer.from(data.subarray(CS + 3 * BB, CS + 5 * BB));
    span.fill(0x77, 100, 5000);
    meta
      .prepare(
        'INSERT INTO intents(ino, chunk_index, version, first_block, last_block, created_ns, span, span_sealed) ' +
          'VALUES (?, 1, ?, 3, 4, 0, ?, 0)',
      )
      .run(ino, version, span);
    meta.close();
    span.copy(data, CS + 3 * BB);
    const s = await Store.open(dir);
    t.is(s.recoveryReport.intentsResolved, 1);
    t.is(Number((s.ns.db.prepare('SELECT count(*) AS n FROM intents').get() as { n: bigint }).n), 0, 'gone');
    t.true((await s.read(ino, 0, data.length)).equals(data));
    await s.close();
    const again = await Store.open(dir);
    t.is(again.recoveryReport.intentsResolved, 0, 'once');
    t.true((await again.read(ino, 0, data.length)).equals(data));
    await again.close();
  },
);

/**
 * One write logged, its chunk rewritten by the applier, a second write logged while the rewrite's
 * shards wait for their rename (it is logged again over the new version before that version's
 * commit, store/chunks/intent-rewrite.ts), then the rewrite goes on; n: crash before the Io's nth
 * mutation from the first write on (0: none). Returns which writes were acknowledged.
 */
async function rewriteMeetsWrite(
  dir: string,
  ino: number,
  writes: Array<{ at: number; bytes: Buffer }>,
  power: boolean,
  n: number,
  grouped: boolean,
): Promise<{ s: Store; io: FaultyIo; acked: boolean[]; steps: number; metaWrites: () => void }> {
  const io = new HeldFaultyIo();
  const held = io.hold;
  io.restoreExternal = power;
  const s = await Store.open(dir, { io, log: crashTestLog, applier: false });
  if (grouped) s.startGroups(); // the rewrite joins a transaction group (DESIGN §5)
  if (power) (s as unknown as { db: SqliteDb }).db.native.pragma('wal_autocheckpoint = 0');
  const metaWrites = metaEndsAtCrash(s, io);
  const base = io.mutationCount;
  if (n > 0) io.crashBeforeMutation(base + n, { torn: n % 2 === 0, seed: n });
  const acked = [false, false];
  const fsynced = async (i: number): Promise<void> => {
    await s.write(ino, writes[i].at, writes[i].bytes);
    await s.sync();
    acked[i] = true;
  };
  await fsynced(0).catch(() => undefined);
  const version = (
    s.ns.db.prepare('SELECT version FROM chunks WHERE ino = ? AND chunk_index = 0').get(ino) as {
      version: bigint;
    }
  ).version;
  held.arm(version + 1n);
  const applying = s.applyNow().catch(() => undefined);
  await Promise.race([held.reached, applying]);
  await fsynced(1).catch(() => undefined);
  held.letGo();
  await applying;
  await s.applyNow().catch(() => undefined); // the second write's own rewrite
  return { s, io, acked, steps: io.mutationCount - base, metaWrites };
}

for (const grouped of [false, true])
  for (const power of [false, true]) {
    const how = `${power ? 'power loss' : 'process kill'}${grouped ? ', in a transaction group' : ''}`;
    const title = `ec:2+1, crash at every mutation (${how}) of a rewrite that a logged write meets: every acked byte`;
    sqliteOnlyTest(title, async (t) => {
      const { dir, ino, data } = await storeWithFile('ec:2+1');
      const writes = [
        { at: 3 * BB + 5, bytes: Buffer.alloc(700, 0x31) },
        { at: 9 * BB + 11, bytes: Buffer.alloc(900, 0x32) },
      ];
      const dry = await rewriteMeetsWrite(copyStore(dir), ino, writes, power, 0, grouped);
      t.deepEqual(dry.acked, [true, true]);
      const steps = dry.steps;
      await dry.s.close();
      t.true(steps > 6, `the sequence has steps (${steps})`);
      for (let n = 1; n <= steps; n++) {
        const base = copyStore(dir);
        const run = await rewriteMeetsWrite(base, ino, writes, power, n, grouped);
        await run.io.whenRestored();
        run.metaWrites();
        const { r, dir: copy } = await reopenAfterCrash(run.s, base, power);
        const got = await r.read(ino, 0, data.length);
        writes.forEach((w, i) => {
          const now = got.subarray(w.at, w.at + w.bytes.length);
          if (run.acked[i]) t.true(now.equals(w.bytes), `step ${n}: write ${i} acknowledged, there`);
          else
            t.true(
              now.equals(w.bytes) || now.equals(data.subarray(w.at, w.at + w.bytes.length)),
              `step ${n}: old or new`,
            );
        });
        const outside = Buffer.from(got);
        for (const w of writes) data.copy(outside, w.at, w.at, w.at + w.bytes.length);
        t.true(outside.equals(data), `step ${n}: nothing else changed`);
        await r.reclaimNow();
        const scrub = await r.scrub();
        t.deepEqual(scrub.leaks.paths, [], `step ${n}: no shard left that nothing accounts for`);
        t.is(scrub.badCount, 0, `step ${n}: every live shard verifies`);
        await r.close();
        fs.rmSync(path.dirname(copy), { recursive: true, force: true });
        if (copy !== base) fs.rmSync(path.dirname(base), { recursive: true, force: true });
      }
    });
  }

/**
 * A transaction group holding EC or transformed rewrites (DESIGN §5): fsync'd partial writes to
 * chunks 0 and 1 (log records), a whole chunk appended (in the open group), then the applier's
 * rewrites of chunks 0 and 1 join that group and one close flushes and commits all three, and the
 * reclaimer frees the replaced versions; n: crash before the Io's nth mutation (0: none).
 */
async function groupWithRewrites(
  dir: string,
  ino: number,
  writes: Array<{ at: number; bytes: Buffer }>,
  tail: Buffer,
  power: boolean,
  n: number,
): Promise<{ s: Store; io: FaultyIo; acked: boolean[]; steps: number; metaWrites: () => void }> {
  const io = new FaultyIo(new NodeIo());
  io.restoreExternal = power;
  const s = await Store.open(dir, { io, log: crashTestLog, applier: false });
  if (power) (s as unknown as { db: SqliteDb }).db.native.pragma('wal_autocheckpoint = 0');
  s.startGroups();
  const metaWrites = metaEndsAtCrash(s, io);
  const base = io.mutationCount;
  if (n > 0) io.crashBeforeMutation(base + n, { torn: n % 2 === 0, seed: n });
  const acked = writes.map(() => false);
  try {
    for (const [i, w] of writes.entries()) {
      await s.write(ino, w.at, w.bytes);
      await s.sync(ino);
      acked[i] = true;
    }
    await s.write(ino, CHUNKS * CS, tail); // a whole chunk: into the open group
    await s.applyNow(); // the rewrites join it; the drain closes it once both wait there
    await s.sync();
    acked.push(true);
    await s.reclaimNow();
  } catch {
    // the crash: what was acknowledged before it is checked after the reopen
  }
  if (acked.length === writes.length) acked.push(false);
  return { s, io, acked, steps: io.mutationCount - base, metaWrites };
}

for (const layout of ['ec:2+1', 'replica:3,zstd'])
  for (const power of [false, true]) {
    const how = power ? 'power loss' : 'process kill';
    const title = `${layout}: crash at every step (${how}) of a group close holding rewrites: every acked byte, a prefix`;
    sqliteOnlyTest(title, async (t) => {
      const { dir, ino, data } = await storeWithFile(layout);
      const writes = [
        { at: 3 * BB + 5, bytes: Buffer.alloc(700, 0x41) },
        { at: CS + 9 * BB + 11, bytes: Buffer.alloc(900, 0x42) },
        { at: 2 * BB + 1, bytes: Buffer.alloc(300, 0x43) },
      ];
      const tail = textBytes(CS).reverse();
      const dry = await groupWithRewrites(copyStore(dir), ino, writes, tail, power, 0);
      t.deepEqual(dry.acked, [true, true, true, true]);
      const status = await dry.s.status();
      t.is(status.openIntents, 0, 'folded');
      const steps = dry.steps;
      await dry.s.close();
      t.true(steps > 20, `the sequence has steps (${steps})`);
      const fresh = Buffer.from(data);
      for (const w of writes) w.bytes.copy(fresh, w.at);
      for (let n = 1; n <= steps; n++) {
        const base = copyStore(dir);
        const run = await groupWithRewrites(base, ino, writes, tail, power, n);
        await run.io.whenRestored();
        run.metaWrites();
        const { r, dir: copy } = await reopenAfterCrash(run.s, base, power);
        try {
          const size = r.ns.getattr(ino)!.sizeBytes;
          t.true(size === data.length || size === data.length + CS, `step ${n}: old size or new (${size})`);
          if (run.acked[writes.length]) t.is(size, data.length + CS, `step ${n}: the acked append is there`);
          const got = await r.read(ino, 0, size);
          writes.forEach((w, i) => {
            const now = got.subarray(w.at, w.at + w.bytes.length);
            const was = data.subarray(w.at, w.at + w.bytes.length);
            if (run.acked[i]) t.true(now.equals(w.bytes), `step ${n}: write ${i} acknowledged, there`);
            else t.true(now.equals(w.bytes) || now.equals(was), `step ${n}: write ${i} old or new`);
          });
          const outside = Buffer.from(got.subarray(0, data.length));
          for (const w of writes) data.copy(outside, w.at, w.at, w.at + w.bytes.length);
          t.true(outside.equals(data), `step ${n}: nothing else changed`);
          if (size > data.length) t.true(got.subarray(data.length).equals(tail), `step ${n}: the appended chunk whole`);
          await r.reclaimNow();
          await shardsWholeAfterHeal(t, r, n);
        } finally {
          await r.close();
        }
        fs.rmSync(path.dirname(copy), { recursive: true, force: true });
        if (copy !== base) fs.rmSync(path.dirname(base), { recursive: true, force: true });
      }
    });
  }

/** Records the shard files fdatasync'd (a rewrite's own flushes, or a group's). */
class ShardSyncsIo extends FaultyIo {
  readonly synced: string[] = [];
  constructor() {
    super(new NodeIo());
  }
  override async fileGate(op: IoOp, p: string): Promise<void> {
    if (op === 'fdatasync' && p.includes(`${path.sep}.chunks${path.sep}`)) this.synced.push(p);
    return super.fileGate(op, p);
  }
}

const SPAN_WRITE_BYTES = 200 * 1024;
/** Past the applier's rewrite mark (3/4 of the backlog's 32 MiB): it rewrites the chunks on its own. */
const SPAN_WRITES = 130;
const GROUPED =
  "the applier's EC rewrites wait in the open transaction group: no flush of their own, its close commits them";
sqliteOnlyTest(GROUPED, async (t) => {
  const { dir, ino, data } = await storeWithFile('ec:2+1');
  const io = new ShardSyncsIo();
  const s = await Store.open(dir, { io, applier: false }); // applied below, once every write is logged
  s.startGroups(); // no timer: the group closes at sync
  const versions = (): bigint[] =>
    (
      s.ns.db.prepare('SELECT version FROM chunks WHERE ino = ? ORDER BY chunk_index').all(ino) as Array<{
        version: bigint;
      }>
    ).map((r) => r.version);
  const old = versions();
  const random = prng(3);
  for (let i = 0; i < SPAN_WRITES; i++) {
    const at = Math.floor(random() * (CHUNKS * CS - SPAN_WRITE_BYTES));
    const bytes = randomBytes(prng(300 + i), SPAN_WRITE_BYTES);
    await s.write(ino, at, bytes);
    await s.sync(ino);
    bytes.copy(data, at);
  }
  const internals = s as unknown as {
    env: { groups: { pendingChunks(ino: number): number[] } };
    applier: { held: boolean; kick(): void };
  };
  const groups = internals.env.groups;
  internals.applier.held = false; // as a live mount's: past its mark it rewrites on its own, no drain
  internals.applier.kick();
  for (
    let waited = 0;
    groups.pendingChunks(ino).length < CHUNKS && versions().every((v, c) => v === old[c]);
    waited++
  ) {
    t.true(waited < 6000, 'the applier rewrites the chunks past its mark');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.deepEqual(groups.pendingChunks(ino).sort(), [0, 1, 2], 'every rewrite waits in the open group');
  t.deepEqual(versions(), old, 'none committed on its own');
  t.deepEqual(io.synced, [], 'no shard file flushed before the group closes');
  t.true((await s.read(ino, 0, data.length)).equals(data), 'reads show the new versions meanwhile');
  const closed = (await s.status()).groupsClosed;
  // A whole write of a rewritten chunk: the group holding the rewrite closes first (its one commit).
  const whole = randomBytes(prng(4), CS);
  await s.write(ino, 2 * CS, whole);
  whole.copy(data, 2 * CS);
  t.is((await s.status()).groupsClosed, closed + 1, 'one close');
  const now = versions();
  t.true(
    now.every((v, c) => v > old[c]),
    'its one commit made them live',
  );
  t.is(io.synced.length, CHUNKS * 3, "the close flushed every rewrite's shards, once");
  await s.sync();
  t.true(versions()[2] > now[2], 'then the whole write');
  await s.applyNow();
  t.is((await s.status()).openIntents, 0, 'the records left the log');
  await s.close();
  const r = await Store.open(dir);
  t.is(r.recoveryReport.intentsResolved, 0, 'nothing to replay');
  t.true((await r.read(ino, 0, data.length)).equals(data));
  t.is((await r.scrub()).badCount, 0);
  await r.close();
});

const DROPPED =
  "a group that leaves the applier's rewrites out (flushes fail): the old intents come back, a write meanwhile goes over the live version";
sqliteOnlyTest(DROPPED, async (t) => {
  const { dir, ino, data } = await storeWithFile('ec:2+1');
  const io = new ShardSyncsIo();
  const s = await Store.open(dir, { io, applier: false, log: crashTestLog });
  s.startGroups();
  const random = prng(5);
  for (let i = 0; i < SPAN_WRITES; i++) {
    const at = Math.floor(random() * (CHUNKS * CS - SPAN_WRITE_BYTES));
    const bytes = randomBytes(prng(500 + i), SPAN_WRITE_BYTES);
    await s.write(ino, at, bytes);
    bytes.copy(data, at);
  }
  const internals = s as unknown as {
    env: { groups: { pendingChunks(ino: number): number[] } };
    applier: { held: boolean; kick(): void };
  };
  internals.applier.held = false;
  internals.applier.kick();
  for (let waited = 0; internals.env.groups.pendingChunks(ino).length < CHUNKS; waited++) {
    t.true(waited < 6000, 'the rewrites wait in the open group');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  internals.applier.held = true; // no retry meanwhile
  io.addFault({ op: 'fdatasync', path: `${path.sep}.chunks${path.sep}`, error: 'EIO' }); // every shard flush fails
  // A write of a rewritten chunk closes the group first: it drops the rewrites, the write goes over the live version.
  const late = Buffer.alloc(3000, 0x5a);
  await s.write(ino, CS + 100, late);
  late.copy(data, CS + 100);
  io.clearFaults();
  t.true((await s.read(ino, 0, data.length)).equals(data), 'reads show every write: the old intents are back');
  await s.close(); // applies them
  const r = await Store.open(dir);
  t.true((await r.read(ino, 0, data.length)).equals(data), "every fsync'd byte");
  t.is((await r.scrub()).badCount, 0);
  await r.close();
});

sqliteOnlyTest('a sealed record of the largest journaled write (1 MiB) fits the log; the log goes on', async (t) => {
  const chunkSizeBytes = 4 << 20;
  const { store, dir } = await smallStore('replica:3,aes256gcm', 6, { smallFileMaxBytes: 0, chunkSizeBytes });
  const ino = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0).ino;
  const data = randomBytes(prng(9), chunkSizeBytes);
  await store.write(ino, 0, data);
  await store.close();
  const s = await Store.open(dir, { applier: false });
  const big = randomBytes(prng(10), INTENT_SPAN_BYTES_MAX); // block-aligned: its span is exactly the bound
  await s.write(ino, 16 * BB, big);
  await s.sync();
  big.copy(data, 16 * BB);
  const small = Buffer.alloc(100, 0x44);
  await s.write(ino, 3 * BB, small);
  await s.sync();
  small.copy(data, 3 * BB);
  const { records } = logFileRecords(dir);
  t.deepEqual(
    records.map(({ record: r }) => r.lengthBytes),
    [INTENT_SPAN_BYTES_MAX, 100],
  );
  kill(s);
  const r = await Store.open(dir);
  t.deepEqual(r.recoveryReport.errors, []);
  t.true((await r.read(ino, 0, data.length)).equals(data));
  await r.close();
});
