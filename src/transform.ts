// Chunk payload transforms (spec §3.1): stored = encrypt(compress(raw)); bitrot
// hashes cover the stored bytes. The algorithms and their parameters are named in
// the spec object (params.json "transform", the Layout) so any decoder can undo them.
// compression "deflate-raw" = RFC 1951 raw DEFLATE (zlib, given level);
// encryption "aes-256-ctr" = AES-256 in CTR mode, 128-bit big-endian counter from iv.
import * as crypto from 'node:crypto';
import * as zlib from 'node:zlib';
import { FormatError } from './errors';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from './header';

export interface CompressionSpec {
  algo: 'deflate-raw';
  level: number;
}
export interface EncryptionSpec {
  algo: 'aes-256-ctr';
  key: string;
  iv: string;
}
export type TransformSpec = 'none' | { compression?: CompressionSpec; encryption?: EncryptionSpec };

const INFLATE_BYTES_MAX = 1 << 30; // bound on a decompressed chunk

function checkSpec(spec: TransformSpec): void {
  if (spec === 'none') return;
  if (typeof spec !== 'object' || spec === null)
    throw new FormatError('transform', `unknown transform ${JSON.stringify(spec)}`);
  const c = spec.compression;
  if (c !== undefined) {
    if (c.algo !== 'deflate-raw') throw new FormatError('transform.compression.algo', `unknown ${String(c.algo)}`);
    if (!Number.isInteger(c.level) || c.level < 0 || c.level > 9)
      throw new FormatError('transform.compression.level', `${c.level}`);
  }
  const e = spec.encryption;
  if (e !== undefined) {
    if (e.algo !== 'aes-256-ctr') throw new FormatError('transform.encryption.algo', `unknown ${String(e.algo)}`);
    if (!/^[0-9a-f]{64}$/i.test(e.key)) throw new FormatError('transform.encryption.key', 'must be 64 hex characters');
    if (!/^[0-9a-f]{32}$/i.test(e.iv)) throw new FormatError('transform.encryption.iv', 'must be 32 hex characters');
  }
}

/** Header flag bits (spec §3.1 bits 1, 2) for a transform. */
export function transformFlags(spec: TransformSpec): number {
  checkSpec(spec);
  if (spec === 'none') return 0;
  return (spec.compression ? FLAG_COMPRESSED : 0) | (spec.encryption ? FLAG_ENCRYPTED : 0);
}

function ctr(e: EncryptionSpec, data: Uint8Array): Buffer {
  // CTR is its own inverse: encrypt and decrypt are the same keystream XOR.
  const cipher = crypto.createCipheriv('aes-256-ctr', Buffer.from(e.key, 'hex'), Buffer.from(e.iv, 'hex'));
  return Buffer.concat([cipher.update(data), cipher.final()]);
}

/** raw -> stored: encrypt(compress(raw)). */
export function applyTransform(spec: TransformSpec, raw: Uint8Array): Buffer {
  checkSpec(spec);
  let out = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (spec === 'none') return out;
  if (spec.compression) out = zlib.deflateRawSync(out, { level: spec.compression.level });
  if (spec.encryption) out = ctr(spec.encryption, out);
  return out;
}

/** stored -> raw: decompress(decrypt(stored)). Corrupt input is a FormatError. */
export function undoTransform(spec: TransformSpec, stored: Uint8Array): Buffer {
  checkSpec(spec);
  let out = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  if (spec === 'none') return out;
  if (spec.encryption) out = ctr(spec.encryption, out);
  if (spec.compression) {
    try {
      out = zlib.inflateRawSync(out, { maxOutputLength: INFLATE_BYTES_MAX });
    } catch (e) {
      throw new FormatError('transform.compression', `inflate failed: ${(e as Error).message}`);
    }
  }
  return out;
}
