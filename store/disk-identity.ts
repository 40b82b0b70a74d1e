// Disk identity markers (DESIGN §3 "a failed disk keeps its slot"): mkfs writes
// <disk>/chunkfs-disk.json naming the store uuid and the disk id. open() checks it, so a
// disk whose device is not mounted (an empty mount point, or no directory at all) or
// that belongs to another store is served around as offline and never written into;
// recreating it on the root filesystem would silently move data off the real disk.
import * as nodePath from 'node:path';
import { ChunkfsError } from '../src/errors';
import { SyncIo } from './io/sync-io';

export const DISK_MARKER_FILE = 'chunkfs-disk.json';
export const DISK_MARKER_FORMAT = 'chunkfs-disk';
export const DISK_MARKER_VERSION = 1;
const MARKER_BYTES_MAX = 4096;

export interface DiskMarker {
  format: string;
  formatVersion: number;
  storeUuid: string;
  diskId: number;
}

/** A shard operation refused because its disk is offline (missing, foreign or vanished). */
export class DiskUnavailableError extends ChunkfsError {
  readonly code = 'ENODEV'; // classified as an I/O failure of that disk (store/chunks/shard-store.ts)
  constructor(
    diskId: number,
    readonly reason: string,
  ) {
    super(reason, { diskId: String(diskId) });
  }
}

/** The offline reason shown in status and errors: names the disk id and its path. */
export function offlineReason(diskId: number, root: string, problem: string): string {
  return `disk ${diskId} at ${root} is offline: ${problem}`;
}

export function markerPath(root: string): string {
  return nodePath.join(root, DISK_MARKER_FILE);
}

export function markerText(storeUuid: string, diskId: number): string {
  const m: DiskMarker = { format: DISK_MARKER_FORMAT, formatVersion: DISK_MARKER_VERSION, storeUuid, diskId };
  return JSON.stringify(m) + '\n';
}

/** Write the marker durably (tmp, fsync, rename, fsync dir; 0600); root must exist. */
export function writeMarker(io: SyncIo, root: string, storeUuid: string, diskId: number): void {
  io.writeFileDurable(markerPath(root), Buffer.from(markerText(storeUuid, diskId), 'utf8'));
}

/**
 * Why disk diskId at root cannot be used by store storeUuid, or null when its
 * marker matches. Only reads; never creates anything.
 */
export function diskProblem(io: SyncIo, root: string, storeUuid: string, diskId: number): string | null {
  let st;
  try {
    st = io.stat(root);
  } catch (err) {
    return `its directory cannot be examined (${(err as NodeJS.ErrnoException).code ?? 'error'}); it is not recreated`;
  }
  if (st === null) return 'its directory is missing (ENOENT; device not mounted?); it is not recreated';
  if (st.kind !== 'dir') return 'its path is not a directory';
  let text: string;
  try {
    text = io.readFile(markerPath(root)).subarray(0, MARKER_BYTES_MAX).toString('utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? `no identity marker ${DISK_MARKER_FILE} there (device not mounted? a new empty disk is adopted by Store.replaceDisk)`
      : `cannot read identity marker ${markerPath(root)}: ${(err as Error).message}`;
  }
  let m: Partial<DiskMarker>;
  try {
    m = JSON.parse(text) as Partial<DiskMarker>;
  } catch {
    return `identity marker ${markerPath(root)} is corrupt (not JSON)`;
  }
  if (typeof m !== 'object' || m === null || m.format !== DISK_MARKER_FORMAT)
    return `identity marker ${markerPath(root)} has the wrong format`;
  if (m.formatVersion !== DISK_MARKER_VERSION)
    return `identity marker ${markerPath(root)} has unknown formatVersion ${String(m.formatVersion)}`;
  if (m.storeUuid !== storeUuid || m.diskId !== diskId) {
    return `foreign disk: its marker names store ${String(m.storeUuid)} disk ${String(m.diskId)}, expected store ${storeUuid} disk ${diskId}`;
  }
  return null;
}
