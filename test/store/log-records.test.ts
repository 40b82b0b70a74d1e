// Sealed log records (DESIGN §10 "log records"; src/log-record-cipher.ts, store/log-record-keys.ts):
// the intent spans of chunks whose layout encrypts are written sealed, open only with the store key,
// unaltered and at their place (file, chunk, version, first block; a log file record: its store, log,
// sequence number, offset and length); a store replays them at open, and refuses one altered or
// moved, or a plain one over an encrypting layout, naming it; a rebase, or a log file record logged
// again over a rewritten chunk, seals a chunk's records again for the new version.
import test from 'ava';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { deriveDataKey } from '../../src/chunk-cipher';
import {
  LOG_FILE_RECORD_FORMAT,
  LOG_RECORD_OVERHEAD_BYTES,
  LogFileRecordPosition,
  LogRecordError,
  LogRecordPosition,
  deriveLogKey,
} from '../../src/log-record-cipher';
import { LogRecordKeyError, LogRecordKeys } from '../../store/log-record-keys';
import { PlainIntentError } from '../../store/chunks/plain-intent';
import { RECORD_FLAG_SEALED } from '../../src/intent-record';
import { logFileRecords, recordPosition } from './log-file-records';
import { HeldRenames } from './held-renames';
import { ChunkMap, IntentRecordError } from '../../store/meta/chunk-map';
import { ROOT_INO } from '../../store/meta/meta';
import { createDb } from '../../store/meta/sqlite/database';
import { Store } from '../../store/store';
import type { Db } from '../../store/meta/sql-engine';
import { openStoreMetaOf, testMetaEngine } from '../helpers/pg-meta';
import { SMALL, copyStore, prng, randomBytes, smallStore, tmpDir } from './helpers';

const BB = SMALL.bitrotBlockBytes;
const POS: LogRecordPosition = { fileId: 12n, chunkIndex: 3n, version: 7n, firstBlock: 5 };

interface IntentRow {
  id: bigint;
  ino: bigint;
  chunk_index: bigint;
  version: bigint;
  first_block: bigint;
  last_block: bigint;
  span: Buffer;
  span_sealed: bigint;
}

/** The live version of a file's chunk 0. */
function chunkVersion(db: Db, ino: number): bigint {
  const row = db.prepare('SELECT version FROM chunks WHERE ino = ? AND chunk_index = 0').get(ino) as {
    version: bigint;
  };
  return row.version;
}

const bigints = (_k: string, v: unknown): unknown => (typeof v === 'bigint' ? String(v) : v);

function flipped(b: Buffer, at: number): Buffer {
  const out = Buffer.from(b);
  out[at] ^= 0x01;
  return out;
}

test('a record opens only with its key, unaltered and at its place; every seal has its own nonce', (t) => {
  const keys = new LogRecordKeys(crypto.randomBytes(32));
  const plain = Buffer.from('a span of a partial write '.repeat(200));
  const rec = keys.seal(POS, plain);
  t.is(rec.length, plain.length + LOG_RECORD_OVERHEAD_BYTES);
  t.true(keys.open(POS, rec).equals(plain));
  t.is(rec.indexOf('a span'), -1, 'no plaintext in the record');
  const again = keys.seal(POS, plain);
  t.false(again.subarray(1, 13).equals(rec.subarray(1, 13)), 'a fresh nonce');
  t.true(keys.open(POS, again).equals(plain));
  const refused = (message?: RegExp): { instanceOf: typeof LogRecordError; message?: RegExp } =>
    message === undefined ? { instanceOf: LogRecordError } : { instanceOf: LogRecordError, message };
  const other = new LogRecordKeys(crypto.randomBytes(32));
  t.throws(
    () => other.open(POS, rec),
    refused(/tag mismatch.*\(file 12, chunk 3, version 7, block 5\)/),
    'another key',
  );
  for (const at of [1, 12, 13, 500, rec.length - 1]) {
    t.throws(() => keys.open(POS, flipped(rec, at)), refused(), `byte ${at} altered`);
  }
  t.throws(() => keys.open(POS, flipped(rec, 0)), refused(/format 0 is not one this build reads/));
  t.throws(() => keys.open(POS, rec.subarray(0, rec.length - 1)), refused(), 'cut short');
  t.throws(() => keys.open(POS, rec.subarray(0, 20)), refused(/shorter than format \+ nonce \+ tag/));
  for (const moved of [{ fileId: 13n }, { chunkIndex: 4n }, { version: 8n }, { firstBlock: 6 }]) {
    t.throws(() => keys.open({ ...POS, ...moved }, rec), refused(), `moved: ${JSON.stringify(moved, bigints)}`);
  }
  const keyless = new LogRecordKeys(null);
  t.throws(() => keyless.open(POS, rec), { instanceOf: LogRecordKeyError, message: /without the store key/ });
});

