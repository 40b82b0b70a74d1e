// An encrypted chunk payload in either cipher format (docs/transforms.md): v2 (segmented,
// src/chunk-segments.ts) when it starts with the v2 magic, else v1 (one AES-256-GCM message,
// src/chunk-cipher.ts). New payloads are v2; v1 payloads written before stay readable.
import { CIPHER_OVERHEAD_BYTES, openInto } from './chunk-cipher';
import { isSegmented, openSegmentedInto, sealSegmentedInto, segmentedLen, segmentedPlainLen } from './chunk-segments';
import { ErrorSite } from './errors';

/** The payload of plain as new writes store it (v2), in a buffer from alloc (exactly its length). */
export function sealPayload(
  dataKey: Uint8Array,
  plain: Uint8Array,
  alloc: (lengthBytes: number) => Buffer = (n) => Buffer.allocUnsafe(n),
): Buffer {
  const out = alloc(segmentedLen(plain.length));
  sealSegmentedInto(dataKey, plain, out);
  return out;
}

/** Plaintext length of an encrypted payload (either format). */
export function openedLen(stored: Uint8Array, site: ErrorSite = {}): number {
  return isSegmented(stored) ? segmentedPlainLen(stored, site) : Math.max(0, stored.length - CIPHER_OVERHEAD_BYTES);
}

/** The plaintext into target (openedLen bytes), every tag checked first (DecryptError, target zeroed, when one fails). */
export function openPayloadInto(
  dataKey: Uint8Array,
  stored: Uint8Array,
  target: Uint8Array,
  site: ErrorSite = {},
): void {
  if (isSegmented(stored)) openSegmentedInto(dataKey, stored, target, site);
  else openInto(dataKey, stored, target, site);
}

/** The plaintext of an encrypted payload (either format), only after its tags checked. */
export function openPayload(dataKey: Uint8Array, stored: Uint8Array, site: ErrorSite = {}): Buffer {
  const out = Buffer.allocUnsafe(openedLen(stored, site));
  openPayloadInto(dataKey, stored, out, site);
  return out;
}
