// Cipher format v2 (src/chunk-segments.ts, docs/transforms.md): segments sealed on their own, bound
// to their place and the payload's length; any tampering refused with no plaintext returned; v1
// payloads still open through the same entry point (src/payload-cipher.ts).
import test from 'ava';
import * as crypto from 'node:crypto';
import { DecryptError, TAG_BYTES, deriveDataKey, seal } from '../../src/chunk-cipher';
import {
  SEGMENT_BYTES,
  SEG_HEADER_BYTES,
  isSegmented,
  openSegmentedInto,
  openSegmentsInto,
  parseSegmentHeader,
  sealSegmented,
  segmentStoredOffset,
  segmentedLen,
} from '../../src/chunk-segments';
import { openPayload, openedLen, sealPayload } from '../../src/payload-cipher';
import { decodePayload, encodePayload } from '../../src/chunk-codec';
import { FormatError } from '../../src/errors';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from '../../src/header';
import { parseTransforms } from '../../src/chunk-transforms';

const storeKey = Buffer.alloc(32, 7);
const id = { fileId: 12n, chunkIndex: 3n, version: 5n };
const key = deriveDataKey(storeKey, id);
const S = SEGMENT_BYTES;
const plain = crypto.randomBytes(5 * S + 1234); // 6 segments, the last short
const stored = sealSegmented(key, plain);
const segLen = S + TAG_BYTES;

/** Opening must fail with DecryptError (or a FormatError for a bad shape) and leave no plaintext in the target. */
function refused(t: import('ava').ExecutionContext, bytes: Buffer, what: string): void {
  const target = Buffer.alloc(Math.max(0, bytes.length - SEG_HEADER_BYTES), 0xee);
  const err = t.throws(() => openSegmentedInto(key, bytes, target.subarray(0, plain.length)), undefined, what);
  t.true(err instanceof DecryptError || err instanceof FormatError, `${what}: ${String(err)}`);
  t.false(target.subarray(0, plain.length).includes(plain.subarray(0, 64)), `${what}: no plaintext left in the target`);
  t.throws(() => openPayload(key, bytes), undefined, `${what}: openPayload refuses too`);
}

test('v2 round trip: header, length, every segment, and a range of segments alone', (t) => {
  t.true(isSegmented(stored));
  t.is(stored.length, segmentedLen(plain.length));
  t.is(stored.length, SEG_HEADER_BYTES + plain.length + 6 * TAG_BYTES);
  const l = parseSegmentHeader(stored, stored.length);
  t.like(l, { segmentBytes: S, plainLenBytes: plain.length, segmentCount: 6 });
  t.true(openPayload(key, stored).equals(plain));
  t.is(openedLen(stored), plain.length);
  // Segments 2..3 from their stored bytes alone (what a random read fetches).
  const part = Buffer.alloc(2 * S);
  openSegmentsInto(key, l, 2, 3, stored.subarray(segmentStoredOffset(l, 2), segmentStoredOffset(l, 4)), part);
  t.true(part.equals(plain.subarray(2 * S, 4 * S)));
  const lastPart = Buffer.alloc(1234);
  openSegmentsInto(key, l, 5, 5, stored.subarray(segmentStoredOffset(l, 5)), lastPart);
  t.true(lastPart.equals(plain.subarray(5 * S)));
  // Each payload draws its own nonce base: the same plaintext seals differently.
  t.false(sealSegmented(key, plain).subarray(SEG_HEADER_BYTES).equals(stored.subarray(SEG_HEADER_BYTES)));
});

test('empty and exactly-one-segment payloads', (t) => {
  for (const n of [0, 1, S, S + 1]) {
    const p = crypto.randomBytes(n);
    const s = sealSegmented(key, p);
    t.true(openPayload(key, s).equals(p), `${n} bytes`);
  }
});

test('one flipped byte in one segment is refused, no plaintext returned', (t) => {
  for (const at of [
    SEG_HEADER_BYTES + 5,
    segmentStoredOffset(parseSegmentHeader(stored, stored.length), 3) + 100,
    stored.length - 1,
  ]) {
    const bad = Buffer.from(stored);
    bad[at] ^= 0x01;
    refused(t, bad, `byte ${at} flipped`);
  }
  // The range reader refuses the tampered segment on its own as well.
  const l = parseSegmentHeader(stored, stored.length);
  const bad = Buffer.from(stored);
  bad[segmentStoredOffset(l, 1) + 7] ^= 0x80;
  const out = Buffer.alloc(S, 0xee);
  t.throws(
    () => openSegmentsInto(key, l, 1, 1, bad.subarray(segmentStoredOffset(l, 1), segmentStoredOffset(l, 2)), out),
    { instanceOf: DecryptError },
  );
  t.true(
    out.every((b) => b === 0),
    'target zeroed',
  );
});

