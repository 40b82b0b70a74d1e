// Chunk payload compression (spec §3.1 bit 1; DESIGN §10). Formats other decoders read:
// zstd = one Zstandard frame (RFC 8878) with the content size in its header;
// lz4 = one LZ4 block (the LZ4 block format, no frame), whose raw length is the shard
// header's content_len. Both libraries build from bundled C sources (node-gyp): zstd-napi
// and lz4; chosen by measurement (docs/transforms.md).
import { FormatError } from './errors';
import { CompressionAlgo } from './chunk-transforms';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const zstd = require('zstd-napi') as { compress(b: Uint8Array, p?: { compressionLevel?: number }): Buffer };
// Its native context, to decompress into a buffer of ours (ZSTD_decompressDCtx).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const zstdBinding = require('zstd-napi/binding') as {
  DCtx: new () => { decompress(dst: Uint8Array, src: Uint8Array): number };
};
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
  const out = Buffer.allocUnsafe(contentLenBytes);
  decompressInto(algo, stored, out);
  return out;
}

/** The zstd decompression context of this thread (each worker thread loads its own module instance). */
let dctx: { decompress(dst: Uint8Array, src: Uint8Array): number } | null = null;

/** compressed -> exactly target.length raw bytes, into target (a reused buffer: no fresh pages); anything else is a FormatError. */
export function decompressInto(algo: CompressionAlgo, stored: Uint8Array, target: Uint8Array): void {
  if (target.length === 0 && stored.length === 0) return;
  let n: number;
  if (algo === 'zstd') {
    try {
      dctx ??= new zstdBinding.DCtx();
      n = dctx.decompress(target, stored);
    } catch (err) {
      throw new FormatError('zstd', `decompress failed: ${(err as Error).message} (content_len says ${target.length})`);
    }
  } else {
    n = lz4.uncompress(stored, target);
    if (n < 0) throw new FormatError('lz4', `corrupt block (error at byte ${-n})`);
  }
  if (n !== target.length) throw new FormatError(algo, `decompressed ${n} bytes, content_len says ${target.length}`);
}
