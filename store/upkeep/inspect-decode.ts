// `chunkfs inspect` decodes transformed payloads (DESIGN §10): with the store key it
// checks the GCM tag(s) and decompresses, and shows the raw length and the ratio. Only after the
// payload's blocks verified (spec §9). The compression algorithm is in the file's layout (spec §3.1
// "algo in Layout"); a shard inspected without the metadata names it by the payload's first bytes
// (a Zstandard frame's magic number, else an LZ4 block; the decoded length must be content_len).
import { ChunkTransforms, CompressionAlgo } from '../../src/chunk-transforms';
import { decodePayload } from '../../src/chunk-codec';
import { DecryptError, deriveDataKey } from '../../src/chunk-cipher';
import { openPayload } from '../../src/payload-cipher';
import { isSegmented, parseSegmentHeader } from '../../src/chunk-segments';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED, ShardHeader } from '../../src/header';
import { mapRange } from '../../src/mapping';

/** What decoding a stored payload gave. */
export interface PayloadDecode {
  /** The tag checked (when encrypted) and the payload decoded to exactly content_len bytes. */
  ok: boolean;
  storedBytes: number;
  /** content_len, when decoded. */
  rawBytes: number | null;
  /** raw / stored, when decoded. */
  ratio: number | null;
  /** Encrypted and the GCM tag checked; null when not encrypted. */
  tagOk: boolean | null;
  /** Why it did not decode, or why it was not tried (no key). */
  error: string | null;
  /** Encrypted: the cipher format ('v1', or 'v2, N segments of S bytes'); null when not encrypted. */
  cipher: string | null;
}

/** The cipher format of an encrypted payload as inspect names it (docs/transforms.md). */
function cipherFormat(payload: Uint8Array): string {
  if (!isSegmented(payload)) return 'v1 (one GCM message)';
  try {
    const l = parseSegmentHeader(payload, payload.length);
    return `v2 (${l.segmentCount} segments of ${l.segmentBytes} bytes)`;
  } catch (err) {
    return `v2, bad header: ${(err as Error).message}`;
  }
}

const ZSTD_MAGIC = 0xfd2fb528; // RFC 8878 §3.1.1, little-endian

/** The compression of a payload whose layout is not known: zstd by its frame magic, else lz4. */
function guessCompression(plain: Uint8Array): CompressionAlgo {
  return plain.length >= 4 && Buffer.from(plain.buffer, plain.byteOffset, 4).readUInt32LE(0) === ZSTD_MAGIC
    ? 'zstd'
    : 'lz4';
}

/**
 * Decode a verified stored payload of header h (flags bits 1, 2). compression: the layout's, or
 * undefined to name it from the bytes. null when the payload is not transformed.
 */
export function decodeForInspect(
  h: ShardHeader,
  payload: Uint8Array,
  storeKey: Buffer | null,
  compression?: ChunkTransforms['compression'],
): PayloadDecode | null {
  const flags = h.flags & (FLAG_COMPRESSED | FLAG_ENCRYPTED);
  if (flags === 0) return null;
  const encrypted = (flags & FLAG_ENCRYPTED) !== 0;
  const out: PayloadDecode = {
    ok: false,
    storedBytes: payload.length,
    rawBytes: null,
    ratio: null,
    tagOk: null,
    error: null,
    cipher: encrypted ? cipherFormat(payload) : null,
  };
  if (encrypted && storeKey === null) {
    out.error = 'encrypted, and no store key is loaded (give it with CHUNKFS_KEYFILE=PATH): not decoded';
    return out;
  }
  const id = { fileId: h.fileId, chunkIndex: h.chunkIndex, version: h.version };
  const contentLen = Number(h.contentLenBytes);
  let algo = compression ?? null;
  try {
    if (algo === null && (flags & FLAG_COMPRESSED) !== 0) {
      // Name the algorithm from the plaintext's first bytes (decrypting is the first step anyway).
      const plain = encrypted ? openPayload(deriveDataKey(storeKey!, id), payload) : payload;
      algo = { algo: guessCompression(plain), level: 0 };
    }
    const t: ChunkTransforms = { compression: algo, encryption: encrypted ? 'aes256gcm' : null };
    const raw = decodePayload(t, flags, payload, contentLen, id, storeKey);
    Object.assign(out, {
      ok: true,
      rawBytes: raw.length,
      ratio: payload.length > 0 ? raw.length / payload.length : null,
      tagOk: encrypted ? true : null,
    });
  } catch (err) {
    if (err instanceof DecryptError) out.tagOk = false;
    out.error = (err as Error).message;
  }
  return out;
}

/** An EC chunk's stored payload joined from its k data shards' verified payloads (spec §6), by shard index. */
export function joinEcPayload(h: ShardHeader, dataShards: ReadonlyArray<Uint8Array>): Buffer {
  const g = {
    k: h.ecK,
    m: h.ecM,
    ecBlockSizeBytes: Number(h.ecBlockSizeBytes),
    chunkLogicalLenBytes: Number(h.chunkLogicalLenBytes),
  };
  const out = Buffer.alloc(g.chunkLogicalLenBytes);
  for (const p of mapRange(g, 0, out.length)) {
    Buffer.from(
      dataShards[p.dataShard].buffer,
      dataShards[p.dataShard].byteOffset,
      dataShards[p.dataShard].byteLength,
    ).copy(out, p.chunkOffsetBytes, p.shardOffsetBytes, p.shardOffsetBytes + p.lengthBytes);
  }
  return out;
}
