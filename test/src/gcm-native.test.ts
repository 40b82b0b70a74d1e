// The native AES-256-GCM binding (native/cipher/, src/gcm-native.ts) against Node's crypto, the
// reference (src/chunk-segments.ts and src/chunk-cipher.ts *Node functions): the same bytes sealed
// and opened both ways, byte for byte; a flipped byte or tag refused on the native path with the
// typed error naming the chunk and the segment, and no plaintext left in the target.
import test from 'ava';
import * as crypto from 'node:crypto';
import {
  DecryptError,
  NONCE_BYTES,
  TAG_BYTES,
  deriveDataKey,
  openInto,
  openIntoNode,
  seal,
} from '../../src/chunk-cipher';
import {
  SEGMENT_BYTES,
  SEG_HEADER_BYTES,
  openSegmentsInto,
  openSegmentsIntoNode,
  parseSegmentHeader,
  sealSegmented,
  sealSegmentedNode,
  segmentStoredOffset,
} from '../../src/chunk-segments';
import { nativeOpenSegments } from '../../src/gcm-native';

const key = deriveDataKey(Buffer.alloc(32, 3), { fileId: 9n, chunkIndex: 2n, version: 4n });
const site = { fileId: 9n, chunkIndex: 2n, version: 4n };
const S = SEGMENT_BYTES;
const LENGTHS = [0, 1, 4095, S - 1, S, S + 1, 3 * S + 77, 256 * S];

test('native sealing equals Node sealing byte for byte (same nonce base), at every segment boundary', (t) => {
  for (const n of LENGTHS) {
    const plain = crypto.randomBytes(n);
    const base = crypto.randomBytes(NONCE_BYTES);
    t.true(sealSegmented(key, plain, base).equals(sealSegmentedNode(key, plain, base)), `${n} bytes`);
  }
  const plain = crypto.randomBytes(5 * 4096 + 3);
  const base = crypto.randomBytes(NONCE_BYTES);
  t.true(sealSegmented(key, plain, base, 4096).equals(sealSegmentedNode(key, plain, base, 4096)), '4 KiB segments');
});

test('native opening equals Node opening, whole payloads and every range of segments', (t) => {
  for (const n of LENGTHS) {
    const plain = crypto.randomBytes(n);
    const stored = sealSegmentedNode(key, plain);
    const l = parseSegmentHeader(stored, stored.length);
    const a = Buffer.alloc(n, 1);
    const b = Buffer.alloc(n, 2);
    openSegmentsInto(key, l, 0, l.segmentCount - 1, stored.subarray(SEG_HEADER_BYTES), a);
    openSegmentsIntoNode(key, l, 0, l.segmentCount - 1, stored.subarray(SEG_HEADER_BYTES), b);
    t.true(a.equals(plain) && b.equals(plain), `${n} bytes`);
  }
  const plain = crypto.randomBytes(5 * S + 1234);
  const stored = sealSegmented(key, plain);
  const l = parseSegmentHeader(stored, stored.length);
  for (let first = 0; first < l.segmentCount; first++) {
    for (let last = first; last < l.segmentCount; last++) {
      const lo = first * S;
      const hi = Math.min(plain.length, (last + 1) * S);
      const bytes = stored.subarray(
        segmentStoredOffset(l, first),
        segmentStoredOffset(l, last) + hi - last * S + TAG_BYTES,
      );
      const a = Buffer.alloc(hi - lo);
      openSegmentsInto(key, l, first, last, bytes, a);
      t.true(a.equals(plain.subarray(lo, hi)), `segments ${first}..${last}`);
    }
  }
});

