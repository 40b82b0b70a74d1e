// The decode worker (DESIGN §10): decrypts and decompresses transformed chunk payloads off the
// JavaScript thread, so a decode overlaps the mount's disk reads, hash checks and FUSE replies.
// It gets payloads whose §9 hashes the mount already verified; decodePayload checks the GCM tag
// before it returns a byte. The payload is read in place (shared memory); the raw bytes are
// transferred back (no copy either way).
import { parentPort, workerData } from 'node:worker_threads';
import { decodePayload } from '../../src/chunk-codec';
import { DecryptError } from '../../src/chunk-cipher';
import { FormatError } from '../../src/errors';
import { DecodeJob, DecodeReply } from './decode-protocol';

const storeKey: Buffer | null = (workerData as { storeKey: Uint8Array | null }).storeKey === null
  ? null : Buffer.from((workerData as { storeKey: Uint8Array }).storeKey);

/** The raw bytes as a whole ArrayBuffer of their own (transferable). */
function ownBuffer(raw: Buffer): ArrayBuffer {
  if (raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength) return raw.buffer as ArrayBuffer;
  const copy = new ArrayBuffer(raw.length);
  raw.copy(Buffer.from(copy));
  return copy;
}

function run(job: DecodeJob): DecodeReply {
  try {
    const raw = decodePayload(job.transforms, job.flags, Buffer.from(job.stored, 0, job.storedLenBytes), job.contentLenBytes, job.id, storeKey);
    return { jobId: job.jobId, raw: ownBuffer(raw) };
  } catch (err) {
    if (err instanceof DecryptError) return { jobId: job.jobId, error: { decrypt: true, field: err.field, detail: '' } };
    if (err instanceof FormatError) return { jobId: job.jobId, error: { decrypt: false, field: err.field, detail: err.message.slice(err.field.length + 2) } };
    return { jobId: job.jobId, error: { decrypt: false, field: 'decode', detail: err instanceof Error ? err.message : String(err) } };
  }
}

parentPort!.on('message', (job: DecodeJob) => {
  const reply = run(job);
  parentPort!.postMessage(reply, 'raw' in reply ? [reply.raw] : []);
});
