// The intent log file (DESIGN §5 "The log is a file of its own", docs/intent-log.md) through the
// store: records wrap around a small log many times and the space is reused only behind a durable
// tail; after a process kill every fsync'd byte is there; a log the metadata does not name is
// refused or moved aside; meta copy refuses a log with records still pending.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openStoreMetaOf, sqliteOnlyTest } from '../helpers/pg-meta';
import { INTENT_LOG_FILE } from '../../store/chunks/intent-log';
import { INTENT_LOG_BYTES_MIN } from '../../store/config';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { moveStoreMeta } from '../../store/meta-move';
import { ROOT_INO } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

const CS = SMALL.chunkSizeBytes;
const WRITE_BYTES = 200 * 1024; // inside one chunk: a record, not a new version
const LAPS = 3;

/** Abandon a store as a process kill does: nothing more reaches its files. */
function kill(s: Store): void {
  (s as unknown as { db: { close(): void } }).db.close();
  (s as unknown as { lock: { release(): void } }).lock.release();
}

const WRAP = "fsync'd writes wrap around a small log several times; a kill keeps every byte; the file keeps its size";
sqliteOnlyTest(WRAP, async (t) => {
  const { store, dir } = await smallStore('replica:3', 6, { intentLogBytes: INTENT_LOG_BYTES_MIN });
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const chunks = 8;
  const data = randomBytes(prng(1), chunks * CS);
  await store.write(f.ino, 0, data);
  const random = prng(2);
  const writes = Math.ceil((LAPS * INTENT_LOG_BYTES_MIN) / WRITE_BYTES);
  for (let i = 0; i < writes; i++) {
    const at = Math.floor(random() * chunks) * CS + Math.floor(random() * (CS - WRITE_BYTES));
    const bytes = randomBytes(prng(100 + i), WRITE_BYTES);
    await store.write(f.ino, at, bytes);
    await store.sync();
    bytes.copy(data, at);
    if (i % 40 === 39) await store.applyNow(); // the applier folds, the tail moves on, space is reused
  }
  const status = await store.status();
  const logged = status.intentBacklog.logBytesWritten;
  t.true(logged > LAPS * INTENT_LOG_BYTES_MIN * 0.9, `${logged} bytes went through the log`);
  const size = fs.statSync(path.join(dir, INTENT_LOG_FILE)).size;
  t.is(size, INTENT_LOG_BYTES_MIN, 'circular: the file never grows past its size');
  t.true(status.openIntents > 0, 'records are pending at the kill');
  kill(store);
  const r = await Store.open(dir);
  t.deepEqual(r.recoveryReport.errors, []);
  t.true(r.recoveryReport.intentsResolved > 0, 'replayed at open');
  t.is((await r.status()).openIntents, 0);
  t.true((await r.read(f.ino, 0, data.length)).equals(data), "every fsync'd byte");
  const scrub = await r.scrub();
  t.is(scrub.badCount, 0);
  await r.close();
});

const UNBOUND = 'a log file the metadata does not name: moved aside when it names none, refused when it names another';
sqliteOnlyTest(UNBOUND, async (t) => {
  const a = await smallStore('replica:3');
  const b = await smallStore('replica:3');
  await a.store.close();
  await b.store.close();
  const logA = path.join(a.dir, INTENT_LOG_FILE);
  fs.copyFileSync(path.join(b.dir, INTENT_LOG_FILE), logA);
  await t.throwsAsync(Store.open(a.dir), { message: /intent log .*meta\.db names .*restore the right file/ });
  // Metadata that names no log (e.g. copied back from PostgreSQL): the file holds nothing it needs.
  const lines: string[] = [];
  const db = openStoreMetaOf(a.dir);
  db.prepare("DELETE FROM counters WHERE name LIKE 'intent_log_%'").run();
  db.close();
  const s = await Store.open(a.dir, { log: (line) => lines.push(line) });
  t.true(
    lines.some((l) => l.includes('moved to') && l.includes('.unbound-')),
    lines.join('\n'),
  );
  t.true(
    fs.readdirSync(a.dir).some((n) => n.startsWith(`${INTENT_LOG_FILE}.unbound-`)),
    'kept, not deleted',
  );
  await s.close();
});

