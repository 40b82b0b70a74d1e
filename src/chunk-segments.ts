// Cipher format v2 of encrypted chunk payloads (spec §3.1 bit 2, DESIGN §10): the
// plaintext (the raw or compressed chunk) cut into fixed segments, each its own AES-256-GCM message
// under the chunk version's data key, so a small read fetches, verifies (spec §9) and decrypts only
// the segments it covers, as gocryptfs does per 4 KiB block. Documented in docs/transforms.md:
//   stored  = header || segment 0 || segment 1 || ... (segment i = ciphertext i || tag i)
//   header  = magic "CFSGCMv2" (8) || segment_bytes u32 LE || nonce_base (12 random bytes)
//   nonce i = nonce_base with bytes [4, 12) XOR i (u64 LE)
//   AAD i   = plain_len u64 LE || i u64 LE || last u8 (1 on the last segment)
// The AAD binds each segment to its place and the payload's length, so a segment swapped, moved,
// dropped or cut fails its tag. A v1 payload (src/chunk-cipher.ts) starts with its random nonce:
// one whose first 8 bytes equal the magic has probability 2^-64, and v1 is no longer written.
import * as crypto from 'node:crypto';
import { DecryptError, NONCE_BYTES, TAG_BYTES } from './chunk-cipher';
import { ErrorSite, FormatError, assert } from './errors';
import { nativeOpenSegments, nativeSealSegments } from './gcm-native';

export const SEG_MAGIC = Buffer.from('CFSGCMv2', 'ascii');
export const SEG_HEADER_BYTES = SEG_MAGIC.length + 4 + NONCE_BYTES;
/**
 * Plaintext bytes per segment. Measured here (Node 20, OpenSSL AES-NI, 4 MiB chunk, best of 15):
 * opening a whole chunk cut in 4 KiB segments ran at 842 MiB/s (one cipher context per segment
 * dominates), 16 KiB at 1642, 64 KiB at 2494, one message 2785; one segment opened alone took 3.7
 * (4 KiB), 6.3 (16 KiB) and 17.4 us (64 KiB). 16 KiB keeps a random 4 KiB read near the cost of
 * a plain read (a few us of decryption, two 16 KiB bitrot blocks hashed) while sequential
 * decryption stays at 2x of 4 KiB segments; it is also the default bitrot block (spec §10).
 */
export const SEGMENT_BYTES = 16 << 10;
const SEGMENT_BYTES_MIN = 4096;
const SEGMENT_BYTES_MAX = 1 << 20;
const AAD_BYTES = 17;

/** What a v2 header and the payload's length say. */
export interface SegmentLayout {
  segmentBytes: number;
  nonceBase: Buffer;
  plainLenBytes: number;
  segmentCount: number;
}

/** The payload starts with the v2 magic (else it is a v1 payload: nonce || ciphertext || tag). */
export function isSegmented(stored: Uint8Array): boolean {
  return stored.length >= SEG_HEADER_BYTES && SEG_MAGIC.equals(stored.subarray(0, SEG_MAGIC.length));
}

function segmentCountOf(plainLenBytes: number, segmentBytes: number): number {
  return Math.max(1, Math.ceil(plainLenBytes / segmentBytes));
}

/** Stored length of a v2 payload of plainLenBytes. */
export function segmentedLen(plainLenBytes: number, segmentBytes = SEGMENT_BYTES): number {
  return SEG_HEADER_BYTES + plainLenBytes + segmentCountOf(plainLenBytes, segmentBytes) * TAG_BYTES;
}