test('two segments swapped, a segment moved onto another, or a header field changed: refused', (t) => {
  const l = parseSegmentHeader(stored, stored.length);
  const swapped = Buffer.from(stored);
  stored.copy(swapped, segmentStoredOffset(l, 1), segmentStoredOffset(l, 2), segmentStoredOffset(l, 3));
  stored.copy(swapped, segmentStoredOffset(l, 2), segmentStoredOffset(l, 1), segmentStoredOffset(l, 2));
  refused(t, swapped, 'segments 1 and 2 swapped');
  // Segment 2's stored bytes offered as segment 1 to the range reader (a misplaced read).
  t.throws(
    () =>
      openSegmentsInto(
        key,
        l,
        1,
        1,
        stored.subarray(segmentStoredOffset(l, 2), segmentStoredOffset(l, 3)),
        Buffer.alloc(S),
      ),
    { instanceOf: DecryptError },
  );
  const nonce = Buffer.from(stored);
  nonce[SEG_HEADER_BYTES - 1] ^= 1;
  refused(t, nonce, 'nonce base changed');
  const size = Buffer.from(stored);
  size.writeUInt32LE(2 * S, 8);
  refused(t, size, 'segment_bytes changed');
});

test('truncation: the last segment cut, dropped, or a whole-segment prefix kept: refused', (t) => {
  refused(t, stored.subarray(0, stored.length - 100), 'last segment cut short');
  const l = parseSegmentHeader(stored, stored.length);
  refused(t, stored.subarray(0, segmentStoredOffset(l, 5)), 'last segment dropped (5 whole segments left)');
  refused(t, stored.subarray(0, segmentStoredOffset(l, 1)), 'only segment 0 left');
  // A whole payload of one segment: dropping nothing but the tag's end is a bad shape.
  refused(t, stored.subarray(0, SEG_HEADER_BYTES + 8), 'shorter than one tag');
});

test('a wrong key is refused, no plaintext returned', (t) => {
  const other = deriveDataKey(Buffer.alloc(32, 8), id);
  const target = Buffer.alloc(plain.length, 0xee);
  t.throws(() => openSegmentedInto(other, stored, target), { instanceOf: DecryptError });
  t.true(target.every((b) => b === 0));
  const nextVersion = deriveDataKey(storeKey, { ...id, version: 6n });
  t.throws(() => openPayload(nextVersion, stored), { instanceOf: DecryptError }, "another version's data key");
});

test('v1 payloads (one GCM message) still open; new payloads are v2; the codec reads both', (t) => {
  const v1 = seal(key, plain);
  t.false(isSegmented(v1));
  t.true(openPayload(key, v1).equals(plain));
  t.true(isSegmented(sealPayload(key, plain)));
  const t1 = parseTransforms(['aes256gcm']);
  t.true(decodePayload(t1, FLAG_ENCRYPTED, v1, plain.length, id, storeKey).equals(plain), 'v1 through the codec');
  const enc = encodePayload(t1, plain, id, storeKey);
  t.true(isSegmented(enc.stored));
  t.true(decodePayload(t1, enc.flags, enc.stored, plain.length, id, storeKey).equals(plain), 'v2 through the codec');
  // Compressed then encrypted: the v2 plaintext is the compressed payload.
  const tz = parseTransforms(['zstd', 'aes256gcm']);
  const text = Buffer.from('segment '.repeat(100_000));
  const z = encodePayload(tz, text, id, storeKey);
  t.is(z.flags, FLAG_COMPRESSED | FLAG_ENCRYPTED);
  t.true(isSegmented(z.stored));
  t.true(decodePayload(tz, z.flags, z.stored, text.length, id, storeKey).equals(text));
  const bad = Buffer.from(z.stored);
  bad[bad.length - 20] ^= 4;
  t.throws(() => decodePayload(tz, z.flags, bad, text.length, id, storeKey), { instanceOf: DecryptError });
});
