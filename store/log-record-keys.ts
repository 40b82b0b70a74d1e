// The store key's side of log records (DESIGN §10, src/log-record-cipher.ts): seals and opens the
// records of chunks whose layout encrypts, with the log key of the chunk version they go over.
// Derived keys are remembered (HKDF per record would cost more than the sealing of a 16 KiB span).
// Used by the intent rows (store/meta/chunk-map.ts) and the intent log file (store/chunks/intent-log.ts).
import { LRUCache } from 'lru-cache';
import { ChunkfsError } from '../src/errors';
import {
  LogFileRecordPosition,
  LogRecordPosition,
  deriveLogKey,
  openLogRecord,
  sealLogRecord,
} from '../src/log-record-cipher';

/** Log keys remembered: one per chunk version with records in flight (the backlog holds at most 4,096 intents). */
const LOG_KEYS_CACHED_MAX = 4096;

/** A sealed record on a store opened without its key. */
export class LogRecordKeyError extends ChunkfsError {
  readonly code = 'EINVAL';
}

export class LogRecordKeys {
  private readonly keys = new LRUCache<string, Buffer>({ max: LOG_KEYS_CACHED_MAX });

  /** storeKey: null on a store made without one (it has no encrypting layout, so no sealed record). */
  constructor(private readonly storeKey: Buffer | null) {}

  seal(pos: LogRecordPosition | LogFileRecordPosition, plain: Uint8Array): Buffer {
    return sealLogRecord(this.keyOf(pos, 'sealed'), pos, plain);
  }

  /** Throws LogRecordKeyError unless records at pos can be sealed (asked before a log commit: a failed one ends it). */
  canSeal(pos: LogRecordPosition | LogFileRecordPosition): void {
    this.keyOf(pos, 'sealed');
  }

  /** The plaintext, only after the record's tag checked (LogRecordError otherwise). */
  open(pos: LogRecordPosition | LogFileRecordPosition, record: Uint8Array): Buffer {
    return openLogRecord(this.keyOf(pos, 'opened'), pos, record);
  }

  private keyOf(pos: LogRecordPosition | LogFileRecordPosition, verb: string): Buffer {
    if (this.storeKey === null) {
      const what = `a log record of an encrypting layout cannot be ${verb} without the store key`;
      const site = { fileId: pos.fileId, chunkIndex: pos.chunkIndex, version: pos.version };
      throw new LogRecordKeyError(`${what}: give it with -o keyfile=PATH (or CHUNKFS_KEYFILE=PATH)`, site);
    }
    const name = `${pos.fileId}/${pos.chunkIndex}/${pos.version}`;
    let key = this.keys.get(name);
    if (key === undefined) this.keys.set(name, (key = deriveLogKey(this.storeKey, pos)));
    return key;
  }
}
