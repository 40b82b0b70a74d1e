// Messages between the mount and its decode workers (store/chunks/decode-pool.ts).
import { ChunkIdentity } from '../../src/chunk-cipher';
import { ChunkTransforms } from '../../src/chunk-transforms';

/** One verified stored payload to decode: the first storedLenBytes of shared memory the mount does not touch until the reply. */
export interface DecodeJob {
  jobId: number;
  transforms: ChunkTransforms;
  flags: number;
  stored: SharedArrayBuffer;
  storedLenBytes: number;
  contentLenBytes: number;
  id: ChunkIdentity;
}

/** The raw bytes (transferred back), or what decodePayload threw, to be rethrown with its site. */
export type DecodeReply =
  | { jobId: number; raw: ArrayBuffer }
  | { jobId: number; error: { decrypt: boolean; field: string; detail: string } };
