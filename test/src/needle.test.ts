import test from 'ava';
import { crc32c } from '../../src/crc32c';
import { ChunkfsError, FormatError } from '../../src/errors';
import { NEEDLE_HEADER_BYTES, decodeNeedleHeader, encodeNeedle, needleSpanBytes } from '../../src/needle';
import { prng, randomBytes } from './fixtures';

test('needle bytes follow spec §11.2', (t) => {
  const data = Buffer.from('hello, needle');
  const n = encodeNeedle(0x0102030405060708n, 0xcafebabe, data);
  t.is(n.length, 48); // 32 + 13 -> 45 -> aligned to 8
  t.deepEqual([...n.subarray(0, 4)], [0x52, 0x46, 0x4e, 0x44]);
  t.is(n.readUInt32LE(4), 0);
  t.is(n.readBigUInt64LE(8), 0x0102030405060708n);
  t.is(n.readUInt32LE(16), 13);
  t.is(n.readUInt32LE(20), 0xcafebabe);
  t.is(n.readUInt32LE(24), crc32c(data));
  t.is(n.readUInt32LE(28), 0);
  t.true(n.subarray(32, 45).equals(data));
  t.true(
    n.subarray(45).every((x) => x === 0),
    'pad is zero',
  );
  t.deepEqual(decodeNeedleHeader(n), {
    flags: 0,
    fileId: 0x0102030405060708n,
    dataLenBytes: 13,
    cookie: 0xcafebabe,
    dataCrc32c: crc32c(data),
  });
});

test('span and alignment', (t) => {
  t.is(needleSpanBytes(0), 32);
  t.is(needleSpanBytes(1), 40);
  t.is(needleSpanBytes(8), 40);
  t.is(needleSpanBytes(9, 16), 48);
  t.is(encodeNeedle(1n, 1, Buffer.alloc(100), 64).length, 192);
});

test('malformed needle headers are FormatErrors naming the field', (t) => {
  const n = encodeNeedle(9n, 7, Buffer.alloc(10, 1));
  t.is(t.throws(() => decodeNeedleHeader(n.subarray(0, 31)), { instanceOf: FormatError }).field, 'needle_header');
  const badMagic = Buffer.from(n);
  badMagic[3] = 0x45;
  t.is(t.throws(() => decodeNeedleHeader(badMagic), { instanceOf: FormatError }).field, 'magic');
  const badFlags = Buffer.from(n);
  badFlags.writeUInt32LE(8, 4);
  t.is(t.throws(() => decodeNeedleHeader(badFlags), { instanceOf: FormatError }).field, 'flags');
  t.is(t.throws(() => encodeNeedle(1n, -1, Buffer.alloc(1)), { instanceOf: FormatError }).field, 'cookie');
  t.is(t.throws(() => encodeNeedle(1n << 64n, 1, Buffer.alloc(1)), { instanceOf: FormatError }).field, 'file_id');
});

test('fuzz: decodeNeedleHeader only throws ChunkfsError', (t) => {
  const rand = prng(5);
  const valid = encodeNeedle(77n, 1234, randomBytes(rand, 50));
  let rejected = 0;
  for (let i = 0; i < 3000; i++) {
    const b = i % 2 === 0 ? randomBytes(rand, rand() % 64) : Buffer.from(valid);
    if (i % 2 === 1) b[rand() % NEEDLE_HEADER_BYTES] = rand() & 0xff;
    try {
      decodeNeedleHeader(b);
    } catch (e) {
      rejected++;
      if (!(e instanceof ChunkfsError)) t.fail(`untyped throw: ${String(e)}`);
    }
  }
  t.true(rejected > 1500);
});
