// Replay of intent log records at open (store/upkeep/log-replay.ts, DESIGN §5): a record of a live
// chunk goes into the backlog, so reads show its bytes at once and the applier folds it in (a raw
// replica in place, an EC or transformed chunk as a new version); a record whose chunk was rewritten
// since, is gone, or reaches past the chunk's end holds nothing to replay; a plain record over an
// encrypting layout, or a sealed one that does not open, is refused; the times of a file's last
// record are stamped unless the file holds newer ones; a read-only opener only overlays. SQLite
// stores only: a PostgreSQL store has no log file (its intents are rows).
import { sqliteOnlyTest } from '../../helpers/pg-meta';
import { LogRecord, RECORD_FLAG_SEALED, RECORD_FLAG_TIMES } from '../../../src/intent-record';
import { FileIo } from '../../../store/file-io';
import { emptyRecoveryReport } from '../../../store/upkeep/recovery';
import { replayLog } from '../../../store/upkeep/log-replay';
import { PlainIntentError } from '../../../store/chunks/plain-intent';
import { LogRecordError } from '../../../src/log-record-cipher';
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

sqliteOnlyTest('live records are overlaid and applied; stale and past-the-end ones are released', async (t) => {
  const f = await fileFixture('replica:3', 2);
  const live = [
    record(f, 0, 100, 'first'),
    record(f, 0, 102, 'SECOND', { flags: RECORD_FLAG_TIMES, mtimeNs: LATER_NS, ctimeNs: LATER_NS }),
  ];
  const stale = [
    record(f, 1, 0, 'old version', { version: f.ref(1).version - 1n }),
    record(f, 1, CS - 2, 'past the end'),
  ];
  const report = emptyRecoveryReport();
  await replayLog(f.env, filesOf(f), [...live, ...stale], report);
  t.is(report.intentsResolved, 2, 'released');
  t.is(report.blocksRepaired, 2, 'one block per live record');
  t.deepEqual(report.errors, []);
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

sqliteOnlyTest('a read-only replay only overlays: no times stamped', async (t) => {
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

for (const layout of ['ec:4+2', 'ec:2+1']) {
  sqliteOnlyTest(
    `${layout}: a record goes over the stored chunk as one new version, before anything else of the file changes`,
    async (t) => {
      const f = await fileFixture(layout, 2);
      const report = emptyRecoveryReport();
      const before = f.ref(0).version;
      const other = f.ref(1).version;
      await replayLog(f.env, filesOf(f), [record(f, 0, 10, 'abc'), record(f, 0, 12, 'XY')], report);
      t.deepEqual(report.errors, []);
      t.is(f.env.backlog.of(f.ino, 0).length, 2, 'both records wait in the backlog, overlaid');
      const want = Buffer.from(f.data);
      Buffer.from('abXY').copy(want, 10);
      t.true((await f.store.read(f.ino, 0, want.length)).equals(want), 'in log order, at once');
      await f.store.applyNow();
      t.is(f.env.backlog.lengthIntents, 0);
      t.true(f.ref(0).version > before, 'a new version holds them');
      t.is(f.ref(1).version, other, 'the other chunk untouched');
      t.true((await f.store.read(f.ino, 0, want.length)).equals(want));
      await f.store.close();
    },
  );
}

sqliteOnlyTest(
  'a plain record over an encrypting layout is refused, naming it and its chunk; a sealed one that does not open too',
  async (t) => {
    const f = await fileFixture('replica:3,aes256gcm', 1);
    const plain = record(f, 0, 10, 'forged');
    const site = `\\(file ${f.ino}, chunk 0, version ${f.ref(0).version}\\)`;
    await t.throwsAsync(replayLog(f.env, filesOf(f), [plain], emptyRecoveryReport()), {
      instanceOf: PlainIntentError,
      message: new RegExp(
        `^intent log record ${plain.seq} holds plain bytes .*encrypts.*restore .*intent\\.log.*${site}$`,
      ),
    });
    const junk = record(f, 0, 10, 'x'.repeat(40), { flags: RECORD_FLAG_SEALED, lengthBytes: 11 });
    await t.throwsAsync(replayLog(f.env, filesOf(f), [junk], emptyRecoveryReport()), { instanceOf: LogRecordError });
    t.is(f.env.backlog.lengthIntents, 0, 'nothing of either went in');
    t.true((await f.store.read(f.ino, 0, CS)).equals(f.data));
    await f.store.close();
  },
);
