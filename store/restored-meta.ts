// Metadata older than its disks (DESIGN §4 "Restored metadata"): a backup of meta.db or of the
// PostgreSQL database put back after the store wrote on. Its inode watermark may be below file ids
// the disks have seen handed out, and the files it knows may have chunk versions on the disks above
// what it handed out (rewritten after the backup) or name versions whose shards were reclaimed since.
// Handing those numbers out again would make new files and new versions meet (overwrite, and on a
// failed write reclaim) shards of data the metadata never knew. A read-write open finds it before
// anything is served: the disks' markers record the metadata's generation (raised at every read-write
// open and clean close) and whether that session closed cleanly. Markers ahead of the metadata, or a
// session that never closed (a backup taken during it cannot be told apart), make the opener walk the
// disks (store/restored-walk.ts) and move past every id and version seen: what it skips is recorded
// on the disks first, so those shards stay unknown to the leak scan (reported, never removed: nothing
// is destroyed on evidence of absence). Versions the metadata names and no disk holds are reported.
import { Db } from './meta/sql-engine';
import { dataOpsOf } from './meta/engine-open';
import { metaGeneration, setMetaGeneration } from './meta/meta-generation';
import { DiskIds, IdRange, Skipped, VersionBox, readDiskIds, withBox, withRange, writeDiskIds } from './disk-ids';
import { SyncIo } from './io/sync-io';
import { VersionOnDisk, versionKey, walkDisks } from './restored-walk';

/** Missing versions named in the open's one line at most (the rest: fsck and scrub list them). */
const MISSING_NAMED_MAX = 3;

export interface DisksSeen {
  syncIo: SyncIo;
  db: Db;
  /** The online disks' directories. */
  roots: string[];
  storeUuid: string;
  storeDir: string;
  log: (line: string) => void;
  /** Makes every commit so far durable (the metadata's flush). */
  flush: () => Promise<void>;
}

interface DiskRecord {
  root: string;
  ids: DiskIds;
}

function readRecords(s: Pick<DisksSeen, 'syncIo' | 'roots' | 'storeUuid'>): DiskRecord[] {
  return s.roots.map((root) => ({ root, ids: readDiskIds(s.syncIo, root, s.storeUuid) }));
}

/**
 * Before recovery and serving: when the disks or the intent log may be ahead of the metadata, walk
 * the disks and skip what they hold beyond it; then this open's generation, on the metadata first.
 */
export async function skipIdsSeenOnDisks(s: DisksSeen, logInos: readonly number[]): Promise<void> {
  const watermark = dataOpsOf(s.db).inodeEvidence().highestIno();
  const generation = metaGeneration(s.db);
  let records = readRecords(s);
  const diskGeneration = Math.max(0, ...records.map((r) => r.ids.generation));
  const recorded = Math.max(0, ...records.map((r) => r.ids.inoHigh));
  const logged = Math.max(0, ...logInos);
  const ahead = diskGeneration > generation;
  const unclosed = records.some((r) => r.ids.generation === diskGeneration && !r.ids.closed);
  if (ahead || unclosed || recorded > watermark || logged > watermark) {
    const held = walkDisks(s.syncIo, s.roots);
    const seen = Math.max(recorded, logged, held.highestId);
    if (seen > watermark) skipIds(s, records, watermark, seen);
    records = readRecords(s);
    skipVersions(s, records, held.versions, watermark);
    reportMissing(s, held.versions);
  }
  // The metadata first: a crash between the two leaves the disks behind it, which proves nothing.
  const next = Math.max(generation, diskGeneration) + 1;
  setMetaGeneration(s.db, next);
  await s.flush();
  const failed = recordGeneration(s, next, false);
  if (failed.length > 0) s.log(`the metadata's generation was not recorded on ${failed.join('; ')}`);
}

/**
 * generation (and whether the session closed cleanly, with the watermark then) on every online disk.
 * A disk that cannot take it (full, failing) keeps its older record: only a later detection is lost,
 * and the others still record it; the failures are returned, one line each is the caller's.
 */
function recordGeneration(
  s: Pick<DisksSeen, 'syncIo' | 'roots' | 'storeUuid'>,
  generation: number,
  closed: boolean,
  watermark = 0,
): string[] {
  const failed: string[] = [];
  for (const root of s.roots) {
    try {
      const ids = readDiskIds(s.syncIo, root, s.storeUuid);
      const inoHigh = Math.max(ids.inoHigh, watermark);
      writeDiskIds(s.syncIo, root, s.storeUuid, { ...ids, inoHigh, generation, closed });
    } catch (err) {
      failed.push(`${root}: ${(err as Error).message}`);
    }
  }
  return failed;
}

