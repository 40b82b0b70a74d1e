// Whole-store walks of the metadata for scrub, fsck and status (DESIGN §7): read-only queries across
// tables, each engine's own (store/meta/data-ops.ts InodeSurveys, DESIGN §9 "Operations").
import type { Db } from './sql-engine';
import type { LiveChunk } from './data-ops';
import { dataOpsOf } from './engine-open';

export type { LiveChunk } from './data-ops';

/** Every live chunk (version > 0, DESIGN §4), by inode and chunk index. */
export function liveChunks(db: Db): LiveChunk[] {
  return dataOpsOf(db).surveys().liveChunks();
}

/** Every inode packed as a needle (spec §11.3), in container order so a walk reads each container forward. */
export function packedInodes(db: Db): number[] {
  return dataOpsOf(db).surveys().packedInodes();
}

/** Inodes no name, orphan mark or container row accounts for (fsck), at most limit. */
export function unaccountedInodes(db: Db, limit: number): number[] {
  return dataOpsOf(db).surveys().unaccountedInodes(limit);
}

/** Container rows whose inode is gone (fsck), at most limit. */
export function containerRowsWithoutInode(db: Db, limit: number): number[] {
  return dataOpsOf(db).surveys().containerRowsWithoutInode(limit);
}

/** Regular files per layout, containers not counted (status). */
export function layoutsInUse(db: Db): Array<{ layout: string; files: number }> {
  return dataOpsOf(db).surveys().layoutsInUse();
}
