// AES-256-GCM from our own N-API addon (native/cipher/, built into the same module as the
// Reed-Solomon kernels; OpenSSL's EVP functions come from the Node binary). The point is memory:
// Node's Decipher.update allocates and copies its output on every call and needs a context per
// segment; these calls open or seal every segment of a range in one call, straight into a buffer
// the caller owns (docs/transforms.md). Node's crypto (src/chunk-segments.ts,
// src/chunk-cipher.ts *Node functions) stays as the independent reference in tests.
import { assert } from './errors';
import { rsNative } from './rs-native';

interface GcmAddon {
  gcmOpenSegments(
    dataKey: Uint8Array,
    nonceBase: Uint8Array,
    plainLenBytes: number,
    segmentBytes: number,
    first: number,
    last: number,
    segments: Uint8Array,
    target: Uint8Array,
  ): number;
  gcmSealSegments(
    dataKey: Uint8Array,
    nonceBase: Uint8Array,
    plainLenBytes: number,
    segmentBytes: number,
    plain: Uint8Array,
    out: Uint8Array,
  ): void;
  gcmOpenMessage(
    dataKey: Uint8Array,
    nonce: Uint8Array,
    body: Uint8Array,
    tag: Uint8Array,
    target: Uint8Array,
  ): boolean;
}

// The same module object rs-native.ts loads; it also carries the cipher exports.
function addon(): GcmAddon {
  return rsNative() as unknown as GcmAddon;
}

/** A v2 payload's geometry, as the native calls take it (src/chunk-segments.ts SegmentLayout). */
export interface GcmGeometry {
  nonceBase: Uint8Array;
  plainLenBytes: number;
  segmentBytes: number;
}

/**
 * Segments [first, last] (their stored bytes from segment first's offset) into target, exactly
 * their plaintext. Returns -1, or the index of the first segment whose tag fails: target is zeroed
 * then, and nothing of it may be used.
 */
export function nativeOpenSegments(
  dataKey: Uint8Array,
  g: GcmGeometry,
  first: number,
  last: number,
  segments: Uint8Array,
  target: Uint8Array,
): number {
  const failed = addon().gcmOpenSegments(
    dataKey,
    g.nonceBase,
    g.plainLenBytes,
    g.segmentBytes,
    first,
    last,
    segments,
    target,
  );
  assert(
    failed === -1 || (Number.isInteger(failed) && failed >= first && failed <= last),
    'gcmOpenSegments returns -1 or a segment in range',
  );
  return failed;
}

/** Every segment of plain sealed into out (the payload after its header: ciphertext || tag per segment). */
export function nativeSealSegments(dataKey: Uint8Array, g: GcmGeometry, plain: Uint8Array, out: Uint8Array): void {
  assert(plain.length === g.plainLenBytes, 'sealing the plaintext the geometry describes');
  addon().gcmSealSegments(dataKey, g.nonceBase, g.plainLenBytes, g.segmentBytes, plain, out);
}

/** One message without AAD (cipher format v1) into target; false when its tag fails (target zeroed). */
export function nativeOpenMessage(
  dataKey: Uint8Array,
  nonce: Uint8Array,
  body: Uint8Array,
  tag: Uint8Array,
  target: Uint8Array,
): boolean {
  return addon().gcmOpenMessage(dataKey, nonce, body, tag, target);
}
