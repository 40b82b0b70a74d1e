// Replay of the intent log file at open (DESIGN §5; docs/intent-log.md "Replay"): its records, in
// order, into the backlog (reads show them at once), and the applier folds them in: into every
// replica (it reads each block they touch from a replica that verifies, lays the records over it in
// order and writes it back, store/chunks/fold-runs.ts), or, for an EC or transformed chunk, into one
// new version (store/chunks/intent-rewrite.ts). A record whose chunk was rewritten since, or is gone,
// holds nothing to replay and is released. Sealed records are opened (their tag checked) before
// their bytes go anywhere; a plain record over an encrypting layout is refused (DESIGN §10 "Log records").
import { ChunkEnv } from '../chunks/chunk-env';
import { ChunkRef, patchedInPlace } from '../chunks/chunk-ref';
import { blockSpan } from '../chunks/intent-span';
import { logRecordId } from '../chunks/intent-backlog';
import { FileIo } from '../file-io';
import { LogRecord, RECORD_FLAG_SEALED, RECORD_FLAG_TIMES } from '../../src/intent-record';
import type { RecoveryReport } from './recovery';
import { refusePlainIntent } from '../chunks/plain-intent';

/** The live ref of every chunk the records name (null: gone). */
async function refsOf(files: FileIo, records: readonly LogRecord[]): Promise<Map<string, ChunkRef | null>> {
  const refs = new Map<string, ChunkRef | null>();
  for (const r of records) {
    const key = `${r.ino}/${r.chunkIndex}`;
    if (!refs.has(key)) refs.set(key, await files.withChunk(r.ino, r.chunkIndex, async (ref) => ref));
  }
  return refs;
}

interface Live {
  r: LogRecord;
  ref: ChunkRef;
  /** The bytes written (a sealed record opened). */
  span: Buffer;
}
interface Sorted {
  live: Live[];
  gone: bigint[];
}

/** The records to replay, and those that hold nothing to replay (their chunk was rewritten or is gone). */
async function sortOut(
  env: ChunkEnv,
  files: FileIo,
  records: readonly LogRecord[],
  report: RecoveryReport,
): Promise<Sorted> {
  const refs = await refsOf(files, records);
  const gone: bigint[] = [];
  const live: Live[] = [];
  for (const r of records) {
    const ref = refs.get(`${r.ino}/${r.chunkIndex}`) ?? null;
    const inside = ref !== null && r.offsetBytes + r.lengthBytes <= ref.logicalLenBytes;
    const stale = ref === null || ref.version !== r.version || !inside;
    if (stale) {
      // Not looked into: a stale record may predate the file's layout (a layout changes only while
      // the file holds no data), and it is never applied.
      gone.push(r.seq);
      report.intentsResolved++;
      continue;
    }
    refusePlainIntent(ref, (r.flags & RECORD_FLAG_SEALED) !== 0, { logRecord: r.seq, logPath: env.intentLog!.path });
    live.push({ r, ref, span: env.intentLog!.plainOf(r) }); // every record checked before any goes in
  }
  return { live, gone };
}

/** The records into the backlog (forReading: a read-only opener only overlays them). */
export async function replayLog(
  env: ChunkEnv,
  files: FileIo,
  records: readonly LogRecord[],
  report: RecoveryReport,
  forReading = false,
): Promise<void> {
  const { live, gone } = await sortOut(env, files, records, report);
  const times = new Map<number, { mtimeNs: bigint; ctimeNs: bigint }>(); // each file's last record's
  for (const { r, ref, span } of live) {
    const s = blockSpan(ref, r.offsetBytes, r.lengthBytes);
    const { ino, chunkIndex, version } = r;
    // Exactly the bytes written: the applier reads their blocks (or the stored chunk) when it folds them in.
    const inPlace = patchedInPlace(ref);
    const pending = { id: logRecordId(r.seq), ino, chunkIndex, version, firstBlock: s.first, span, inPlace };
    env.backlog.add({ ...pending, offsetBytes: r.offsetBytes }, ref.fl.bitrotBlockBytes);
    if ((r.flags & RECORD_FLAG_TIMES) !== 0) times.set(r.ino, { mtimeNs: r.mtimeNs, ctimeNs: r.ctimeNs });
    report.blocksRepaired += s.last - s.first + 1;
  }
  if (forReading) return;
  env.db.transaction(() => {
    for (const [ino, t] of times) env.fileRows.stampIfNewer(ino, t);
  })();
  env.intentLog?.release(gone);
}
