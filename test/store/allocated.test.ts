// What a file holds by logical bytes (store/meta/allocated.ts, DESIGN §5 "One view"): live chunks count
// their logical length, holes (never written, punched, truncated away) count nothing; SEEK_DATA /
// SEEK_HOLE walk the same chunk map; a packed small file is all data. fallocate'd ranges
// (store/meta/prealloc.ts) count as a write of zeros would, survive a reopen, and go with
// a punch, a truncate or the file.
import test from 'ava';
import { SMALL, smallStore } from './helpers';
import { Store } from '../../store/store';

const CS = SMALL.chunkSizeBytes;

test('allocated bytes and SEEK_DATA / SEEK_HOLE over chunks written, skipped, punched and truncated', async (t) => {
  const { store } = await smallStore('replica:3', 6, { smallFileMaxBytes: 0 });
  t.teardown(() => store.close());
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  await store.write(ino, 0, Buffer.alloc(CS, 1));
  await store.write(ino, 3 * CS, Buffer.alloc(100, 2));
  const size = 3 * CS + 100;
  t.is(store.allocatedBytes(ino), CS + 100);
  t.is(store.seekData(ino, 0, size, 'data'), 0);
  t.is(store.seekData(ino, 0, size, 'hole'), CS);
  t.is(store.seekData(ino, CS, size, 'data'), 3 * CS);
  t.is(store.seekData(ino, 3 * CS + 5, size, 'hole'), size); // the end of the file is a hole
  t.is(store.seekData(ino, size, size, 'data'), null);
  t.is(store.seekData(ino, -1, size, 'hole'), null);
  await store.punchHole(ino, 0, CS);
  t.is(store.allocatedBytes(ino), 100);
  t.is(store.seekData(ino, 0, size, 'hole'), 0);
  t.is(store.seekData(ino, 0, size, 'data'), 3 * CS);
  await store.truncate(ino, 2 * CS);
  t.is(store.allocatedBytes(ino), 0);
  t.is(store.seekData(ino, 0, 2 * CS, 'data'), null);
  t.is(store.seekData(ino, 0, 2 * CS, 'hole'), 0);
});

test('a small file packed as a needle is all data', async (t) => {
  const { store } = await smallStore('replica:3', 6, { smallFileMaxBytes: 8 * 1024 });
  t.teardown(() => store.close());
  const ino = store.ns.create(1, 's', 0o644, 0, 0).ino;
  await store.write(ino, 0, Buffer.from('a small file'));
  t.not(store.needleOf(ino), null);
  t.is(store.allocatedBytes(ino), 12);
  t.is(store.seekData(ino, 3, 12, 'data'), 3);
  t.is(store.seekData(ino, 3, 12, 'hole'), 12);
});

/**
 * DESIGN §5 "One view": ranges the mount holds in memory are answered as they will be
 * stored, so st_blocks and SEEK_DATA / SEEK_HOLE read the same before and after each write commits.
 * Every probe offset is asked both ways; the answers must match exactly.
 */
test('pending ranges answer exactly what storing them leaves: st_blocks and every SEEK_DATA / SEEK_HOLE', async (t) => {
  const { store } = await smallStore('replica:3', 6, { smallFileMaxBytes: 8 * 1024 });
  t.teardown(() => store.close());
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  // [offset, length, size after]: a needle, growing past the threshold, a hole, mid-chunk, a far chunk, an overwrite
  const steps: Array<[number, number, number]> = [
    [0, 3000, 3000],
    [100, 50, 3000],
    [3000, 9000, 12_000],
    [2 * CS + 500, 100, 2 * CS + 600],
    [CS + 10, 20, 2 * CS + 600],
    [5 * CS + CS / 2, 7, 5 * CS + CS / 2 + 7],
    [0, CS + 5, 5 * CS + CS / 2 + 7],
  ];
  for (const [offsetBytes, lengthBytes, sizeBytes] of steps) {
    const pending = [{ offsetBytes, endBytes: offsetBytes + lengthBytes }];
    const probes = [
      0,
      1,
      2999,
      3000,
      11_999,
      CS - 1,
      CS,
      CS + 29,
      CS + 30,
      2 * CS,
      2 * CS + 599,
      3 * CS,
      5 * CS + CS / 2,
    ].filter((p) => p < sizeBytes);
    const ask = (p: typeof pending): string =>
      JSON.stringify([
        store.allocatedBytes(ino, p, sizeBytes),
        probes.map((at) => [
          store.seekData(ino, at, sizeBytes, 'data', p),
          store.seekData(ino, at, sizeBytes, 'hole', p),
        ]),
      ]);
    const before = ask(pending);
    await store.write(ino, offsetBytes, Buffer.alloc(lengthBytes, 7));
    t.is(ask([]), before, `write of [${offsetBytes}, +${lengthBytes})`);
    t.is(ask(pending), before, 'asking with the range again once it is stored changes nothing');
  }
});

/**
 * DESIGN §5 "One view": a fallocate counts in the chunks it touches from their start, like a write of
 * zeros; KEEP_SIZE past the end counts too (not to SEEK). Writing into the allocated range then
 * changes neither st_blocks nor any SEEK answer, before or after the bytes are stored, nor after
 * the store is reopened.
 */
