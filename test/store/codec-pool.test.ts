// store/chunks/codec-pool.ts: whole chunks encoded on a codec thread decode to the same bytes as
// the inline encoder's, with the same flags; incompressible content stays raw; small content and a
// closed pool are left to the caller (inline); a content change after the call cannot reach the
// payload (the worker reads a copy).
import test from 'ava';
import * as crypto from 'node:crypto';
import { availableParallelism } from 'node:os';
import { decodePayload, encodePayload } from '../../src/chunk-codec';
import { parseTransforms } from '../../src/chunk-transforms';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from '../../src/header';
import { CodecPool, DECODE_INLINE_BELOW_BYTES, ENCODES_IN_FLIGHT_MAX } from '../../store/chunks/codec-pool';

const KEY = crypto.randomBytes(32);
const ID = { fileId: 7n, chunkIndex: 3n, version: 2n };
/** 4 MiB that compresses (text-like: repeated words with noise). */
function compressible(lengthBytes: number): Buffer {
  const words = ['alpha ', 'beta ', 'gamma ', 'delta ', 'chunk ', 'shard '];
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < lengthBytes; i++) {
    const w = words[(i * 7 + (i >> 3)) % words.length];
    parts.push(w);
    n += w.length;
  }
  return Buffer.from(parts.join('')).subarray(0, lengthBytes);
}

function poolWithAlloc(pool: CodecPool): { alloc: (n: number) => Buffer; taken: Buffer[] } {
  const taken: Buffer[] = [];
  return {
    taken,
    alloc: (n) => {
      const b = pool.takePayload(n);
      taken.push(b);
      return b;
    },
  };
}

for (const names of [['zstd'], ['lz4'], ['aes256gcm'], ['zstd', 'aes256gcm']]) {
  test(`${names.join(',')}: encoded on a codec thread, decodes to the content, flags as inline`, async (t) => {
    const pool = new CodecPool(KEY);
    try {
      const tr = parseTransforms(names);
      const content = compressible(4 << 20);
      const { alloc, taken } = poolWithAlloc(pool);
      const off = pool.encode(tr, content, ID, {}, alloc);
      t.not(off, null);
      const e = await off!;
      const inline = encodePayload(tr, content, ID, KEY);
      t.is(e.flags, inline.flags);
      t.is(e.flags & FLAG_COMPRESSED, names.includes('zstd') || names.includes('lz4') ? FLAG_COMPRESSED : 0);
      t.is(e.flags & FLAG_ENCRYPTED, names.includes('aes256gcm') ? FLAG_ENCRYPTED : 0);
      t.true(decodePayload(tr, e.flags, e.stored, content.length, ID, KEY).equals(content));
      t.true(
        taken.some((b) => b.buffer === e.stored.buffer),
        'the payload is in a buffer the caller allocated (and gives back)',
      );
    } finally {
      await pool.close();
    }
  });
}

test('incompressible content is stored raw (flags 0: the content itself); small content and a closed pool encode inline', async (t) => {
  const pool = new CodecPool(KEY);
  const tr = parseTransforms(['zstd']);
  const random = crypto.randomBytes(1 << 20);
  const e = await pool.encode(tr, random, ID, {}, poolWithAlloc(pool).alloc)!;
  t.is(e.flags, 0);
  t.true(e.stored.equals(random));
  t.is(pool.encode(tr, random.subarray(0, DECODE_INLINE_BELOW_BYTES - 1), ID, {}, poolWithAlloc(pool).alloc), null);
  await pool.close();
  t.is(pool.encode(tr, random, ID, {}, poolWithAlloc(pool).alloc), null);
});

test('the content may change once encode returned: the worker encodes the bytes as they were at the call', async (t) => {
  const pool = new CodecPool(KEY);
  try {
    const tr = parseTransforms(['zstd', 'aes256gcm']);
    const content = compressible(2 << 20);
    const want = Buffer.from(content);
    const pending = pool.encode(tr, content, ID, {}, poolWithAlloc(pool).alloc)!;
    content.fill(0);
    const e = await pending;
    t.true(decodePayload(tr, e.flags, e.stored, want.length, ID, KEY).equals(want));
  } finally {
    await pool.close();
  }
});

test('an encrypting layout with no store key is refused by the codec thread with the inline error', async (t) => {
  const pool = new CodecPool(null);
  try {
    const off = pool.encode(
      parseTransforms(['aes256gcm']),
      compressible(1 << 20),
      ID,
      { path: '/f', fileId: 7n },
      poolWithAlloc(pool).alloc,
    )!;
    const err = await t.throwsAsync(off, { message: /the layout encrypts but the store has no key loaded/ });
    t.regex(err!.message, /\/f/, 'the error names the file');
  } finally {
    await pool.close();
  }
});

test('at most ENCODES_IN_FLIGHT_MAX encodes on the codec threads at once: the next is left inline (memory stays bounded)', async (t) => {
  const pool = new CodecPool(KEY);
  try {
    const tr = parseTransforms(['zstd']);
    const content = compressible(1 << 20);
    const running = [];
    const slots = Math.min(ENCODES_IN_FLIGHT_MAX, availableParallelism()); // one thread per core, at most
    for (let i = 0; i < slots; i++) running.push(pool.encode(tr, content, ID, {}, poolWithAlloc(pool).alloc));
    t.true(running.every((p) => p !== null));
    t.is(pool.encode(tr, content, ID, {}, poolWithAlloc(pool).alloc), null);
    await Promise.all(running);
    const again = pool.encode(tr, content, ID, {}, poolWithAlloc(pool).alloc);
    t.not(again, null, 'a slot is free again once an encode settled');
    await again;
  } finally {
    await pool.close();
  }
});
