// What a file holds by logical bytes (store/allocated.ts, issue 15 item 12): live chunks count
// their logical length, holes (never written, punched, truncated away) count nothing; SEEK_DATA /
// SEEK_HOLE walk the same chunk map; a packed small file is all data.
import test from 'ava'
import { SMALL, smallStore } from './helpers'

const CS = SMALL.chunkSizeBytes

test('allocated bytes and SEEK_DATA / SEEK_HOLE over chunks written, skipped, punched and truncated', async (t) => {
  const { store } = await smallStore('replica:3', 6, { smallFileMaxBytes: 0 })
  t.teardown(() => store.close())
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino
  await store.write(ino, 0, Buffer.alloc(CS, 1))
  await store.write(ino, 3 * CS, Buffer.alloc(100, 2))
  const size = 3 * CS + 100
  t.is(store.allocatedBytes(ino), CS + 100)
  t.is(store.seekData(ino, 0, size, 'data'), 0)
  t.is(store.seekData(ino, 0, size, 'hole'), CS)
  t.is(store.seekData(ino, CS, size, 'data'), 3 * CS)
  t.is(store.seekData(ino, 3 * CS + 5, size, 'hole'), size) // the end of the file is a hole
  t.is(store.seekData(ino, size, size, 'data'), null)
  t.is(store.seekData(ino, -1, size, 'hole'), null)
  await store.punchHole(ino, 0, CS)
  t.is(store.allocatedBytes(ino), 100)
  t.is(store.seekData(ino, 0, size, 'hole'), 0)
  t.is(store.seekData(ino, 0, size, 'data'), 3 * CS)
  await store.truncate(ino, 2 * CS)
  t.is(store.allocatedBytes(ino), 0)
  t.is(store.seekData(ino, 0, 2 * CS, 'data'), null)
  t.is(store.seekData(ino, 0, 2 * CS, 'hole'), 0)
})

test('a small file packed as a needle is all data', async (t) => {
  const { store } = await smallStore('replica:3', 6, { smallFileMaxBytes: 8 * 1024 })
  t.teardown(() => store.close())
  const ino = store.ns.create(1, 's', 0o644, 0, 0).ino
  await store.write(ino, 0, Buffer.from('a small file'))
  t.not(store.needleOf(ino), null)
  t.is(store.allocatedBytes(ino), 12)
  t.is(store.seekData(ino, 3, 12, 'data'), 3)
  t.is(store.seekData(ino, 3, 12, 'hole'), 12)
})
