// Log records of encrypting layouts (DESIGN §10; docs/transforms.md "Log records"): the bytes an
// intent holds for a chunk whose layout encrypts (a partial write's block span, a small file's
// needle on its way to a container) are sealed before they are written anywhere, as its shards are.
//   log_key = HKDF-SHA256(ikm = store key (32 bytes), salt = "chunkfs log record key v1",
//                         info = file_id u64 LE || chunk_index u64 LE || version u64 LE, 32 bytes)
//   record  = format (1 byte: 1) || nonce (12 random bytes) || AES-256-GCM ciphertext || tag (16 bytes)
//   AAD     = format u8 || file_id u64 LE || chunk_index u64 LE || version u64 LE || first_block u64 LE
// A record of the intent log file (DESIGN §5 "The log is a file of its own") is sealed the same way
// under the same log key, in record format 2, whose AAD binds it to its store, its log and its place
// there, and to exactly the bytes it holds (DESIGN §5: a record names file, chunk version, offset,
// length and sequence number):
//   AAD2    = format u8 (2) || store uuid (36 ASCII bytes) || log_id u64 LE || seq u64 LE ||
//             file_id u64 LE || chunk_index u64 LE || version u64 LE || offset u64 LE || length u64 LE
// so a record copied into another store's log, to another sequence number, file, chunk, version or
// offset does not open (the record's own CRC32C guards only against tearing, not against an editor).
// The salt differs from the data key's ("chunkfs data key v1", src/chunk-cipher.ts), so a log key is
// never a chunk version's data key and no (key, nonce) pair of a shard payload is ever a log
// record's. The AAD binds a record to its place: moved to another file, chunk, version or block, its
// tag fails. The nonce is random per record: a chunk version's log key seals only the records logged
// over that version until the applier rewrites the chunk into a new one (a few thousand at most), far
// below the 2^32 messages per key that random 96-bit nonces allow (NIST SP 800-38D §8.3); a counter
// would repeat after a crash, since records of the live version are logged again after the restart
// under the same key.
import * as crypto from 'node:crypto';
import { ChunkIdentity, NONCE_BYTES, STORE_KEY_BYTES, TAG_BYTES } from './chunk-cipher';
import { ErrorSite, FormatError } from './errors';

/** The record format of an intent row's span (the first byte of every record). */
export const LOG_RECORD_FORMAT = 1;
/** The record format of an intent log file record's payload. */
export const LOG_FILE_RECORD_FORMAT = 2;
const UUID_BYTES = 36;
const AAD2_BYTES = 1 + UUID_BYTES + 7 * 8;
const FORMAT_BYTES = 1;
export const LOG_RECORD_OVERHEAD_BYTES = FORMAT_BYTES + NONCE_BYTES + TAG_BYTES;
const HKDF_SALT = Buffer.from('chunkfs log record key v1', 'ascii');
const LOG_KEY_BYTES = 32;
const AAD_BYTES = 1 + 4 * 8;

/** Where a record's bytes go: a chunk version and the first bitrot block they cover. */
export interface LogRecordPosition extends ChunkIdentity {
  firstBlock: number;
}

/** Where a log file record's bytes go, and where the record is: its store, log and sequence number. */
export interface LogFileRecordPosition extends ChunkIdentity {
  storeUuid: string;
  logId: bigint;
  seq: bigint;
  offsetBytes: number;
  lengthBytes: number;
}

function siteOf(pos: LogRecordPosition | LogFileRecordPosition): ErrorSite {
  const at = 'firstBlock' in pos ? { blockIndex: pos.firstBlock } : {};
  return { fileId: pos.fileId, chunkIndex: pos.chunkIndex, version: pos.version, ...at };
}

/** A record that does not open: not sealed under this key at this position, or altered since. */
export class LogRecordError extends FormatError {
  constructor(problem: string, pos: LogRecordPosition | LogFileRecordPosition) {
    super('seq' in pos ? `intent log record ${pos.seq}` : 'log record', problem, siteOf(pos));
  }
}

/** The log key of one chunk version (HKDF-SHA256, see the header comment). */
export function deriveLogKey(storeKey: Uint8Array, id: ChunkIdentity): Buffer {
  if (storeKey.length !== STORE_KEY_BYTES) {
    throw new FormatError('store key', `must be ${STORE_KEY_BYTES} bytes, got ${storeKey.length}`);
  }
  const info = Buffer.alloc(24);
  info.writeBigUInt64LE(id.fileId, 0);
  info.writeBigUInt64LE(id.chunkIndex, 8);
  info.writeBigUInt64LE(id.version, 16);
  return Buffer.from(crypto.hkdfSync('sha256', storeKey, HKDF_SALT, info, LOG_KEY_BYTES));
}

