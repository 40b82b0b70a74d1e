// Chunk payload compression (spec §3.1 bit 1; DESIGN §10). Formats other decoders read:
// zstd = one Zstandard frame (RFC 8878) with the content size in its header;
// lz4 = one LZ4 block (the LZ4 block format, no frame), whose raw length is the shard
// header's content_len. Both libraries build from bundled C sources (node-gyp): zstd-napi
// and lz4; chosen by measurement (README "Transforms").
import { FormatError } from './errors';
import { CompressionAlgo } from './chunk-transforms';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const zstd = require('zstd-napi') as { compress(b: Uint8Array, p?: { compressionLevel?: number }): Buffer; decompress(b: Uint8Array): Buffer };
// The native block codec of the lz4 package (LZ4_compress_default / LZ4_decompress_safe).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const lz4 = require('lz4/lib/utils').bindings as {
  compress(src: Uint8Array, dst: Uint8Array): number;
  compressBound(n: number): number;
  uncompress(src: Uint8Array, dst: Uint8Array): number;
};

/** raw -> compressed bytes (may be longer than raw: the caller stores raw then). */
export function compress(algo: CompressionAlgo, level: number, raw: Uint8Array): Buffer {
  if (raw.length === 0) return Buffer.alloc(0);
  if (algo === 'zstd') return zstd.compress(raw, { compressionLevel: level });
  const out = Buffer.allocUnsafe(lz4.compressBound(raw.length));
  const n = lz4.compress(raw, out);
  if (n <= 0) throw new FormatError('lz4', `compress of ${raw.length} bytes failed (${n})`);
  return out.subarray(0, n);
}

/** compressed -> exactly contentLenBytes raw bytes; anything else is a FormatError. */
export function decompress(algo: CompressionAlgo, stored: Uint8Array, contentLenBytes: number): Buffer {
  if (contentLenBytes === 0 && stored.length === 0) return Buffer.alloc(0);
  let out: Buffer;
  if (algo === 'zstd') {
    try {
      out = zstd.decompress(stored);
    } catch (err) {
      throw new FormatError('zstd', `decompress failed: ${(err as Error).message}`);
    }
  } else {
    out = Buffer.allocUnsafe(contentLenBytes);
    const n = lz4.uncompress(stored, out);
    if (n < 0) throw new FormatError('lz4', `corrupt block (error at byte ${-n})`);
    out = out.subarray(0, n);
  }
  if (out.length !== contentLenBytes) throw new FormatError(algo, `decompressed ${out.length} bytes, content_len says ${contentLenBytes}`);
  return out;
}