/** The layout of a v2 payload of storedLenBytes from its header bytes (the first SEG_HEADER_BYTES). */
export function parseSegmentHeader(header: Uint8Array, storedLenBytes: number, site: ErrorSite = {}): SegmentLayout {
  if (!isSegmented(header)) throw new FormatError('aes256gcm', 'payload has no cipher format v2 header', site);
  const b = Buffer.from(header.buffer, header.byteOffset, SEG_HEADER_BYTES);
  const segmentBytes = b.readUInt32LE(SEG_MAGIC.length);
  if (segmentBytes < SEGMENT_BYTES_MIN || segmentBytes > SEGMENT_BYTES_MAX || segmentBytes % 4096 !== 0) {
    throw new FormatError(
      'aes256gcm',
      `segment_bytes ${segmentBytes} is not a multiple of 4096 in [${SEGMENT_BYTES_MIN}, ${SEGMENT_BYTES_MAX}]`,
      site,
    );
  }
  const body = storedLenBytes - SEG_HEADER_BYTES;
  const segmentCount = Math.max(1, Math.ceil(body / (segmentBytes + TAG_BYTES)));
  const plainLenBytes = body - segmentCount * TAG_BYTES;
  const lastPlain = plainLenBytes - (segmentCount - 1) * segmentBytes;
  if (body < TAG_BYTES || (lastPlain < 1 && plainLenBytes !== 0)) {
    throw new FormatError('aes256gcm', `v2 payload of ${storedLenBytes} bytes does not end in a whole segment`, site);
  }
  return { segmentBytes, nonceBase: Buffer.from(b.subarray(SEG_MAGIC.length + 4)), plainLenBytes, segmentCount };
}

/** Plaintext range [start, end) of segment i. */
export function segmentPlainRange(l: SegmentLayout, i: number): [number, number] {
  return [i * l.segmentBytes, Math.min(l.plainLenBytes, (i + 1) * l.segmentBytes)];
}

/** Stored byte offset of segment i (its ciphertext; its tag follows it). */
export function segmentStoredOffset(l: SegmentLayout, i: number): number {
  return SEG_HEADER_BYTES + i * (l.segmentBytes + TAG_BYTES);
}

function nonceOf(l: SegmentLayout, i: number): Buffer {
  const n = Buffer.from(l.nonceBase);
  n.writeBigUInt64LE(n.readBigUInt64LE(4) ^ BigInt(i), 4);
  return n;
}

function aadOf(l: SegmentLayout, i: number): Buffer {
  const a = Buffer.alloc(AAD_BYTES);
  a.writeBigUInt64LE(BigInt(l.plainLenBytes), 0);
  a.writeBigUInt64LE(BigInt(i), 8);
  a[16] = i === l.segmentCount - 1 ? 1 : 0;
  return a;
}

/** A v2 header for plain into out[0, SEG_HEADER_BYTES), and the layout it describes. */
function writeHeader(out: Buffer, plainLenBytes: number, nonceBase: Uint8Array, segmentBytes: number): SegmentLayout {
  assert(nonceBase.length === NONCE_BYTES, 'v2 nonce base is 12 bytes');
  SEG_MAGIC.copy(out, 0);
  out.writeUInt32LE(segmentBytes, SEG_MAGIC.length);
  out.set(nonceBase, SEG_MAGIC.length + 4);
  const l = parseSegmentHeader(out, out.length);
  assert(
    l.plainLenBytes === plainLenBytes && l.segmentBytes === segmentBytes,
    'v2 header describes the payload it heads',
  );
  return l;
}

/**
 * header || segments: each segment of plain sealed on its own (see the header comment), by the
 * native binding in one call (src/gcm-native.ts); sealSegmentedNode is the reference.
 */
export function sealSegmented(
  dataKey: Uint8Array,
  plain: Uint8Array,
  nonceBase: Uint8Array = crypto.randomBytes(NONCE_BYTES),
  segmentBytes = SEGMENT_BYTES,
): Buffer {
  const out = Buffer.allocUnsafe(segmentedLen(plain.length, segmentBytes));
  sealSegmentedInto(dataKey, plain, out, nonceBase, segmentBytes);
  return out;
}

/** sealSegmented into out, exactly segmentedLen(plain.length) bytes (a buffer the caller reuses). */
export function sealSegmentedInto(
  dataKey: Uint8Array,
  plain: Uint8Array,
  out: Uint8Array,
  nonceBase: Uint8Array = crypto.randomBytes(NONCE_BYTES),
  segmentBytes = SEGMENT_BYTES,
): void {
  assert(out.length === segmentedLen(plain.length, segmentBytes), 'v2 payload buffer is the sealed length');
  const b = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  const l = writeHeader(b, plain.length, nonceBase, segmentBytes);
  nativeSealSegments(dataKey, l, plain, b.subarray(SEG_HEADER_BYTES));
}