function aadOf(pos: LogRecordPosition): Buffer {
  if (!Number.isSafeInteger(pos.firstBlock) || pos.firstBlock < 0) {
    throw new FormatError('log record', `first block ${pos.firstBlock} is not a block index`);
  }
  const aad = Buffer.alloc(AAD_BYTES);
  aad.writeUInt8(LOG_RECORD_FORMAT, 0);
  aad.writeBigUInt64LE(pos.fileId, 1);
  aad.writeBigUInt64LE(pos.chunkIndex, 9);
  aad.writeBigUInt64LE(pos.version, 17);
  aad.writeBigUInt64LE(BigInt(pos.firstBlock), 25);
  return aad;
}

function fileAadOf(pos: LogFileRecordPosition): Buffer {
  if (pos.storeUuid.length !== UUID_BYTES) throw new FormatError('log record', 'a store uuid is 36 characters');
  const aad = Buffer.alloc(AAD2_BYTES);
  aad.writeUInt8(LOG_FILE_RECORD_FORMAT, 0);
  aad.write(pos.storeUuid, 1, UUID_BYTES, 'latin1');
  let o = 1 + UUID_BYTES;
  for (const v of [pos.logId, pos.seq, pos.fileId, pos.chunkIndex, pos.version]) o = aad.writeBigUInt64LE(v, o);
  aad.writeBigUInt64LE(BigInt(pos.offsetBytes), o);
  aad.writeBigUInt64LE(BigInt(pos.lengthBytes), o + 8);
  return aad;
}

function isFilePosition(pos: LogRecordPosition | LogFileRecordPosition): pos is LogFileRecordPosition {
  return 'seq' in pos;
}

/** The format byte and AAD of a record at pos: an intent row's (format 1) or a log file record's (format 2). */
function formatOf(pos: LogRecordPosition | LogFileRecordPosition): { format: number; aad: Buffer } {
  if (!isFilePosition(pos)) return { format: LOG_RECORD_FORMAT, aad: aadOf(pos) };
  if (!Number.isSafeInteger(pos.offsetBytes) || pos.offsetBytes < 0 || !Number.isSafeInteger(pos.lengthBytes)) {
    throw new FormatError('log record', `range ${pos.offsetBytes}+${pos.lengthBytes} is not a chunk range`);
  }
  return { format: LOG_FILE_RECORD_FORMAT, aad: fileAadOf(pos) };
}

/** The sealed record of plain at pos (LOG_RECORD_OVERHEAD_BYTES longer than plain). */
export function sealLogRecord(
  logKey: Uint8Array,
  pos: LogRecordPosition | LogFileRecordPosition,
  plain: Uint8Array,
  nonce: Uint8Array = crypto.randomBytes(NONCE_BYTES),
): Buffer {
  if (nonce.length !== NONCE_BYTES) {
    throw new FormatError('log record', `nonce of ${nonce.length} bytes, not ${NONCE_BYTES}`);
  }
  const { format, aad } = formatOf(pos);
  const c = crypto.createCipheriv('aes-256-gcm', logKey, nonce);
  c.setAAD(aad);
  const out = Buffer.allocUnsafe(LOG_RECORD_OVERHEAD_BYTES + plain.length);
  out.writeUInt8(format, 0);
  out.set(nonce, FORMAT_BYTES);
  const body = c.update(plain);
  const fin = c.final();
  body.copy(out, FORMAT_BYTES + NONCE_BYTES);
  fin.copy(out, FORMAT_BYTES + NONCE_BYTES + body.length);
  c.getAuthTag().copy(out, out.length - TAG_BYTES);
  return out;
}

/** The plaintext of a record sealed at pos, only after its tag checked (LogRecordError otherwise). */
export function openLogRecord(
  logKey: Uint8Array,
  pos: LogRecordPosition | LogFileRecordPosition,
  record: Uint8Array,
): Buffer {
  if (record.length < LOG_RECORD_OVERHEAD_BYTES) {
    throw new LogRecordError(`${record.length} bytes, shorter than format + nonce + tag`, pos);
  }
  const { format, aad } = formatOf(pos);
  if (record[0] !== format) {
    throw new LogRecordError(`format ${record[0]} is not one this build reads (${format})`, pos);
  }
  const d = crypto.createDecipheriv('aes-256-gcm', logKey, record.subarray(FORMAT_BYTES, FORMAT_BYTES + NONCE_BYTES));
  d.setAAD(aad);
  d.setAuthTag(record.subarray(record.length - TAG_BYTES));
  const body = d.update(record.subarray(FORMAT_BYTES + NONCE_BYTES, record.length - TAG_BYTES));
  try {
    d.final();
  } catch {
    body.fill(0); // nothing of a record that does not authenticate is kept
    const why = 'wrong store key, a record moved to another place, or altered bytes';
    throw new LogRecordError(`authentication tag mismatch: ${why}`, pos);
  }
  return body;
}
