// The read-path caches (chunk rows in chunk-map.ts, file layout and size in file-io.ts) and the
// inline I/O gate (io.ts): each must never serve something other than the committed truth.
import test from 'ava';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChunkMap } from '../../store/meta/chunk-map';
import { LogRecordKeys } from '../../store/log-record-keys';
import { InlineGate, NodeIo } from '../../store/io/io';
import { ROOT_INO, createDb } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore, tmpDir } from './helpers';

function shardFiles(dir: string): string[] {
  return (fs.readdirSync(path.join(dir, 'disks'), { recursive: true }) as string[]).filter((f) => f.endsWith('.shard'));
}

test('a layout change after the file was read is honoured by the next write (file info cache)', async (t) => {
  const { store, dir } = await smallStore('replica:3');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  t.is((await store.read(f.ino, 0, 100)).length, 0); // fills the cache with replica:3
  store.ns.setxattr(f.ino, 'user.chunkfs.layout', Buffer.from('ec:4+2'));
  const data = randomBytes(prng(7), SMALL.chunkSizeBytes + 1000);
  await store.write(f.ino, 0, data);
  t.is(shardFiles(dir).length, 2 * 6, 'two chunks of ec:4+2: six shards each');
  await store.close();
  const again = await Store.open(dir);
  t.true((await again.read(f.ino, 0, data.length)).equals(data));
  await again.close();
});

test('size and chunk rows seen by reads follow every write and truncate', async (t) => {
  const { store } = await smallStore('replica:3');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const a = randomBytes(prng(1), 3 * SMALL.chunkSizeBytes);
  await store.write(f.ino, 0, a);
  t.true((await store.read(f.ino, 0, a.length)).equals(a));
  const patch = Buffer.alloc(5000, 0xab);
  await store.write(f.ino, SMALL.chunkSizeBytes - 100, patch); // RMW across two chunks
  patch.copy(a, SMALL.chunkSizeBytes - 100);
  t.true((await store.read(f.ino, 0, a.length)).equals(a));
  await store.truncate(f.ino, 1000);
  t.is((await store.read(f.ino, 0, a.length)).length, 1000);
  await store.truncate(f.ino, 2 * SMALL.chunkSizeBytes);
  const grown = await store.read(f.ino, 0, 2 * SMALL.chunkSizeBytes);
  t.true(grown.subarray(0, 1000).equals(a.subarray(0, 1000)));
  t.true(grown.subarray(1000).equals(Buffer.alloc(grown.length - 1000)), 'bytes past a truncate never reappear');
  await store.close();
});

test('chunk rows changed in a rolled-back transaction are never cached', (t) => {
  const db = createDb(path.join(tmpDir(), 'meta.db'), crypto.randomUUID());
  const map = new ChunkMap(db, new LogRecordKeys(null));
  const v = map.allocVersion(5, 0);
  t.is(map.get(5, 0)!.version, 0n);
  t.throws(
    () =>
      db.transaction(() => {
        map.setLive(5, 0, v, 123);
        t.is(map.get(5, 0)!.version, v, 'inside the transaction the change is visible');
        throw new Error('roll back');
      })(),
    { message: 'roll back' },
  );
  t.is(map.get(5, 0)!.version, 0n, 'after the rollback: the committed row');
  map.setLive(5, 0, v, 123);
  t.is(map.get(5, 0)!.logicalLenBytes, 123);
  const row = map.get(5, 0)!;
  row.logicalLenBytes = 1; // a caller's copy: the cache is not touched
  t.is(map.get(5, 0)!.logicalLenBytes, 123);
  db.close();
});

test('inline gate: a lone call runs inline, a call while another is pooled goes to the pool; errors reject', async (t) => {
  const gate = new InlineGate(true);
  let release!: () => void;
  const slow = gate.run(
    null,
    () =>
      new Promise<number>((resolve) => {
        release = () => resolve(1);
      }),
  );
  t.is(gate.inFlight, 1);
  let inlineRan = false;
  const second = gate.run(
    () => {
      inlineRan = true;
      return 2;
    },
    () => Promise.resolve(3),
  );
  t.false(inlineRan, 'not inline while a pooled call is in flight');
  release();
  t.deepEqual(await Promise.all([slow, second]), [1, 3]);
  t.is(gate.inFlight, 0);
  t.is(
    await gate.run(
      () => 4,
      () => Promise.resolve(5),
    ),
    4,
  );
  await t.throwsAsync(
    gate.run(
      () => {
        throw new Error('inline failure');
      },
      () => Promise.resolve(0),
    ),
    { message: 'inline failure' },
  );
  t.is(
    await new InlineGate(false).run(
      () => 6,
      () => Promise.resolve(7),
    ),
    7,
    'disabled: always pooled',
  );
});

test('NodeIo gives the same bytes and errors inline and pooled', async (t) => {
  const file = path.join(tmpDir(), 'f');
  fs.writeFileSync(file, randomBytes(prng(3), 300_000));
  const want = fs.readFileSync(file);
  for (const inlineWhenIdle of [true, false]) {
    const io = new NodeIo({ inlineWhenIdle });
    const f = await io.open(file, 'readwrite');
    t.true((await f.pread(4096, 1000)).equals(want.subarray(1000, 5096)));
    t.true((await f.pread(300_000, 0)).equals(want), 'large reads always pooled');
    t.is((await f.pread(100, 299_950)).length, 50, 'short at EOF');
    await f.pwrite(Buffer.from('hello'), 10);
    await f.fdatasync();
    t.is((await f.pread(5, 10)).toString(), 'hello');
    want.write('hello', 10);
    await f.close();
    io.closeAll();
    await t.throwsAsync(io.open(path.join(tmpDir(), 'missing'), 'read'), { code: 'ENOENT' });
  }
});
