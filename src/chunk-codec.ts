// A chunk's payload through its layout's transforms (spec §3.1, DESIGN §10):
// stored = encrypt(compress(raw)), each step only when the layout names it, and the
// compression kept only when it saves space (an incompressible chunk is stored raw, bit 1
// clear). Decoding runs after the bitrot hashes verified the stored bytes (spec §9).
import { ErrorSite, FormatError } from './errors';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from './header';
import { ChunkTransforms } from './chunk-transforms';
import { compress, decompress } from './compression';
import { ChunkIdentity, deriveDataKey, open, seal } from './chunk-cipher';

export interface EncodedPayload { stored: Buffer; flags: number }

/** raw -> stored payload and its transform flags (bits 1, 2). storeKey: needed when the layout encrypts. */
export function encodePayload(t: ChunkTransforms, raw: Uint8Array, id: ChunkIdentity, storeKey: Uint8Array | null): EncodedPayload {
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
    stored = seal(deriveDataKey(storeKey, id), stored);
    flags |= FLAG_ENCRYPTED;
  }
  return { stored, flags };
}

/** stored payload (hashes already verified) -> the contentLenBytes raw bytes. */
export function decodePayload(t: ChunkTransforms, flags: number, stored: Uint8Array, contentLenBytes: number, id: ChunkIdentity, storeKey: Uint8Array | null, site: ErrorSite = {}): Buffer {
  let out = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  if ((flags & FLAG_ENCRYPTED) !== 0) {
    if (storeKey === null) throw new FormatError('aes256gcm', 'chunk is encrypted and no store key is loaded', site);
    out = open(deriveDataKey(storeKey, id), out, site);
  }
  if ((flags & FLAG_COMPRESSED) !== 0) {
    if (t.compression === null) throw new FormatError('flags', 'chunk is compressed but its layout names no compression', site);
    out = decompress(t.compression.algo, out, contentLenBytes);
  }
  if (out.length !== contentLenBytes) throw new FormatError('content_len', `decoded ${out.length} bytes, content_len is ${contentLenBytes}`, site);
  return out;
}
