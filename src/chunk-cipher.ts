// Chunk payload encryption (spec §3.1 bit 2; DESIGN §10): AES-256-GCM with a data key per
// chunk version. Documented for other decoders in docs/transforms.md:
//   data_key = HKDF-SHA256(ikm = store key (32 bytes), salt = "chunkfs data key v1",
//                          info = file_id u64 LE || chunk_index u64 LE || version u64 LE, 32 bytes)
//   cipher format v1: stored = nonce (12 random bytes) || AES-256-GCM ciphertext || tag (16 bytes),
//   no AAD. Still read; new payloads are cipher format v2 (src/chunk-segments.ts, 16 KiB segments
//   sealed on their own under the same data key), src/payload-cipher.ts tells them apart.
// The nonce is random per encryption, so a version written twice (a write cut by a crash and
// redone) never reuses a nonce under its key; each key encrypts a handful of payloads at most.
import * as crypto from 'node:crypto';
import { ErrorSite, FormatError, assert } from './errors';
import { nativeOpenMessage } from './gcm-native';

export const STORE_KEY_BYTES = 32;
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
export const CIPHER_OVERHEAD_BYTES = NONCE_BYTES + TAG_BYTES;
/** Decrypt in slices of this size (updateInto). */
const CIPHER_SLICE_BYTES = 64 << 10; // below glibc's mmap threshold (128 KiB): the cipher's buffers come from the heap, not fresh pages
const HKDF_SALT = Buffer.from('chunkfs data key v1', 'ascii');

/** The stored payload does not authenticate under its data key: a wrong key or forged bytes. */
export class DecryptError extends FormatError {
  /** The cipher format v2 segment whose tag failed; undefined for a v1 payload (one message). */
  readonly segment: number | undefined;
  constructor(site: ErrorSite, segment?: number) {
    const where = segment === undefined ? '' : ` in segment ${segment}`;
    super(
      'aes256gcm',
      `authentication tag mismatch${where}: wrong store key, or the stored payload was altered after it was hashed`,
      site,
    );
    this.segment = segment;
  }
}

export interface ChunkIdentity {
  fileId: bigint;
  chunkIndex: bigint;
  version: bigint;
}

/** The data key of one chunk version (HKDF-SHA256, see the header comment). */
export function deriveDataKey(storeKey: Uint8Array, id: ChunkIdentity): Buffer {
  if (storeKey.length !== STORE_KEY_BYTES)
    throw new FormatError('store key', `must be ${STORE_KEY_BYTES} bytes, got ${storeKey.length}`);
  const info = Buffer.alloc(24);
  info.writeBigUInt64LE(id.fileId, 0);
  info.writeBigUInt64LE(id.chunkIndex, 8);
  info.writeBigUInt64LE(id.version, 16);
  return Buffer.from(crypto.hkdfSync('sha256', storeKey, HKDF_SALT, info, 32));
}

/** nonce || ciphertext || tag. */
export function seal(
  dataKey: Uint8Array,
  plain: Uint8Array,
  nonce: Uint8Array = crypto.randomBytes(NONCE_BYTES),
): Buffer {
  const c = crypto.createCipheriv('aes-256-gcm', dataKey, nonce);
  const out = Buffer.allocUnsafe(NONCE_BYTES + plain.length + TAG_BYTES);
  out.set(nonce, 0);
  const body = c.update(plain);
  body.copy(out, NONCE_BYTES);
  const fin = c.final();
  fin.copy(out, NONCE_BYTES + body.length);
  c.getAuthTag().copy(out, NONCE_BYTES + plain.length);
  return out;
}

/** The plaintext, only after the tag checked (no byte is returned otherwise). */
export function open(dataKey: Uint8Array, stored: Uint8Array, site: ErrorSite = {}): Buffer {
  const out = Buffer.allocUnsafe(Math.max(0, stored.length - CIPHER_OVERHEAD_BYTES));
  openInto(dataKey, stored, out, site);
  return out;
}

/**
 * The plaintext into target (stored.length - nonce - tag bytes), only usable after this returns:
 * when the tag does not check, target is zeroed and DecryptError thrown. Decrypted by the native
 * binding straight into target (src/gcm-native.ts); openIntoNode is the reference.
 */
export function openInto(dataKey: Uint8Array, stored: Uint8Array, target: Uint8Array, site: ErrorSite = {}): void {
  const body = bodyOf(stored, target, site);
  if (
    !nativeOpenMessage(
      dataKey,
      stored.subarray(0, NONCE_BYTES),
      body,
      stored.subarray(stored.length - TAG_BYTES),
      target,
    )
  )
    throw new DecryptError(site);
}

function bodyOf(stored: Uint8Array, target: Uint8Array, site: ErrorSite): Uint8Array {
  if (stored.length < CIPHER_OVERHEAD_BYTES)
    throw new FormatError('aes256gcm', `payload of ${stored.length} bytes is shorter than nonce + tag`, site);
  const body = stored.subarray(NONCE_BYTES, stored.length - TAG_BYTES);
  if (target.length !== body.length)
    throw new FormatError('aes256gcm', `plaintext of ${body.length} bytes into a buffer of ${target.length}`, site);
  return body;
}

/**
 * openInto with Node's crypto (the reference the native path is tested against). Fed to the cipher
 * in slices: for each update Node allocates a fresh buffer one byte longer than its input and
 * copies the result into another of the exact length; on a whole 4 MiB chunk that is two fresh 4
 * MiB buffers (page faults) and a 4 MiB copy out of cache, on a slice both stay small and in cache.
 */
export function openIntoNode(dataKey: Uint8Array, stored: Uint8Array, target: Uint8Array, site: ErrorSite = {}): void {
  const body = bodyOf(stored, target, site);
  const d = crypto.createDecipheriv('aes-256-gcm', dataKey, stored.subarray(0, NONCE_BYTES));
  d.setAuthTag(stored.subarray(stored.length - TAG_BYTES));
  const out = Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  for (let at = 0; at < body.length; at += CIPHER_SLICE_BYTES) {
    const piece = d.update(body.subarray(at, Math.min(body.length, at + CIPHER_SLICE_BYTES)));
    assert(
      piece.length === Math.min(CIPHER_SLICE_BYTES, body.length - at),
      'GCM is a stream cipher: each slice out as long as in',
    );
    piece.copy(out, at);
  }
  try {
    d.final();
  } catch {
    out.fill(0);
    throw new DecryptError(site);
  }
}
