// What a disk knows of the file ids and versions its store handed out (DESIGN §4 "Restored metadata"),
// kept in its identity marker (store/disk-identity.ts) beside its shards and not in the metadata, so
// that an older copy of the metadata (a restored backup) cannot hide it. inoHigh: the metadata's inode
// watermark at the last clean close; generation: the metadata's generation the disk last saw (raised
// at every read-write open and clean close) and closed: whether that session closed cleanly;
// unknownInos and unknownVersions: ids, and versions of files the metadata knows, an opener skipped
// because the disks had seen them and its metadata had not: their shards belong to metadata that is
// gone, never proven freed (store/meta/freed-evidence.ts). Older builds ignore these fields.
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

/** Versions [vLo, vHi] of every chunk of files [inoLo, inoHi], all included. */
export type VersionBox = readonly [number, number, number, number];

/** Boxes kept per disk; past it the two closest (by file id) merge into the box around both. */
export const UNKNOWN_BOXES_MAX = 16;

export interface DiskIds {
  inoHigh: number;
  unknownInos: IdRange[];
  generation: number;
  closed: boolean;
  unknownVersions: VersionBox[];
}

/** What the leak scan must never take for freed (skipped after a restore). */
export interface Skipped {
  inos: IdRange[];
  versions: VersionBox[];
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

function isBox(b: unknown): b is VersionBox {
  return Array.isArray(b) && b.length === 4 && isRange(b.slice(0, 2)) && isRange(b.slice(2));
}

function isCount(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 0;
}

/**
 * The disk's record; none yet (a marker of an older build, or a store never closed cleanly): 0 and no
 * ranges; no generation yet reads as a clean close (nothing to compare).
 */
export function readDiskIds(io: SyncIo, root: string, storeUuid: string): DiskIds {
  const m = readMarker(io, root, storeUuid);
  const { inoHigh = 0, unknownInos = [], generation = 0, closed = true, unknownVersions = [] } = m;
  const rangesOk = Array.isArray(unknownInos) && unknownInos.every(isRange);
  const boxesOk = Array.isArray(unknownVersions) && unknownVersions.every(isBox);
  if (!isCount(inoHigh) || !isCount(generation) || typeof closed !== 'boolean' || !rangesOk || !boxesOk)
    throw new ConfigError(
      markerPath(root),
      'bad inoHigh, generation, closed, unknownInos or unknownVersions in the identity marker',
    );
  return { inoHigh, unknownInos, generation, closed, unknownVersions } as DiskIds;
}

/** Write the record into the marker durably (tmp, fsync, rename, fsync dir), the marker's own fields kept. */
export function writeDiskIds(io: SyncIo, root: string, storeUuid: string, ids: DiskIds): void {
  const m = readMarker(io, root, storeUuid);
  const text = JSON.stringify({ ...m, ...ids }) + '\n';
  io.writeFileDurable(markerPath(root), Buffer.from(text, 'utf8'));
}

/** boxes with box added; past UNKNOWN_BOXES_MAX the two closest by file id become the box around both. */
export function withBox(boxes: readonly VersionBox[], box: VersionBox): VersionBox[] {
  const out = [...boxes, box].sort((a, b) => a[0] - b[0]);
  while (out.length > UNKNOWN_BOXES_MAX) {
    let best = 0;
    for (let i = 1; i < out.length - 1; i++) if (out[i + 1][0] - out[i][1] < out[best + 1][0] - out[best][1]) best = i;
    const [a, b] = [out[best], out[best + 1]];
    out.splice(best, 2, [a[0], Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.max(a[3], b[3])]);
  }
  return out;
}

/** Whether version of file id lies in one of the boxes. */
export function inBoxes(boxes: readonly VersionBox[], id: bigint, version: bigint): boolean {
  return boxes.some(
    ([lo, hi, vLo, vHi]) => id >= BigInt(lo) && id <= BigInt(hi) && version >= BigInt(vLo) && version <= BigInt(vHi),
  );
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