test('v1 messages: native opening equals Node opening; a flipped tag is refused', (t) => {
  for (const n of [0, 1, 65536, 65537, 4 << 20]) {
    const plain = crypto.randomBytes(n);
    const stored = seal(key, plain);
    const a = Buffer.alloc(n);
    const b = Buffer.alloc(n);
    openInto(key, stored, a);
    openIntoNode(key, stored, b);
    t.true(a.equals(plain) && b.equals(plain), `${n} bytes`);
  }
  const plain = crypto.randomBytes(100_000);
  const bad = seal(key, plain);
  bad[bad.length - 1] ^= 1;
  const target = Buffer.alloc(plain.length);
  const err = t.throws(() => openInto(key, bad, target, site));
  t.true(err instanceof DecryptError);
  t.true(
    target.every((x) => x === 0),
    'target zeroed',
  );
});

test('a flipped ciphertext byte or tag byte fails on the native path: DecryptError naming chunk and segment, target zeroed', (t) => {
  const plain = crypto.randomBytes(6 * S);
  const stored = sealSegmented(key, plain);
  const l = parseSegmentHeader(stored, stored.length);
  for (const [what, at] of [
    ['ciphertext', segmentStoredOffset(l, 3) + 100],
    ['tag', segmentStoredOffset(l, 4) + S + 5],
  ] as const) {
    const bad = Buffer.from(stored);
    bad[at] ^= 0x40;
    const target = Buffer.alloc(plain.length, 0xee);
    const err = t.throws(
      () => openSegmentsInto(key, l, 0, l.segmentCount - 1, bad.subarray(SEG_HEADER_BYTES), target, site),
      undefined,
      what,
    );
    t.true(err instanceof DecryptError, what);
    const segment = what === 'ciphertext' ? 3 : 4;
    t.is((err as DecryptError).segment, segment, what);
    t.regex(err!.message, new RegExp(`tag mismatch in segment ${segment}: .*\\(file 9, chunk 2, version 4\\)`), what);
    t.true(
      target.every((x) => x === 0),
      `${what}: target zeroed, the segments before the bad one included`,
    );
    // The Node reference agrees on which segment fails.
    const ref = t.throws(() =>
      openSegmentsIntoNode(
        key,
        l,
        0,
        l.segmentCount - 1,
        bad.subarray(SEG_HEADER_BYTES),
        Buffer.alloc(plain.length),
        site,
      ),
    );
    t.is((ref as DecryptError).segment, segment, `${what}: Node reference`);
  }
  // A wrong key fails the first segment.
  const other = deriveDataKey(Buffer.alloc(32, 4), site);
  t.is(
    nativeOpenSegments(other, l, 0, l.segmentCount - 1, stored.subarray(SEG_HEADER_BYTES), Buffer.alloc(plain.length)),
    0,
  );
});

test('the native binding refuses bad shapes before touching memory', (t) => {
  const plain = crypto.randomBytes(2 * S);
  const stored = sealSegmented(key, plain);
  const l = parseSegmentHeader(stored, stored.length);
  const segs = stored.subarray(SEG_HEADER_BYTES);
  t.throws(() => nativeOpenSegments(key, l, 0, 1, segs.subarray(1), Buffer.alloc(2 * S)), {
    message: /stored bytes do not match/,
  });
  t.throws(() => nativeOpenSegments(key, l, 0, 1, segs, Buffer.alloc(2 * S - 1)), { message: /plaintext length/ });
  t.throws(() => nativeOpenSegments(key, l, 0, 2, segs, Buffer.alloc(2 * S)), { message: /outside the payload/ });
  t.throws(() => nativeOpenSegments(key, l, 1, 0, segs, Buffer.alloc(0)), { message: /outside the payload/ });
  t.throws(() => nativeOpenSegments(key.subarray(1), l, 0, 1, segs, Buffer.alloc(2 * S)), { message: /32-byte/ });
  const overlapping = Buffer.from(segs);
  t.throws(
    () => nativeOpenSegments(key, l, 0, 0, overlapping.subarray(0, S + TAG_BYTES), overlapping.subarray(8, 8 + S)),
    { message: /overlaps/ },
  );
});
