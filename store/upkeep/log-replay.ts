// Replay of the intent log file at open (DESIGN §5; docs/intent-log.md "Replay"): its records, in
// order, into the backlog, each one's bytes laid over its blocks as the file shows them, which the
// applier then writes to every replica. The blocks are read first, all at once (bounded): read one
// record at a time, a full log's replay waited for 2,048 block reads in a row. A record whose chunk
// was rewritten since, or is gone, holds nothing to replay and is released.
import { ChunkEnv } from '../chunks/chunk-env';
import { ChunkRef, patchedInPlace } from '../chunks/chunk-ref';
import { readChunkInto } from '../chunks/chunk-io';
import { boundedAll } from '../chunks/bounded';
import { blockSpan } from '../chunks/intent-span';
import { logRecordId } from '../chunks/intent-backlog';
import { FileIo } from '../file-io';
import { LogRecord, RECORD_FLAG_SEALED, RECORD_FLAG_TIMES } from '../../src/intent-record';
import type { RecoveryReport } from './recovery';

/** Block reads in flight at once during replay (their device waits overlap). */
const REPLAY_READS_IN_FLIGHT_MAX = 16;

function blockKey(ref: ChunkRef, block: number): string {
  return `${ref.ino}/${ref.chunkIndex}/${block}`;
}

/** The live ref of every chunk the records name (null: gone). */
async function refsOf(files: FileIo, records: readonly LogRecord[]): Promise<Map<string, ChunkRef | null>> {
  const refs = new Map<string, ChunkRef | null>();
  for (const r of records) {
    const key = `${r.ino}/${r.chunkIndex}`;
    if (!refs.has(key)) refs.set(key, await files.withChunk(r.ino, r.chunkIndex, async (ref) => ref));
  }
  return refs;
}

interface Live { r: LogRecord; ref: ChunkRef }
interface Sorted { live: Live[]; gone: bigint[] }

/** The records to replay, and those that hold nothing to replay (their chunk was rewritten or is gone). */
async function sortOut(files: FileIo, records: readonly LogRecord[], report: RecoveryReport): Promise<Sorted> {
  const refs = await refsOf(files, records);
  const gone: bigint[] = [];
  const live: Live[] = [];
  for (const r of records) {
    const ref = refs.get(`${r.ino}/${r.chunkIndex}`) ?? null;
    const inside = ref !== null && r.offsetBytes + r.lengthBytes <= ref.logicalLenBytes;
    const stale = ref === null || ref.version !== r.version || !patchedInPlace(ref) || !inside;
    const sealed = (r.flags & RECORD_FLAG_SEALED) !== 0;
    // A sealed record is written by no build yet (encrypting layouts keep metadata rows).
    if (!stale && sealed) report.errors.push(`intent log record ${r.seq}: this build reads no sealed payload; skipped`);
    if (stale || sealed) {
      gone.push(r.seq);
      report.intentsResolved++;
    } else live.push({ r, ref });
  }
  return { live, gone };
}

/** Every block the records touch, as the file shows it before them; a block that cannot be read is missing. */
async function readBlocks(env: ChunkEnv, live: Live[], report: RecoveryReport): Promise<Map<string, Buffer>> {
  const wanted = new Map<string, { ref: ChunkRef; block: number }>();
  for (const { r, ref } of live) {
    const s = blockSpan(ref, r.offsetBytes, r.lengthBytes);
    for (let b = s.first; b <= s.last; b++) wanted.set(blockKey(ref, b), { ref, block: b });
  }
  const blocks = new Map<string, Buffer>();
  await boundedAll([...wanted.values()], REPLAY_READS_IN_FLIGHT_MAX, async ({ ref, block }) => {
    const bb = ref.fl.bitrotBlockBytes;
    const buf = Buffer.allocUnsafe(Math.min(bb, ref.logicalLenBytes - block * bb));
    try {
      await readChunkInto(env, ref, block * bb, buf.length, buf, 0, false);
      blocks.set(blockKey(ref, block), buf);
    } catch (err) {
      const where = `ino ${ref.ino} chunk ${ref.chunkIndex} block ${block}`;
      report.errors.push(`intent log replay: ${where}: ${(err as Error).message}`);
    }
  });
  return blocks;
}

/**
 * The records into the backlog (forReading: a read-only opener only overlays them). A record whose
 * blocks cannot be read stays in the log (its tail stays there): the next open tries again.
 */
export async function replayLog(
  env: ChunkEnv, files: FileIo, records: readonly LogRecord[], report: RecoveryReport, forReading = false,
): Promise<void> {
  const { live, gone } = await sortOut(files, records, report);
  const blocks = await readBlocks(env, live, report);
  const times = new Map<number, { mtimeNs: bigint; ctimeNs: bigint }>(); // each file's last record's
  for (const { r, ref } of live) {
    const bb = ref.fl.bitrotBlockBytes;
    const s = blockSpan(ref, r.offsetBytes, r.lengthBytes);
    const span = Buffer.allocUnsafe(s.end - s.start);
    let whole = true;
    for (let b = s.first; b <= s.last && whole; b++) {
      const cur = blocks.get(blockKey(ref, b));
      if (cur === undefined) whole = false;
      else cur.copy(span, (b - s.first) * bb);
    }
    if (!whole) {
      report.intentsKeptOpen++;
      continue;
    }
    span.set(r.payload, r.offsetBytes - s.start);
    // Later records go over this one's bytes (a new buffer each: no earlier span changes).
    for (let b = s.first; b <= s.last; b++) {
      const at = (b - s.first) * bb;
      blocks.set(blockKey(ref, b), span.subarray(at, Math.min(at + bb, span.length)));
    }
    const { ino, chunkIndex, version } = r;
    env.backlog.add({ id: logRecordId(r.seq), ino, chunkIndex, version, firstBlock: s.first, span, inPlace: true }, bb);
    if ((r.flags & RECORD_FLAG_TIMES) !== 0) times.set(r.ino, { mtimeNs: r.mtimeNs, ctimeNs: r.ctimeNs });
    report.blocksRepaired += s.last - s.first + 1;
  }
  if (forReading) return;
  env.db.transaction(() => { for (const [ino, t] of times) env.fileRows.stampIfNewer(ino, t); })();
  env.intentLog?.release(gone);
}
