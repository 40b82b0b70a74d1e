// DESIGN §5 for an in-place replica read-modify-write: the intent and the new mtime commit durably
// before any replica is touched; the intent's removal afterwards is a lazy commit (store/meta/meta.ts
// lazyTransaction). These tests prove that losing that lazy commit in a crash is harmless.
import test from 'ava';
import * as path from 'node:path';
import { ROOT_INO } from '../../store/meta/meta';
import { openStoreMetaOf } from '../helpers/pg-meta';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

function openIntents(dir: string): number {
  const db = openStoreMetaOf(dir);
  try {
    return Number((db.prepare('SELECT count(*) AS n FROM intents').get() as { n: bigint }).n);
  } finally {
    db.close();
  }
}

test('an in-place RMW leaves no intent, and bumps mtime', async (t) => {
  const { store, dir } = await smallStore('replica:3');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(21), 2 * SMALL.chunkSizeBytes);
  await store.write(f.ino, 0, data);
  const before = store.ns.getattr(f.ino)!.mtimeNs;
  await new Promise((resolve) => setTimeout(resolve, 5));
  const patch = Buffer.alloc(5000, 0x5a);
  await store.write(f.ino, 10_000, patch);
  t.true(store.ns.getattr(f.ino)!.mtimeNs > before);
  t.is(store.ns.getattr(f.ino)!.sizeBytes, data.length);
  await store.close();
  t.is(openIntents(dir), 0);
  patch.copy(data, 10_000);
  const again = await Store.open(dir);
  t.true((await again.read(f.ino, 0, data.length)).equals(data));
  t.is(again.recoveryReport.intentsResolved, 0);
  await again.close();
});

test('a lost lazy intent removal is resolved at open to the bytes already written', async (t) => {
  const { store, dir } = await smallStore('replica:3');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = randomBytes(prng(22), SMALL.chunkSizeBytes + 999);
  await store.write(f.ino, 0, data);
  const patch = randomBytes(prng(23), 3 * SMALL.bitrotBlockBytes + 17);
  const at = SMALL.bitrotBlockBytes - 5;
  await store.write(f.ino, at, patch);
  patch.copy(data, at);
  await store.close();
  // The state a crash leaves when the lazy commit never reached the disk: the intent is still there.
  const db = openStoreMetaOf(dir);
  const version = (
    db.prepare('SELECT version FROM chunks WHERE ino = ? AND chunk_index = 0').get(f.ino) as { version: bigint }
  ).version;
  const first = Math.floor(at / SMALL.bitrotBlockBytes);
  const last = Math.floor((at + patch.length - 1) / SMALL.bitrotBlockBytes);
  db.prepare(
    'INSERT INTO intents(ino, chunk_index, version, first_block, last_block, created_ns) VALUES (?, 0, ?, ?, ?, 0)',
  ).run(f.ino, version, first, last);
  db.close();
  const again = await Store.open(dir);
  t.is(again.recoveryReport.intentsResolved, 1);
  t.is(again.recoveryReport.blocksUnresolved, 0);
  t.true((await again.read(f.ino, 0, data.length)).equals(data));
  const status = await again.status();
  t.is(status.counters.bitrot_errors, 0);
  await again.close();
  t.is(openIntents(dir), 0);
});
