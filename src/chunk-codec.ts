// A chunk's payload through its layout's transforms (spec §3.1, DESIGN §10):
// stored = encrypt(compress(raw)), each step only when the layout names it, and the
// compression kept only when it saves space (an incompressible chunk is stored raw, bit 1
// clear). Decoding runs after the bitrot hashes verified the stored bytes (spec §9).
import { ErrorSite, FormatError } from './errors';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from './header';
import { ChunkTransforms } from './chunk-transforms';
import { compress, decompressInto } from './compression';
import { ChunkIdentity, deriveDataKey } from './chunk-cipher';
import { openPayloadInto, openedLen, sealPayload } from './payload-cipher';

export interface EncodedPayload {
  stored: Buffer;
  flags: number;
}

/**
 * raw -> stored payload and its transform flags (bits 1, 2). storeKey: needed when the layout
 * encrypts; alloc: the buffer an encrypted payload is sealed into (exactly its length).
 */
export function encodePayload(
  t: ChunkTransforms,
  raw: Uint8Array,
  id: ChunkIdentity,
  storeKey: Uint8Array | null,
  alloc: (lengthBytes: number) => Buffer = (n) => Buffer.allocUnsafe(n),
): EncodedPayload {
  let stored = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  let flags = 0;
  if (t.compression !== null) {
    const c = compress(t.compression.algo, t.compression.level, raw);
    if (c.length < raw.length) {
      stored = c;
      flags |= FLAG_COMPRESSED;
    }
  }
  if (t.encryption !== null) {
    if (storeKey === null) throw new FormatError('aes256gcm', 'the layout encrypts but the store has no key loaded');
    stored = sealPayload(deriveDataKey(storeKey, id), stored, alloc); // cipher format v2 (src/chunk-segments.ts)
    flags |= FLAG_ENCRYPTED;
  }
  return { stored, flags };
}

/** stored payload (hashes already verified) -> the contentLenBytes raw bytes. */
export function decodePayload(
  t: ChunkTransforms,
  flags: number,
  stored: Uint8Array,
  contentLenBytes: number,
  id: ChunkIdentity,
  storeKey: Uint8Array | null,
  site: ErrorSite = {},
): Buffer {
  const out = Buffer.allocUnsafe(contentLenBytes);
  decodePayloadInto(t, flags, stored, out, id, storeKey, site, (n) => Buffer.allocUnsafe(n));
  return out;
}

/**
 * stored payload (hashes already verified) -> its raw bytes, exactly target.length (content_len),
 * into target; scratch(n) lends a buffer for the decrypted payload of a chunk also compressed. The
 * tags are checked before target holds anything usable (openPayloadInto: cipher format v1 or v2).
 */
export function decodePayloadInto(
  t: ChunkTransforms,
  flags: number,
  stored: Uint8Array,
  target: Uint8Array,
  id: ChunkIdentity,
  storeKey: Uint8Array | null,
  site: ErrorSite,
  scratch: (lengthBytes: number) => Uint8Array,
): void {
  const encrypted = (flags & FLAG_ENCRYPTED) !== 0;
  const compressed = (flags & FLAG_COMPRESSED) !== 0;
  if (!encrypted && !compressed) throw new FormatError('flags', 'a decoded chunk has transform flags', site);
  if (compressed && t.compression === null)
    throw new FormatError('flags', 'chunk is compressed but its layout names no compression', site);
  let plain = stored;
  if (encrypted) {
    if (storeKey === null) throw new FormatError('aes256gcm', 'chunk is encrypted and no store key is loaded', site);
    const plainLen = openedLen(stored, site);
    if (!compressed && plainLen !== target.length)
      throw new FormatError('content_len', `decrypted ${plainLen} bytes, content_len is ${target.length}`, site);
    plain = compressed ? scratch(plainLen).subarray(0, plainLen) : target;
    openPayloadInto(deriveDataKey(storeKey, id), stored, plain, site);
  }
  if (!compressed) return;
  try {
    decompressInto(t.compression!.algo, plain, target);
  } catch (err) {
    if (err instanceof FormatError) throw new FormatError(err.field, err.message.slice(err.field.length + 2), site);
    throw err;
  }
}