/** sealSegmented with Node's crypto (the reference the native path is tested against). */
export function sealSegmentedNode(
  dataKey: Uint8Array,
  plain: Uint8Array,
  nonceBase: Uint8Array = crypto.randomBytes(NONCE_BYTES),
  segmentBytes = SEGMENT_BYTES,
): Buffer {
  const out = Buffer.allocUnsafe(segmentedLen(plain.length, segmentBytes));
  const l = writeHeader(out, plain.length, nonceBase, segmentBytes);
  for (let i = 0; i < l.segmentCount; i++) {
    const [lo, hi] = segmentPlainRange(l, i);
    const c = crypto.createCipheriv('aes-256-gcm', dataKey, nonceOf(l, i));
    c.setAAD(aadOf(l, i));
    const at = segmentStoredOffset(l, i);
    const body = c.update(plain.subarray(lo, hi));
    body.copy(out, at);
    const fin = c.final();
    assert(body.length + fin.length === hi - lo, 'GCM: ciphertext as long as plaintext');
    fin.copy(out, at + body.length);
    c.getAuthTag().copy(out, at + hi - lo);
  }
  return out;
}

/** The stored and plaintext byte counts of segments [first, last] match the buffers given. */
function checkSegments(
  l: SegmentLayout,
  first: number,
  last: number,
  segments: Uint8Array,
  target: Uint8Array,
  site: ErrorSite,
): void {
  assert(first >= 0 && first <= last && last < l.segmentCount, 'segments inside the payload');
  const plainBytes = segmentPlainRange(l, last)[1] - segmentPlainRange(l, first)[0];
  if (segments.length !== plainBytes + (last - first + 1) * TAG_BYTES)
    throw new FormatError('aes256gcm', `${segments.length} stored bytes for segments ${first}..${last}`, site);
  if (target.length !== plainBytes)
    throw new FormatError('aes256gcm', `plaintext of ${plainBytes} bytes into a buffer of ${target.length}`, site);
}

/**
 * Segments [first, last] from `segments` (their stored bytes, starting at segment first's stored
 * offset) into target (exactly their plaintext), in one native call with no allocation
 * (src/gcm-native.ts). When a tag does not check, target is zeroed and DecryptError (naming the
 * segment) thrown: no byte of a segment that failed, or of the others, is usable.
 */
export function openSegmentsInto(
  dataKey: Uint8Array,
  l: SegmentLayout,
  first: number,
  last: number,
  segments: Uint8Array,
  target: Uint8Array,
  site: ErrorSite = {},
): void {
  checkSegments(l, first, last, segments, target, site);
  const failed = nativeOpenSegments(dataKey, l, first, last, segments, target);
  if (failed >= 0) throw new DecryptError(site, failed);
}

/** openSegmentsInto with Node's crypto (the reference the native path is tested against). */
export function openSegmentsIntoNode(
  dataKey: Uint8Array,
  l: SegmentLayout,
  first: number,
  last: number,
  segments: Uint8Array,
  target: Uint8Array,
  site: ErrorSite = {},
): void {
  checkSegments(l, first, last, segments, target, site);
  const plainLo = segmentPlainRange(l, first)[0];
  const base = segmentStoredOffset(l, first);
  const out = Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  for (let i = first; i <= last; i++) {
    const [lo, hi] = segmentPlainRange(l, i);
    const at = segmentStoredOffset(l, i) - base;
    const d = crypto.createDecipheriv('aes-256-gcm', dataKey, nonceOf(l, i));
    d.setAAD(aadOf(l, i));
    d.setAuthTag(segments.subarray(at + hi - lo, at + hi - lo + TAG_BYTES));
    const piece = d.update(segments.subarray(at, at + hi - lo));
    assert(piece.length === hi - lo, 'GCM is a stream cipher: a segment out as long as in');
    piece.copy(out, lo - plainLo);
    try {
      d.final();
    } catch {
      out.fill(0);
      throw new DecryptError(site, i);
    }
  }
}

/** A whole v2 payload into target (its plaintext, exactly); every segment's tag checked. */
export function openSegmentedInto(
  dataKey: Uint8Array,
  stored: Uint8Array,
  target: Uint8Array,
  site: ErrorSite = {},
): void {
  const l = parseSegmentHeader(stored, stored.length, site);
  openSegmentsInto(dataKey, l, 0, l.segmentCount - 1, stored.subarray(SEG_HEADER_BYTES), target, site);
}

/** Plaintext length of a v2 payload. */
export function segmentedPlainLen(stored: Uint8Array, site: ErrorSite = {}): number {
  return parseSegmentHeader(stored, stored.length, site).plainLenBytes;
}