sqliteOnlyTest('meta copy refuses a store whose intent log holds writes not yet in the shards', async (t) => {
  const { store, dir } = await smallStore('replica:3');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  await store.write(f.ino, 0, randomBytes(prng(3), CS));
  await store.write(f.ino, 100, Buffer.alloc(5000, 9));
  await store.sync();
  kill(store);
  const refused = /intent log holds 1 fsync'd write\(s\) not yet in the shards; mount and unmount/;
  t.throws(() => moveStoreMeta(dir, 'postgresql://nobody@127.0.0.1:1/none'), { message: refused });
  const again = await Store.open(dir); // applies it
  t.true((await again.read(f.ino, 100, 5000)).equals(Buffer.alloc(5000, 9)));
  await again.close();
});

const FILLERS = 15;
const FILLER_BYTES = CS - 8192; // partial: a record of its own per file
const SPLIT_BYTES = 200 * 1024; // the write under test: this much on each side of a chunk boundary
const SPLIT = 'a write whose second record fails (EIO) fails; its first is folded and released: the tail moves on';
sqliteOnlyTest(SPLIT, async (t) => {
  const { store, dir } = await smallStore('replica:3');
  const files = Array.from({ length: FILLERS + 1 }, (_, i) => store.ns.create(ROOT_INO, `f${i}`, 0o644, 0, 0).ino);
  const data = files.map((_, i) => randomBytes(prng(10 + i), 2 * CS));
  for (let i = 0; i < files.length; i++) await store.write(files[i], 0, data[i]);
  await store.close();
  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { io, applier: false });
  // One log commit holds at most 4 MiB: the fillers' records and the first half of the last write
  // fill the first, its second half goes to the next, whose pwrite fails.
  io.addFault({ op: 'pwrite', path: INTENT_LOG_FILE, error: 'EIO', skip: 1, count: 1 });
  const split = randomBytes(prng(99), 2 * SPLIT_BYTES);
  const fillers = files.slice(0, FILLERS).map((ino, i) => {
    const bytes = randomBytes(prng(200 + i), FILLER_BYTES);
    bytes.copy(data[i], 4096);
    return s.write(ino, 4096, bytes);
  });
  const last = files[FILLERS];
  const failed = s.write(last, CS - SPLIT_BYTES, split);
  await Promise.all(fillers);
  await t.throwsAsync(failed, { message: /intent log .*failed a commit/ });
  const shown = await s.read(last, 0, 2 * CS);
  t.true(shown.subarray(CS - SPLIT_BYTES, CS).equals(split.subarray(0, SPLIT_BYTES)), 'its durable record shows');
  t.true(shown.subarray(CS).equals(data[FILLERS].subarray(CS)), 'the failed one does not');
  await s.applyNow();
  t.is((await s.status()).openIntents, 0, 'every record folded and released');
  await s.close();
  const r = await Store.open(dir);
  t.is(r.recoveryReport.intentsResolved, 0, 'the tail moved past every record');
  for (let i = 0; i < FILLERS; i++) t.true((await r.read(files[i], 0, 2 * CS)).equals(data[i]), `f${i}`);
  t.true((await r.read(last, 0, 2 * CS)).equals(shown), 'the file shows what it showed before');
  await r.close();
});

const LEFT_OUT =
  'a partial write after the group close that left its chunk out is logged over the live version, and kept';
sqliteOnlyTest(LEFT_OUT, async (t) => {
  const { store, dir } = await smallStore('replica:3');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(7), CS);
  await store.write(f.ino, 0, data);
  await store.close();
  const io = new FaultyIo(new NodeIo());
  const s = await Store.open(dir, { io, log: () => undefined });
  s.startGroups();
  await s.write(f.ino, 0, randomBytes(prng(8), CS)); // a whole chunk: its row waits in the open group
  io.addFault({ op: 'fdatasync', path: `${path.sep}.chunks${path.sep}`, error: 'EIO' }); // its close leaves it out
  const late = Buffer.alloc(3000, 0x5a);
  await s.write(f.ino, 100, late); // closes the group first, then is logged
  late.copy(data, 100);
  io.clearFaults();
  t.true((await s.read(f.ino, 0, CS)).equals(data), 'the old chunk with the logged write');
  await s.close();
  const r = await Store.open(dir);
  t.true((await r.read(f.ino, 0, CS)).equals(data), "the fsync'd write is kept");
  await r.close();
});
