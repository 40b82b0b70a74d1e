// Replay's walk over the intent log (DESIGN §5; docs/intent-log.md "Replay"): from the durable tail,
// the records of this log with sequence numbers tail, tail+1, ... in order, until the first that is
// torn, stale or missing. Pure: the caller reads the file. A record is looked for where the previous
// one ended (same commit), at the next block boundary (the next commit), or at the first block after
// the header (the commit wrapped). A record found there with the expected number is the one written
// after its predecessor: numbers are never reused in one log, and the epoch (bumped at every open)
// rules out the leftovers of a torn commit of an earlier open that sit past the new head.
import { LOG_BLOCK_BYTES, LogRecord, RECORD_HEADER_BYTES, alignUp, decodeRecord } from './intent-record';

export interface ChainPoint {
  seq: bigint;
  offsetBytes: number;
}

export interface WalkedChain {
  records: Array<{ record: LogRecord; offsetBytes: number }>;
  /** Where and with which number the next commit goes. */
  next: ChainPoint;
}

function candidates(offsetBytes: number): number[] {
  const out = [offsetBytes];
  const aligned = alignUp(offsetBytes);
  if (aligned !== offsetBytes) out.push(aligned);
  if (!out.includes(LOG_BLOCK_BYTES)) out.push(LOG_BLOCK_BYTES);
  return out;
}

/** log: the whole file; headerEpoch: the epoch its header holds (no record is newer). */
export function walkChain(log: Uint8Array, logId: bigint, headerEpoch: number, start: ChainPoint): WalkedChain {
  const records: WalkedChain['records'] = [];
  let at = start.offsetBytes;
  let seq = start.seq;
  let epoch = 0;
  const stepsMax = Math.floor(log.length / 8) + 1; // a record is far longer than 8 bytes
  for (let step = 0; step < stepsMax; step++) {
    const found = candidates(at)
      .map((o) => ({ o, r: o < log.length ? decodeRecord(log.subarray(o)) : null }))
      .find(({ r }) => r !== null && r.logId === logId && r.seq === seq && r.epoch >= epoch && r.epoch <= headerEpoch);
    if (found === undefined) break;
    const r = found.r!;
    records.push({ record: r, offsetBytes: found.o });
    epoch = r.epoch;
    seq++;
    at = found.o + RECORD_HEADER_BYTES + r.payload.length;
  }
  return { records, next: { seq, offsetBytes: records.length === 0 ? start.offsetBytes : alignUp(at) } };
}
