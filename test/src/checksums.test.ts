// CRC32C (header_crc32c, needle data_crc32c; DESIGN §3) and xxh3_64 (path fan-out,
// placement) against published check values.
import test from 'ava';
import { crc32c } from '../../src/crc32c';
import { u64le, xxh3_64 } from '../../src/xxh3';
import { prng, randomBytes } from './fixtures';

test('CRC32C check value of "123456789" is 0xE3069283', (t) => {
  t.is(crc32c(Buffer.from('123456789', 'ascii')), 0xe3069283);
  t.is(crc32c(Buffer.alloc(0)), 0);
  t.is(crc32c(Buffer.alloc(32)), 0x8a9136aa); // RFC 3720 B.4: 32 bytes of zeros
  t.is(crc32c(Buffer.alloc(32, 0xff)), 0x62a8ab43); // RFC 3720 B.4: 32 bytes of 0xff
});

test('CRC32C continues across pieces', (t) => {
  const data = randomBytes(prng(1), 10000);
  t.is(crc32c(data.subarray(3000), crc32c(data.subarray(0, 3000))), crc32c(data));
});

/** xxHash's sanity buffer (xxhsum tests): byteGen = PRIME32; p[i] = byteGen >> 56; byteGen *= PRIME64. */
function sanityBuffer(n: number): Buffer {
  const out = Buffer.alloc(n);
  let gen = 2654435761n;
  for (let i = 0; i < n; i++) {
    out[i] = Number(gen >> 56n);
    gen = (gen * 11400714785074694797n) & ((1n << 64n) - 1n);
  }
  return out;
}

test('xxh3_64 (seed 0) matches published vectors', (t) => {
  t.is(xxh3_64(Buffer.alloc(0)), 0x2d06800538d394c2n);
  t.is(xxh3_64(Buffer.from('a')), 0xe6c632b61e964e1fn);
  t.is(xxh3_64(Buffer.from('abc')), 0x78af5f94892f3950n);
  // xxhsum sanity checks, one per length class
  const vectors: Array<[number, bigint]> = [
    [1, 0xc44bdff4074eecdbn],
    [6, 0x27b56a84cd2d7325n],
    [12, 0xa713daf0dfbb77e7n],
    [24, 0xa3fe70bf9d3510ebn],
    [48, 0x397da259ecba1f11n],
  ];
  for (const [n, h] of vectors) t.is(xxh3_64(sanityBuffer(n)), h, `sanity buffer of ${n}`);
});

test('u64le is little-endian', (t) => {
  t.is(u64le(0x0102030405060708n).toString('hex'), '0807060504030201');
  t.is(u64le(-1n).toString('hex'), 'ffffffffffffffff');
});
