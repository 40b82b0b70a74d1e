// The decode worker (DESIGN §10): decrypts and decompresses transformed chunk payloads off the
// JavaScript thread, so a read-ahead decode overlaps the mount's disk reads, hash checks and FUSE
// replies. It gets payloads whose §9 hashes the mount already verified; decodePayloadInto checks
// the GCM tag before the raw bytes are usable. Payload and raw bytes are the mount's pooled shared
// memory (no copy, no fresh pages); the decrypted payload of a chunk also compressed goes through a
// buffer of this thread's, reused.
import { parentPort, workerData } from 'node:worker_threads';
import { decodePayloadInto } from '../../src/chunk-codec';
import { DecryptError } from '../../src/chunk-cipher';
import { FormatError } from '../../src/errors';
import { DecodeJob, DecodeReply } from './decode-protocol';

const storeKey: Buffer | null = (workerData as { storeKey: Uint8Array | null }).storeKey === null
  ? null : Buffer.from((workerData as { storeKey: Uint8Array }).storeKey);

let scratch = Buffer.alloc(0);
function scratchOf(lengthBytes: number): Buffer {
  if (scratch.length < lengthBytes) scratch = Buffer.allocUnsafeSlow(lengthBytes);
  return scratch;
}

function run(job: DecodeJob): DecodeReply {
  try {
    const stored = Buffer.from(job.stored, 0, job.storedLenBytes);
    decodePayloadInto(job.transforms, job.flags, stored, Buffer.from(job.raw, 0, job.contentLenBytes), job.id, storeKey, {}, scratchOf);
    return { jobId: job.jobId, error: null };
  } catch (err) {
    if (err instanceof DecryptError) return { jobId: job.jobId, error: { decrypt: true, field: err.field, detail: '', segment: err.segment } };
    if (err instanceof FormatError) return { jobId: job.jobId, error: { decrypt: false, field: err.field, detail: err.message.slice(err.field.length + 2) } };
    return { jobId: job.jobId, error: { decrypt: false, field: 'decode', detail: err instanceof Error ? err.message : String(err) } };
  }
}

parentPort!.on('message', (job: DecodeJob) => parentPort!.postMessage(run(job)));