test('a log file record (format 2) opens only in its store, log, sequence number and place', (t) => {
  const keys = new LogRecordKeys(crypto.randomBytes(32));
  const at: LogFileRecordPosition = {
    storeUuid: '0a1b2c3d-0000-4000-8000-000000000001',
    logId: 0x1234n,
    seq: 41n,
    fileId: 12n,
    chunkIndex: 3n,
    version: 7n,
    offsetBytes: 5000,
    lengthBytes: 11,
  };
  const plain = Buffer.from('bytes wrote');
  const rec = keys.seal(at, plain);
  t.is(rec[0], LOG_FILE_RECORD_FORMAT);
  t.true(keys.open(at, rec).equals(plain));
  const moves = [
    { storeUuid: '0a1b2c3d-0000-4000-8000-000000000002' },
    { logId: 0x1235n },
    { seq: 42n },
    { fileId: 13n },
    { chunkIndex: 4n },
    { version: 8n },
    { offsetBytes: 5001 },
    { lengthBytes: 10 },
  ];
  for (const moved of moves) {
    t.throws(() => keys.open({ ...at, ...moved }, rec), { instanceOf: LogRecordError }, JSON.stringify(moved, bigints));
  }
  // A row's record (format 1) of the same chunk version does not open as a log file record, nor the reverse.
  t.throws(() => keys.open(at, keys.seal(POS, plain)), { instanceOf: LogRecordError, message: /format 1 is not/ });
  t.throws(() => keys.open(POS, rec), { instanceOf: LogRecordError, message: /format 2 is not/ });
});

test('a log key is never the data key of the same chunk version', (t) => {
  const storeKey = crypto.randomBytes(32);
  t.false(deriveLogKey(storeKey, POS).equals(deriveDataKey(storeKey, POS)));
  t.false(deriveLogKey(storeKey, POS).equals(deriveLogKey(storeKey, { ...POS, version: 8n })));
});

test("a rebase seals the chunk's records again for the new version; rows of other chunks and plain rows stay as they were", (t) => {
  const db = createDb(path.join(tmpDir(), 'meta.db'), crypto.randomUUID());
  const keys = new LogRecordKeys(crypto.randomBytes(32));
  const map = new ChunkMap(db, keys);
  const a = Buffer.alloc(BB, 0x61);
  const b = Buffer.alloc(2 * BB, 0x62);
  db.transaction(() => {
    map.addIntent(5, 0, 3n, 2, 2, a, true);
    map.addIntent(5, 0, 3n, 4, 5, b, true);
    map.addIntent(5, 1, 3n, 0, 0, a, true);
    map.addIntent(6, 0, 1n, 0, 0, b, false);
  })();
  const raw = (): IntentRow[] => db.prepare('SELECT * FROM intents ORDER BY id').all() as IntentRow[];
  const before = raw();
  t.deepEqual(
    before.map((r) => Number(r.span_sealed)),
    [1, 1, 1, 0],
  );
  t.is(before[0].span.indexOf(a.subarray(0, 64)), -1, 'sealed in the row');
  t.true(before[3].span.equals(b), 'a chunk that does not encrypt: the bytes as they are');
  db.transaction(() => map.rebaseIntents(5, 0, 9n, true))();
  const after = raw();
  t.deepEqual(
    after.map((r) => r.version),
    [9n, 9n, 3n, 1n],
  );
  t.true(after[2].span.equals(before[2].span) && after[3].span.equals(before[3].span), 'other chunks untouched');
  const old = { fileId: 5n, chunkIndex: 0n, version: 3n, firstBlock: 2 };
  t.throws(() => keys.open(old, after[0].span), { instanceOf: LogRecordError }, 'no longer opens at the old version');
  const opened = map.intents();
  const where = opened.map((i) => [i.ino, i.chunkIndex, i.version, i.firstBlock]);
  t.deepEqual(where, [
    [5, 0, 9n, 2],
    [5, 0, 9n, 4],
    [5, 1, 3n, 0],
    [6, 0, 1n, 0],
  ]);
  t.deepEqual(
    opened.map((i) => i.span),
    [a, b, a, b],
  );
  db.close();
});

