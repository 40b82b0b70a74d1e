// Shared by the tests of the intent log file (DESIGN §5 "The log is a file of its own"): the records
// a closed or killed store's intent.log holds, walked from its first record as replay walks them.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { walkChain } from '../../src/intent-chain';
import { LOG_BLOCK_BYTES, LogHeader, LogRecord, decodeLogHeader } from '../../src/intent-record';
import { LogFileRecordPosition } from '../../src/log-record-cipher';
import { INTENT_LOG_FILE } from '../../store/chunks/intent-log';

/** The log's header and every record from its first one (a log that has not wrapped), with their offsets. */
export function logFileRecords(dir: string): {
  header: LogHeader;
  bytes: Buffer;
  records: Array<{ record: LogRecord; offsetBytes: number }>;
} {
  const bytes = fs.readFileSync(path.join(dir, INTENT_LOG_FILE));
  const header = decodeLogHeader(bytes.subarray(0, LOG_BLOCK_BYTES));
  if (typeof header === 'string') throw new Error(header);
  const walked = walkChain(bytes, header.logId, header.epoch, { seq: 1n, offsetBytes: LOG_BLOCK_BYTES });
  return { header, bytes, records: walked.records };
}

/** Where a record of this log is: the AAD of its sealed payload (src/log-record-cipher.ts, format 2). */
export function recordPosition(header: LogHeader, r: LogRecord): LogFileRecordPosition {
  return {
    storeUuid: header.storeUuid,
    logId: header.logId,
    seq: r.seq,
    fileId: BigInt(r.ino),
    chunkIndex: BigInt(r.chunkIndex),
    version: r.version,
    offsetBytes: r.offsetBytes,
    lengthBytes: r.lengthBytes,
  };
}