/** Ids (watermark, seen] recorded as skipped on every online disk, then the watermark raised past them. */
function skipIds(s: DisksSeen, records: DiskRecord[], watermark: number, seen: number): void {
  const range: IdRange = [watermark + 1, seen];
  // The disks first: once the watermark is past these ids, only this record keeps their shards unknown.
  for (const r of records)
    writeDiskIds(s.syncIo, r.root, s.storeUuid, { ...r.ids, unknownInos: withRange(r.ids.unknownInos, range) });
  dataOpsOf(s.db).inodeEvidence().raiseWatermark(seen);
  s.log(
    `store ${s.storeDir}: its metadata is older than its disks (a restored copy?): they have seen file ids up to ` +
      `${seen}, the metadata only up to ${watermark}; new files are numbered above ${seen}, and the shards of ids ` +
      `${range[0]}..${range[1]} are kept as unknown (chunkfs fsck lists them)`,
  );
}

/**
 * Versions of files the metadata knows above what it handed out (written after its backup): recorded
 * as skipped on every online disk, one box per file, then each chunk's next version numbered above
 * them, so no write makes (or, failing, reclaims) a version whose shards are there already.
 */
function skipVersions(s: DisksSeen, records: DiskRecord[], held: VersionOnDisk[], watermark: number): void {
  const evidence = dataOpsOf(s.db).inodeEvidence();
  const ahead = held.filter((v) => {
    if (v.ino > watermark || !evidence.inodeExists(v.ino)) return false; // unknown, or freed with its file
    const row = evidence.chunkVersions(v.ino, v.chunkIndex);
    return row === undefined || v.version > row.maxVersion;
  });
  if (ahead.length === 0) return;
  const boxes = new Map<number, [number, number]>();
  for (const v of ahead) {
    const b = boxes.get(v.ino) ?? [Number(v.version), Number(v.version)];
    boxes.set(v.ino, [Math.min(b[0], Number(v.version)), Math.max(b[1], Number(v.version))]);
  }
  const add = (list: VersionBox[]): VersionBox[] =>
    [...boxes].reduce<VersionBox[]>((l, [ino, [lo, hi]]) => withBox(l, [ino, ino, lo, hi]), list);
  for (const r of records)
    writeDiskIds(s.syncIo, r.root, s.storeUuid, { ...r.ids, unknownVersions: add(r.ids.unknownVersions) });
  s.db.transaction(() => {
    for (const v of ahead) evidence.raiseMaxVersion(v.ino, v.chunkIndex, v.version);
  })();
  const first = ahead[0];
  s.log(
    `store ${s.storeDir}: its metadata is older than its disks (a restored copy?): ${ahead.length} chunk ` +
      `version(s) of ${boxes.size} file(s) it knows were written after it (e.g. file ${first.ino} chunk ` +
      `${first.chunkIndex} version ${first.version}); new versions are numbered above them, and their shards ` +
      `are kept as unknown (chunkfs fsck lists them)`,
  );
}

/** Live versions the metadata names with no shard file on any online disk: one line (fsck and scrub list them). */
function reportMissing(s: DisksSeen, held: VersionOnDisk[]): void {
  const present = new Set(held.map((v) => versionKey(v.ino, v.chunkIndex, v.version)));
  const missing: string[] = [];
  const files = new Set<bigint>();
  for (const v of dataOpsOf(s.db).chunkRows().liveVersions()) {
    if (present.has(versionKey(v.ino, v.chunkIndex, v.version))) continue;
    files.add(v.ino);
    if (missing.length < MISSING_NAMED_MAX) missing.push(`file ${v.ino} chunk ${v.chunkIndex} version ${v.version}`);
  }
  if (files.size === 0) return;
  s.log(
    `store ${s.storeDir}: ${files.size} file(s) name chunk versions no online disk holds (reclaimed after the ` +
      `backup this metadata was restored from?), e.g. ${missing.join(', ')}; they read as errors, and ` +
      `chunkfs fsck and scrub list them`,
  );
}

/** What every online disk records as skipped (the leak scan's unknown ids and versions). */
export function skippedIds(syncIo: SyncIo, roots: readonly string[], storeUuid: string): Skipped {
  const records = roots.map((root) => readDiskIds(syncIo, root, storeUuid));
  return { inos: records.flatMap((r) => r.unknownInos), versions: records.flatMap((r) => r.unknownVersions) };
}

/**
 * At a clean close, after the last commit is durable: a new generation, on the metadata first, then
 * on every online disk with the watermark and the clean close (recordGeneration: a disk that cannot
 * take it keeps a record saying the session never closed, so the next open walks the disks).
 */
export async function recordWatermark(
  s: Pick<DisksSeen, 'syncIo' | 'db' | 'roots' | 'storeUuid' | 'flush'>,
): Promise<string[]> {
  const watermark = dataOpsOf(s.db).inodeEvidence().highestIno();
  const generation = metaGeneration(s.db) + 1;
  setMetaGeneration(s.db, generation);
  await s.flush();
  return recordGeneration(s, generation, true, watermark);
}