/** A closed replica:3,aes256gcm store with one file of one chunk; its store key; the chunk's live version. */
async function encryptedFile(): Promise<{ dir: string; ino: number; data: Buffer; storeKey: Buffer; version: bigint }> {
  const { store, dir } = await smallStore('replica:3,aes256gcm', 6, { smallFileMaxBytes: 0 });
  const ino = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0).ino;
  const data = randomBytes(prng(31), SMALL.chunkSizeBytes);
  await store.write(ino, 0, data);
  await store.close();
  const db = openStoreMetaOf(dir);
  const version = chunkVersion(db, ino);
  db.close();
  return { dir, ino, data, storeKey: fs.readFileSync(path.join(dir, 'data.key')), version };
}

/** Plant a one-block intent row of chunk 0 as a build writes it (sealed, or plain as older builds did). */
function plant(dir: string, ino: number, version: bigint, block: number, span: Buffer, sealed: 0 | 1): void {
  const db = openStoreMetaOf(dir);
  db.prepare(
    'INSERT INTO intents(ino, chunk_index, version, first_block, last_block, created_ns, span, span_sealed) ' +
      'VALUES (?, 0, ?, ?, ?, 0, ?, ?)',
  ).run(ino, version, block, block, span, sealed);
  db.close();
}

test('partial writes to an encrypting layout are logged sealed, never in the clear; they read back at once and after the applier', async (t) => {
  const { dir, ino, data, storeKey } = await encryptedFile();
  const s = await Store.open(dir, { applier: false });
  const marker = Buffer.from('MARKER-of-a-partial-write');
  for (let i = 0; i < 5; i++) {
    const at = 1000 + i * 3 * BB;
    await s.write(ino, at, marker);
    marker.copy(data, at);
  }
  const rows = s.ns.db.prepare('SELECT * FROM intents ORDER BY id').all() as IntentRow[];
  const keys = new LogRecordKeys(storeKey);
  if (testMetaEngine() === 'sqlite') {
    // The intent log file (DESIGN §5): exactly the bytes written, in format-2 records.
    t.is(rows.length, 0, 'no intent row');
    const { header, bytes, records } = logFileRecords(dir);
    t.is(bytes.indexOf(marker), -1, 'the log holds no plaintext');
    t.is(records.length, 5);
    for (const { record: r } of records) {
      t.is(r.flags & RECORD_FLAG_SEALED, RECORD_FLAG_SEALED);
      t.deepEqual(keys.open(recordPosition(header, r), r.payload), marker, 'the record opens to the bytes written');
    }
  } else {
    t.is(rows.length, 5);
    for (const r of rows) {
      t.is(Number(r.span_sealed), 1);
      t.is(r.span.indexOf(marker), -1, 'the row holds no plaintext');
      const pos = { fileId: r.ino, chunkIndex: r.chunk_index, version: r.version, firstBlock: Number(r.first_block) };
      const at = Number(r.first_block) * BB;
      t.deepEqual(keys.open(pos, r.span), data.subarray(at, at + BB), 'the record opens to the block the file shows');
    }
  }
  t.true((await s.read(ino, 0, data.length)).equals(data), 'reads overlay the records');
  await s.applyNow();
  await s.close();
  const again = await Store.open(dir);
  t.true((await again.read(ino, 0, data.length)).equals(data));
  await again.close();
});

