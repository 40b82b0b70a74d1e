// Messages between the mount and its codec workers (store/chunks/codec-pool.ts).
import { ChunkIdentity } from '../../src/chunk-cipher';
import { ChunkTransforms } from '../../src/chunk-transforms';

/**
 * One verified stored payload to decode: the first storedLenBytes of `stored` into the first
 * contentLenBytes of `raw`, both shared memory the mount does not touch until the reply.
 */
export interface DecodeJob {
  kind: 'decode';
  jobId: number;
  transforms: ChunkTransforms;
  flags: number;
  stored: SharedArrayBuffer;
  storedLenBytes: number;
  raw: SharedArrayBuffer;
  contentLenBytes: number;
  id: ChunkIdentity;
}

/**
 * One whole chunk's content to encode (a whole-chunk write, DESIGN §10): the first contentLenBytes
 * of `raw` through the layout's transforms into `out` (outCapacityBytes, enough for the sealed
 * payload of raw uncompressed), both shared memory the mount does not touch until the reply.
 */
export interface EncodeJob {
  kind: 'encode';
  jobId: number;
  transforms: ChunkTransforms;
  raw: SharedArrayBuffer;
  contentLenBytes: number;
  out: SharedArrayBuffer;
  outCapacityBytes: number;
  id: ChunkIdentity;
}

export type CodecJob = DecodeJob | EncodeJob;

/** How an encode came out: flags 0 means no transform paid (stored raw, out unused). */
export interface Encoded {
  storedLenBytes: number;
  flags: number;
}

/** Done (raw holds the bytes; or out holds the encoded payload), or what the codec threw, to be rethrown with its site. */
export type CodecReply =
  | { jobId: number; error: null; encoded: Encoded | null }
  | { jobId: number; error: { decrypt: boolean; field: string; detail: string; segment?: number } };
