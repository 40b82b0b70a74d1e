// Messages between the mount and its decode workers (store/chunks/decode-pool.ts).
import { ChunkIdentity } from '../../src/chunk-cipher';
import { ChunkTransforms } from '../../src/chunk-transforms';

/**
 * One verified stored payload to decode: the first storedLenBytes of `stored` into the first
 * contentLenBytes of `raw`, both shared memory the mount does not touch until the reply.
 */
export interface DecodeJob {
  jobId: number;
  transforms: ChunkTransforms;
  flags: number;
  stored: SharedArrayBuffer;
  storedLenBytes: number;
  raw: SharedArrayBuffer;
  contentLenBytes: number;
  id: ChunkIdentity;
}

/** Done (raw holds the bytes), or what decodePayloadInto threw, to be rethrown with its site. */
export type DecodeReply =
  | { jobId: number; error: null }
  | { jobId: number; error: { decrypt: boolean; field: string; detail: string; segment?: number } };