test('fallocated ranges: counted like written zeros, unchanged by writes into them and by a reopen; punch, truncate and unlink drop them', async (t) => {
  const { store, dir } = await smallStore('replica:3', 6, { smallFileMaxBytes: 8 * 1024 });
  let s: Store = store;
  t.teardown(() => s.close());
  const ino = s.ns.create(1, 'f', 0o644, 0, 0).ino;
  const size = 3 * CS + 1000;
  await s.truncate(ino, size);
  s.preallocate(ino, CS + 100, CS); // inside: chunk 1 from its start, chunk 2 up to 100
  s.preallocate(ino, size, 2 * CS); // KEEP_SIZE past the end
  // Inside: chunk 1 whole, chunk 2 to 100, and chunk 3 up to the size (KEEP_SIZE from the size holds
  // chunk 3 from its start). Past the size: the rest of chunk 3, chunk 4, chunk 5 to 1000.
  const inside = CS + 100 + 1000;
  const beyond = 2 * CS;
  const probes = [0, CS - 1, CS, CS + 99, CS + 100, 2 * CS, 2 * CS + 99, 2 * CS + 100, 3 * CS, size - 1];
  const ask = (pending: Array<{ offsetBytes: number; endBytes: number }> = []): string =>
    JSON.stringify([
      s.allocatedBytes(ino, pending, size),
      probes.map((at) => [s.seekData(ino, at, size, 'data', pending), s.seekData(ino, at, size, 'hole', pending)]),
    ]);
  t.is(s.allocatedBytes(ino, [], size), inside + beyond);
  t.is(s.seekData(ino, 0, size, 'data'), CS, 'allocated space is data to SEEK_DATA');
  t.is(s.seekData(ino, CS, size, 'hole'), 2 * CS + 100);
  const before = ask();
  for (const [offsetBytes, lengthBytes] of [
    [CS + 5000, 10],
    [2 * CS, 100],
    [CS, CS],
  ]) {
    const pending = [{ offsetBytes, endBytes: offsetBytes + lengthBytes }];
    t.is(ask(pending), before, `pending write of [${offsetBytes}, +${lengthBytes}) inside the allocation`);
    await s.write(ino, offsetBytes, Buffer.alloc(lengthBytes, 7), size);
    t.is(ask(), before, `stored write of [${offsetBytes}, +${lengthBytes})`);
  }
  await s.close();
  s = await Store.open(dir);
  t.is(ask(), before, 'a reopen keeps it');
  s.unpreallocate(ino, 4 * CS, CS); // a punch past the end: chunk 4 is allocated no more
  t.is(s.allocatedBytes(ino, [], size), inside + beyond - CS);
  await s.truncate(ino, CS + 10);
  t.is(s.allocatedBytes(ino), 10, 'chunk 1 up to the new size');
  s.ns.unlink(1, 'f');
  await s.deleteFile(ino);
  t.is(s.allocatedBytes(ino), 0);
});

test('a fallocated needle file that grows into chunks answers the same before and after the write is stored', async (t) => {
  const { store } = await smallStore('replica:3', 6, { smallFileMaxBytes: 8 * 1024 });
  t.teardown(() => store.close());
  const ino = store.ns.create(1, 'n', 0o644, 0, 0).ino;
  await store.write(ino, 0, Buffer.alloc(3000, 1));
  t.not(store.needleOf(ino), null);
  store.preallocate(ino, 0, 6000); // chunk 0 up to 6000: past the needle, past the size
  t.is(store.allocatedBytes(ino), 6000, 'the needle, and KEEP_SIZE space past it');
  const size = 5000 + 9000;
  const pending = [{ offsetBytes: 5000, endBytes: size }];
  const ask = (p: typeof pending): string =>
    JSON.stringify([
      store.allocatedBytes(ino, p, size),
      [0, 2999, 3000, 5999, 6000, 13_999].map((at) => [
        store.seekData(ino, at, size, 'data', p),
        store.seekData(ino, at, size, 'hole', p),
      ]),
    ]);
  const before = ask(pending);
  t.is(store.allocatedBytes(ino, pending, size), size);
  await store.write(ino, 5000, Buffer.alloc(9000, 2));
  t.is(ask([]), before);
});

test('a file whose every byte is pending is all data, asked without a read of its rows', async (t) => {
  const { store } = await smallStore('replica:3', 6, { smallFileMaxBytes: 8 * 1024 });
  t.teardown(() => store.close());
  const allocated = (store as unknown as { allocated: { fileRow: (ino: number) => unknown } }).allocated;
  const fileRow = allocated.fileRow.bind(allocated);
  let reads = 0;
  allocated.fileRow = (ino) => {
    reads++;
    return fileRow(ino);
  };
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  for (const size of [100, 3 * CS + 5])
    t.is(store.allocatedBytes(ino, [{ offsetBytes: 0, endBytes: size }], size), size);
  t.is(reads, 0, 'pending from 0 to the size');
  t.is(store.allocatedBytes(ino, [{ offsetBytes: 1, endBytes: 10_000 }], 10_000), 10_000); // a chunk counts from its start
  t.is(reads, 1, 'a hole at the start is asked');
  store.preallocate(ino, 0, 2 * CS);
  t.is(
    store.allocatedBytes(ino, [{ offsetBytes: 0, endBytes: 100 }], 100),
    2 * CS,
    'KEEP_SIZE space past the size counts',
  );
  t.is(reads, 2);
});
