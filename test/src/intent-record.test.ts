// The intent log's record format and replay walk (docs/intent-log.md): a record verifies only whole
// and unchanged; replay stops at the first torn, stale or foreign record, and follows a wrap.
import test from 'ava';
import { walkChain } from '../../src/intent-chain';
import {
  LOG_BLOCK_BYTES,
  LogRecord,
  RECORD_FLAG_TIMES,
  alignUp,
  decodeLogHeader,
  decodeRecord,
  encodeLogHeader,
  encodeRecord,
} from '../../src/intent-record';

const LOG_ID = 0x1234_5678_9abc_def0n;
const UUID = '0b7e6c1e-2f3a-4d5b-8c9d-0e1f2a3b4c5d';

function record(seq: bigint, fill: number, epoch = 1, logId = LOG_ID): LogRecord {
  return {
    seq,
    logId,
    epoch,
    flags: RECORD_FLAG_TIMES,
    ino: 7,
    chunkIndex: 3,
    version: 9n,
    offsetBytes: 4096 + Number(seq),
    lengthBytes: 100,
    mtimeNs: 1_700_000_000_000_000_000n,
    ctimeNs: -5n,
    payload: Buffer.alloc(100, fill),
  };
}

/** A log of sizeBytes with each record written at its offset. */
function logWith(sizeBytes: number, placed: Array<[number, LogRecord]>): Buffer {
  const log = Buffer.alloc(sizeBytes);
  for (const [at, r] of placed) encodeRecord(r).copy(log, at);
  return log;
}

test('a record decodes to what was encoded; one flipped or missing byte and it does not verify', (t) => {
  const r = record(5n, 0xab);
  const bytes = encodeRecord(r);
  const back = decodeRecord(bytes)!;
  t.deepEqual({ ...back, payload: Buffer.from(back.payload) }, r);
  for (const at of [4, 9, 20, 40, 70, bytes.length - 1]) {
    const bad = Buffer.from(bytes);
    bad[at] ^= 1;
    t.is(decodeRecord(bad), null, `flipped byte ${at}: wrong checksum`);
  }
  t.is(decodeRecord(bytes.subarray(0, bytes.length - 1)), null, 'torn: a byte short');
  t.is(decodeRecord(Buffer.alloc(bytes.length)), null, 'zeros are no record');
});

test('the header round-trips and refuses what is not one', (t) => {
  const h = { storeUuid: UUID, logId: LOG_ID, epoch: 3, sizeBytes: 64 << 20 };
  t.deepEqual(decodeLogHeader(encodeLogHeader(h)), h);
  const bad = encodeLogHeader(h);
  bad[50] ^= 1;
  t.regex(decodeLogHeader(bad) as string, /checksum/);
  t.regex(decodeLogHeader(Buffer.alloc(LOG_BLOCK_BYTES)) as string, /magic/);
});

test('replay walks records in sequence: within a commit, to the next block, and stops at a stale one', (t) => {
  const a = record(10n, 1);
  const b = record(11n, 2);
  const aLen = encodeRecord(a).length;
  const c = record(12n, 3);
  const stale = record(13n - 10n, 4); // an earlier lap's record where the next one would be
  const next = alignUp(LOG_BLOCK_BYTES + 2 * aLen);
  const placed: Array<[number, LogRecord]> = [
    [LOG_BLOCK_BYTES, a],
    [LOG_BLOCK_BYTES + aLen, b],
    [next, c],
    [alignUp(next + aLen), stale],
  ];
  const log = logWith(1 << 20, placed);
  const w = walkChain(log, LOG_ID, 1, { seq: 10n, offsetBytes: LOG_BLOCK_BYTES });
  t.deepEqual(
    w.records.map((r) => r.record.seq),
    [10n, 11n, 12n],
  );
  t.deepEqual(w.next, { seq: 13n, offsetBytes: alignUp(next + aLen) });
});

test("replay refuses another log's record, an older epoch after a newer one, and an epoch past the header", (t) => {
  const first = record(1n, 1, 2);
  const len = encodeRecord(first).length;
  const at2 = alignUp(LOG_BLOCK_BYTES + len);
  const seconds: Array<[LogRecord, string]> = [
    [record(2n, 2, 2, LOG_ID + 1n), 'another log'],
    [record(2n, 2, 1), 'an older epoch (a torn commit of an earlier open)'],
    [record(2n, 2, 3), 'an epoch newer than the header'],
  ];
  for (const [second, why] of seconds) {
    const log = logWith(1 << 20, [
      [LOG_BLOCK_BYTES, first],
      [at2, second],
    ]);
    const w = walkChain(log, LOG_ID, 2, { seq: 1n, offsetBytes: LOG_BLOCK_BYTES });
    t.deepEqual(
      w.records.map((r) => r.record.seq),
      [1n],
      why,
    );
  }
});

test('replay follows a commit that wrapped to the first block, and stops at a torn record', (t) => {
  const size = 64 * LOG_BLOCK_BYTES;
  const last = record(40n, 1);
  const nearEnd = size - 2 * LOG_BLOCK_BYTES;
  const wrapped = record(41n, 2);
  const torn = encodeRecord(record(42n, 3));
  const log = logWith(size, [
    [nearEnd, last],
    [LOG_BLOCK_BYTES, wrapped],
  ]);
  const tornAt = alignUp(LOG_BLOCK_BYTES + encodeRecord(wrapped).length);
  torn.subarray(0, torn.length - 10).copy(log, tornAt);
  const w = walkChain(log, LOG_ID, 1, { seq: 40n, offsetBytes: nearEnd });
  t.deepEqual(
    w.records.map((r) => [r.record.seq, r.offsetBytes]),
    [
      [40n, nearEnd],
      [41n, LOG_BLOCK_BYTES],
    ],
  );
  t.deepEqual(w.next, { seq: 42n, offsetBytes: tornAt });
  const none = walkChain(log, LOG_ID, 1, { seq: 45n, offsetBytes: nearEnd });
  t.deepEqual(none.records, [], 'nothing from a tail with no record');
});
