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
