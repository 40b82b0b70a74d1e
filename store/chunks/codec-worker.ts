// The codec worker (DESIGN §10): decrypts and decompresses transformed chunk payloads off the
// JavaScript thread, so a read-ahead decode overlaps the mount's disk reads, hash checks and FUSE
// replies; and compresses and encrypts whole chunks being written, so a sequential writer's next
// requests are answered meanwhile. It gets payloads whose §9 hashes the mount already verified;
// decodePayloadInto checks the GCM tag before the raw bytes are usable. Payload and raw bytes are
// the mount's pooled shared memory (no copy, no fresh pages); the decrypted payload of a chunk also
// compressed goes through a buffer of this thread's, reused.
import { parentPort, workerData } from 'node:worker_threads';
import { decodePayloadInto, encodePayload } from '../../src/chunk-codec';
import { DecryptError } from '../../src/chunk-cipher';
import { FormatError, assert } from '../../src/errors';
import { CodecJob, CodecReply, EncodeJob, Encoded } from './codec-protocol';

const storeKey: Buffer | null =
  (workerData as { storeKey: Uint8Array | null }).storeKey === null
    ? null
    : Buffer.from((workerData as { storeKey: Uint8Array }).storeKey);

let scratch = Buffer.alloc(0);
function scratchOf(lengthBytes: number): Buffer {
  if (scratch.length < lengthBytes) scratch = Buffer.allocUnsafeSlow(lengthBytes);
  return scratch;
}

/** A sealed payload goes straight into out; a payload only compressed is copied there. */
function encode(job: EncodeJob): Encoded {
  const raw = Buffer.from(job.raw, 0, job.contentLenBytes);
  const out = Buffer.from(job.out, 0, job.outCapacityBytes);
  const alloc = (n: number): Buffer => {
    assert(n <= out.length, `codec worker: a sealed payload of ${n} bytes for ${out.length} of room`);
    return out.subarray(0, n);
  };
  const { stored, flags } = encodePayload(job.transforms, raw, job.id, storeKey, alloc);
  if (flags === 0) return { storedLenBytes: 0, flags };
  if (stored.buffer !== job.out) {
    assert(stored.length <= out.length, `codec worker: a payload of ${stored.length} bytes for ${out.length} of room`);
    stored.copy(out, 0);
  }
  return { storedLenBytes: stored.length, flags };
}

function run(job: CodecJob): CodecReply {
  try {
    if (job.kind === 'encode') return { jobId: job.jobId, error: null, encoded: encode(job) };
    const stored = Buffer.from(job.stored, 0, job.storedLenBytes);
    decodePayloadInto(
      job.transforms,
      job.flags,
      stored,
      Buffer.from(job.raw, 0, job.contentLenBytes),
      job.id,
      storeKey,
      {},
      scratchOf,
    );
    return { jobId: job.jobId, error: null, encoded: null };
  } catch (err) {
    if (err instanceof DecryptError)
      return { jobId: job.jobId, error: { decrypt: true, field: err.field, detail: '', segment: err.segment } };
    if (err instanceof FormatError)
      return {
        jobId: job.jobId,
        error: { decrypt: false, field: err.field, detail: err.message.slice(err.field.length + 2) },
      };
    return {
      jobId: job.jobId,
      error: { decrypt: false, field: 'codec', detail: err instanceof Error ? err.message : String(err) },
    };
  }
}

parentPort!.on('message', (job: CodecJob) => parentPort!.postMessage(run(job)));
