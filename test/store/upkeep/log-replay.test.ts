// Replay of intent log records at open (store/upkeep/log-replay.ts, DESIGN §5): a record of a live
// raw replica chunk goes into the backlog, so reads show its bytes at once and the applier folds it
// in; a record whose chunk was rewritten since, is gone, is not patched in place, or reaches past
// the chunk's end holds nothing to replay; a sealed one is skipped with an error; the times of a
// file's last record are stamped unless the file holds newer ones; a read-only opener only overlays.
import test from 'ava';
import { LogRecord, RECORD_FLAG_SEALED, RECORD_FLAG_TIMES } from '../../../src/intent-record';
import { FileIo } from '../../../store/file-io';
import { emptyRecoveryReport } from '../../../store/upkeep/recovery';
import { replayLog } from '../../../store/upkeep/log-replay';
import { SMALL } from '../helpers';
import { FileFixture, fileFixture } from './fixture';

const CS = SMALL.chunkSizeBytes;
const LATER_NS = 4_000_000_000_000_000_000n; // far past any clock of the test (2096)

let seq = 0n;
function record(
  f: FileFixture,
  c: number,
  offsetBytes: number,
  text: string,
  extra: Partial<LogRecord> = {},
): LogRecord {
  seq++;
  return {
    seq,
    logId: 1n,
    epoch: 1,
    flags: 0,
    ino: f.ino,
    chunkIndex: c,
    version: f.ref(c).version,
    offsetBytes,
    lengthBytes: text.length,
    mtimeNs: 0n,
    ctimeNs: 0n,
    payload: Buffer.from(text),
    ...extra,
  };
}

function filesOf(f: FileFixture): FileIo {
  return (f.store as unknown as { files: FileIo }).files;
}

test('live records are overlaid and applied; stale, past-the-end and sealed ones are released', async (t) => {
  const f = await fileFixture('replica:3', 2);
  const live = [
    record(f, 0, 100, 'first'),
    record(f, 0, 102, 'SECOND', { flags: RECORD_FLAG_TIMES, mtimeNs: LATER_NS, ctimeNs: LATER_NS }),
  ];
  const stale = [
    record(f, 1, 0, 'old version', { version: f.ref(1).version - 1n }),
    record(f, 1, CS - 2, 'past the end'),
    record(f, 0, 0, 'sealed', { flags: RECORD_FLAG_SEALED }),
  ];
  const report = emptyRecoveryReport();
  await replayLog(f.env, filesOf(f), [...live, ...stale], report);
  t.is(report.intentsResolved, 3, 'released');
  t.is(report.blocksRepaired, 2, 'one block per live record');
  t.is(report.errors.length, 1);
  t.regex(report.errors[0], /sealed payload; skipped/);
  t.is(f.env.backlog.of(f.ino, 0).length, 2);
  t.is(f.env.backlog.of(f.ino, 1).length, 0);
  const want = Buffer.from(f.data.subarray(0, CS));
  Buffer.from('first').copy(want, 100);
  Buffer.from('SECOND').copy(want, 102);
  t.true((await f.store.read(f.ino, 0, CS)).equals(want), 'in log order, at once');
  t.is(f.store.ns.getattr(f.ino)!.mtimeNs, LATER_NS, "the last record's times");
  await f.store.applyNow();
  t.is(f.env.backlog.lengthIntents, 0);
  t.true((await f.env.shards.readWhole(f.ref(0), 2)).equals(want), 'folded into every replica');
  await f.store.close();
});

test('a read-only replay only overlays: no times stamped', async (t) => {
  const f = await fileFixture('replica:3', 1);
  const before = f.store.ns.getattr(f.ino)!.mtimeNs;
  const report = emptyRecoveryReport();
  const r = record(f, 0, 10, 'xyz', { flags: RECORD_FLAG_TIMES, mtimeNs: LATER_NS, ctimeNs: LATER_NS });
  await replayLog(f.env, filesOf(f), [r], report, true);
  t.is(f.env.backlog.of(f.ino, 0).length, 1);
  t.is(f.store.ns.getattr(f.ino)!.mtimeNs, before);
  f.env.backlog.remove(f.ino, 0, new Set(f.env.backlog.of(f.ino, 0).map((i) => i.id)), false);
  await f.store.close();
});

test('an EC chunk is not patched in place: its record holds nothing to replay', async (t) => {
  const f = await fileFixture('ec:4+2', 1);
  const report = emptyRecoveryReport();
  await replayLog(f.env, filesOf(f), [record(f, 0, 10, 'abc')], report);
  t.is(report.intentsResolved, 1);
  t.is(f.env.backlog.lengthIntents, 0);
  t.true((await f.store.read(f.ino, 0, CS)).equals(f.data));
  await f.store.close();
});
