// Metadata older than its disks (DESIGN §4 "Restored metadata"): a backup of meta.db or of the
// PostgreSQL database put back after the store wrote on. Its inode watermark is below file ids the
// disks have seen handed out (their markers' record, store/disk-ids.ts, or the shards themselves) or that the
// intent log names; handing those numbers out again would make new files meet the old files' shards.
// A read-write open finds it before anything is served and moves the watermark past every id seen:
// the skipped ids are recorded on the disks first, so their shards stay unknown to the leak scan
// (reported, never removed: nothing is destroyed on evidence of absence). A clean close records the
// watermark on every online disk for the next open to compare.
import * as nodePath from 'node:path';
import { CHUNKS_DIR } from '../src/path';
import { Db } from './meta/sql-engine';
import { dataOpsOf } from './meta/engine-open';
import { IdRange, readDiskIds, withRange, writeDiskIds } from './disk-ids';
import { Io, errnoCode } from './io/io';
import { SyncIo } from './io/sync-io';

/** A file version's directory under .chunks/p0/p1/: {file_id:016x}.v{version} (spec §7). */
const FILE_DIR_RE = /^([0-9a-f]{16})\.v(0|[1-9][0-9]*)$/;

export interface DisksSeen {
  io: Io;
  syncIo: SyncIo;
  db: Db;
  /** The online disks' directories. */
  roots: string[];
  storeUuid: string;
  storeDir: string;
  log: (line: string) => void;
}

async function listDir(io: Io, dir: string): Promise<string[]> {
  try {
    return await io.readdir(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

/** The highest file id of any shard directory on the disks (0: none). Walks every fan-out directory. */
async function highestFileIdOnDisks(io: Io, roots: readonly string[]): Promise<number> {
  let high = 0n;
  for (const root of roots) {
    const top = nodePath.join(root, CHUNKS_DIR);
    for (const p0 of await listDir(io, top)) {
      for (const p1 of await listDir(io, nodePath.join(top, p0))) {
        for (const name of await listDir(io, nodePath.join(top, p0, p1))) {
          const m = FILE_DIR_RE.exec(name);
          if (m !== null && BigInt('0x' + m[1]) > high) high = BigInt('0x' + m[1]);
        }
      }
    }
  }
  return Number(high > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : high);
}

/**
 * Before recovery and serving: when the disks or the intent log name file ids above the metadata's
 * watermark, record them as skipped on every online disk, then raise the watermark past them (one line).
 */
export async function skipIdsSeenOnDisks(s: DisksSeen, logInos: readonly number[]): Promise<void> {
  const evidence = dataOpsOf(s.db).inodeEvidence();
  const watermark = evidence.highestIno();
  const records = s.roots.map((root) => ({ root, ids: readDiskIds(s.syncIo, root, s.storeUuid) }));
  const recorded = Math.max(0, ...records.map((r) => r.ids.inoHigh));
  const logged = Math.max(0, ...logInos);
  if (recorded <= watermark && logged <= watermark) return;
  const seen = Math.max(recorded, logged, await highestFileIdOnDisks(s.io, s.roots));
  const range: IdRange = [watermark + 1, seen];
  // The disks first: once the watermark is past these ids, only this record keeps their shards unknown.
  for (const r of records)
    writeDiskIds(s.syncIo, r.root, s.storeUuid, { ...r.ids, unknownInos: withRange(r.ids.unknownInos, range) });
  evidence.raiseWatermark(seen);
  s.log(
    `store ${s.storeDir}: its metadata is older than its disks (a restored copy?): they have seen file ids up to ` +
      `${seen}, the metadata only up to ${watermark}; new files are numbered above ${seen}, and the shards of ids ` +
      `${range[0]}..${range[1]} are kept as unknown (chunkfs fsck lists them)`,
  );
}

/** The skipped id ranges every online disk records (the leak scan's unknown ids). */
export function skippedIds(syncIo: SyncIo, roots: readonly string[], storeUuid: string): IdRange[] {
  return roots.flatMap((root) => readDiskIds(syncIo, root, storeUuid).unknownInos);
}

/**
 * At a clean close, after the last commit is durable: the watermark, on every online disk. A disk
 * that cannot take it (full, failing) keeps its older record: only a later detection is lost, so
 * the others are still written; the failures are returned, one line each is the caller's.
 */
export function recordWatermark(s: Pick<DisksSeen, 'syncIo' | 'db' | 'roots' | 'storeUuid'>): string[] {
  const watermark = dataOpsOf(s.db).inodeEvidence().highestIno();
  const failed: string[] = [];
  for (const root of s.roots) {
    try {
      const ids = readDiskIds(s.syncIo, root, s.storeUuid);
      if (ids.inoHigh < watermark) writeDiskIds(s.syncIo, root, s.storeUuid, { ...ids, inoHigh: watermark });
    } catch (err) {
      failed.push(`${root}: ${(err as Error).message}`);
    }
  }
  return failed;
}