test('a store replays sealed rows at open; it refuses a plain row over an encrypting layout, and a record altered or moved, naming it', async (t) => {
  const { dir, ino, data, storeKey, version } = await encryptedFile();
  const keys = new LogRecordKeys(storeKey);
  const span = (fill: number): Buffer => Buffer.alloc(BB, fill);
  const at2 = { fileId: BigInt(ino), chunkIndex: 0n, version, firstBlock: 2 };
  plant(dir, ino, version, 6, span(0x22), 0); // plain bytes: no build writes them for this layout
  const plainSite = `\\(file ${ino}, chunk 0, version ${version}\\)`;
  await t.throwsAsync(Store.open(dir, { readOnly: true }), { instanceOf: PlainIntentError }, 'a read-only open too');
  await t.throwsAsync(Store.open(dir), {
    instanceOf: PlainIntentError,
    message: new RegExp(
      `^intent row \\d+ of meta\\.db holds plain bytes .*encrypts.*delete that intent row.*${plainSite}$`,
    ),
  });
  const meta0 = openStoreMetaOf(dir);
  meta0.prepare('DELETE FROM intents').run();
  meta0.close();
  plant(dir, ino, version, 2, keys.seal(at2, span(0x11)), 1);
  const s = await Store.open(dir);
  t.is(s.recoveryReport.intentsResolved, 1);
  span(0x11).copy(data, 2 * BB);
  t.true((await s.read(ino, 0, data.length)).equals(data), 'the sealed row replayed, nothing of the plain one');
  await s.close();

  const meta = openStoreMetaOf(dir);
  const now = chunkVersion(meta, ino);
  meta.close();
  const good = keys.seal({ fileId: BigInt(ino), chunkIndex: 0n, version: now, firstBlock: 3 }, span(0x33));
  const cases: Array<[string, number, Buffer]> = [
    ['altered', 3, flipped(good, 40)],
    ['moved to another block', 4, good],
  ];
  for (const [what, firstBlock, record] of cases) {
    plant(dir, ino, now, firstBlock, record, 1);
    const site = `\\(file ${ino}, chunk 0, version ${now}, block ${firstBlock}\\)`;
    const message = new RegExp(`^intent \\d+ of the metadata does not open: .*tag mismatch.*${site}; restore`);
    await t.throwsAsync(Store.open(dir), { instanceOf: IntentRecordError, message }, what);
    const db = openStoreMetaOf(dir);
    db.prepare('DELETE FROM intents').run();
    db.close();
  }
  const clean = await Store.open(dir);
  t.true((await clean.read(ino, 0, data.length)).equals(data), 'nothing of a refused record was applied');
  await clean.close();
});

test('an intent logged while its chunk is rewritten moves to the new version sealed again for it, and replays there', async (t) => {
  const { dir, ino, data, storeKey, version } = await encryptedFile();
  const io = new HeldRenames();
  const s = await Store.open(dir, { applier: false, io });
  const first = Buffer.alloc(100, 0x41);
  await s.write(ino, 2 * BB + 10, first);
  first.copy(data, 2 * BB + 10);
  io.arm(version + 1n);
  const applying = s.applyNow(); // rewrites the chunk with the first intent, held before its shards are renamed
  await io.reached;
  const second = Buffer.alloc(100, 0x42);
  await s.write(ino, 5 * BB + 20, second); // logged over the old version meanwhile
  second.copy(data, 5 * BB + 20);
  io.arm(version + 2n); // the first rewrite goes on and commits; the next one (of the second intent) is held
  await io.reached;
  const rows = s.ns.db.prepare('SELECT * FROM intents ORDER BY id').all() as IntentRow[];
  const now = chunkVersion(s.ns.db, ino);
  t.true(now > version, 'the rewrite made a new version');
  const keys = new LogRecordKeys(storeKey);
  if (testMetaEngine() === 'sqlite') {
    // A log file record names its version: logged again over the new one before its commit.
    t.is(rows.length, 0);
    const { header, records } = logFileRecords(dir);
    const over = records.filter(({ record: r }) => r.offsetBytes === 5 * BB + 20).map(({ record: r }) => r);
    t.deepEqual(
      over.map((r) => r.version),
      [version, now],
      'logged over the old version, then again over the new one',
    );
    const again = over[1];
    t.true(keys.open(recordPosition(header, again), again.payload).equals(second), 'sealed again for the new version');
    const moved = { ...recordPosition(header, again), version };
    t.throws(() => keys.open(moved, again.payload), { instanceOf: LogRecordError });
  } else {
    t.is(rows.length, 1, 'the second intent is pending');
    t.is(rows[0].version, now, 'moved to the new version');
    const pos = { fileId: BigInt(ino), chunkIndex: 0n, version: now, firstBlock: 5 };
    t.true(keys.open(pos, rows[0].span).equals(data.subarray(5 * BB, 6 * BB)), 'sealed again for the new version');
    t.throws(() => keys.open({ ...pos, version }, rows[0].span), { instanceOf: LogRecordError });
  }
  t.true((await s.read(ino, 0, data.length)).equals(data));
  // The state a crash leaves: the intent still in the log (a copy of the store as it is now; a
  // PostgreSQL database in use cannot be copied, and the replay of sealed records is tested above).
  const crashed = testMetaEngine() === 'sqlite' ? copyStore(dir) : null;
  io.letGo();
  await applying;
  await s.close();
  if (crashed === null) return;
  fs.rmSync(path.join(crashed, 'chunkfs.lock')); // held by this live process; a crashed one's is taken over
  const again = await Store.open(crashed);
  t.is(again.recoveryReport.intentsResolved, 1, 'replayed at the new version');
  t.true((await again.read(ino, 0, data.length)).equals(data));
  await again.close();
});
