// What a disk knows of the file ids its store handed out (DESIGN §4 "Restored metadata"), kept in its
// identity marker (store/disk-identity.ts) beside its shards and not in the metadata, so that an older
// copy of the metadata (a restored backup) cannot hide it. inoHigh: the metadata's inode watermark at
// the last clean close; unknownInos: ranges of ids an opener skipped because the disks had seen them
// and its metadata had not: their shards belong to metadata that is gone, never proven freed
// (store/meta/freed-evidence.ts). Older builds ignore both fields.
import { ConfigError } from './config';
import { SyncIo } from './io/sync-io';
import { DISK_MARKER_FORMAT, markerPath } from './disk-identity';

/**
 * Skipped ranges kept per disk (the marker is read up to 4 KiB); past it the two closest merge,
 * which only makes more ids unknown, never one freed.
 */
export const UNKNOWN_RANGES_MAX = 64;

/** Ids [lo, hi], both included. */
export type IdRange = readonly [number, number];

export interface DiskIds {
  inoHigh: number;
  unknownInos: IdRange[];
}

function isRange(r: unknown): r is IdRange {
  return Array.isArray(r) && r.length === 2 && r.every((n) => Number.isSafeInteger(n) && n >= 0) && r[0] <= r[1];
}

/** The marker of a disk that passed its identity check (store/disk-identity.ts diskProblem), as written. */
function readMarker(io: SyncIo, root: string, storeUuid: string): Record<string, unknown> {
  const file = markerPath(root);
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(io.readFile(file).toString('utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(file, `cannot read the disk's identity marker: ${(err as Error).message}`);
  }
  if (m === null || typeof m !== 'object' || m.format !== DISK_MARKER_FORMAT || m.storeUuid !== storeUuid)
    throw new ConfigError(file, `not this store's identity marker (store ${storeUuid}) any more`);
  return m;
}

/** The disk's record; none yet (a marker of an older build, or a store never closed cleanly): 0 and no ranges. */
export function readDiskIds(io: SyncIo, root: string, storeUuid: string): DiskIds {
  const m = readMarker(io, root, storeUuid);
  const inoHigh = m.inoHigh ?? 0;
  const ranges = m.unknownInos ?? [];
  if (!Number.isSafeInteger(inoHigh) || (inoHigh as number) < 0 || !Array.isArray(ranges) || !ranges.every(isRange))
    throw new ConfigError(markerPath(root), 'bad inoHigh or unknownInos in the identity marker');
  return { inoHigh: inoHigh as number, unknownInos: ranges };
}

/** Write the record into the marker durably (tmp, fsync, rename, fsync dir), the marker's own fields kept. */
export function writeDiskIds(io: SyncIo, root: string, storeUuid: string, ids: DiskIds): void {
  const m = readMarker(io, root, storeUuid);
  const text = JSON.stringify({ ...m, inoHigh: ids.inoHigh, unknownInos: ids.unknownInos }) + '\n';
  io.writeFileDurable(markerPath(root), Buffer.from(text, 'utf8'));
}

/** ranges with range added: merged with any it touches or overlaps; past UNKNOWN_RANGES_MAX the closest two merge. */
export function withRange(ranges: readonly IdRange[], range: IdRange): IdRange[] {
  const all = [...ranges, range].sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const [lo, hi] of all) {
    const last = out[out.length - 1];
    if (last !== undefined && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  while (out.length > UNKNOWN_RANGES_MAX) {
    let best = 0;
    for (let i = 1; i < out.length - 1; i++) if (out[i + 1][0] - out[i][1] < out[best + 1][0] - out[best][1]) best = i;
    out.splice(best, 2, [out[best][0], out[best + 1][1]]);
  }
  return out;
}

/** Whether id lies in one of the ranges. */
export function inRanges(ranges: readonly IdRange[], id: bigint): boolean {
  return ranges.some(([lo, hi]) => id >= BigInt(lo) && id <= BigInt(hi));
}
