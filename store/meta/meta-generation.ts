// The metadata's generation (DESIGN §4 "Restored metadata"): a count raised at every read-write open
// and clean close, committed and flushed before the disks' markers record it (store/disk-ids.ts). A
// marker ahead of the metadata proves the metadata older than the disks (a restored backup) even when
// no file was made since; a row of the counters table, so no schema change.
import { Db } from './meta';
import { dataOpsOf } from './engine-open';

const GENERATION_ROW = 'meta_generation';

/** The stored generation (0: none recorded yet). */
export function metaGeneration(db: Db): number {
  return Number(dataOpsOf(db).counterValues().value(GENERATION_ROW) ?? 0n);
}

/** Set it to generation, in a commit of its own (the caller flushes it before the disks record it). */
export function setMetaGeneration(db: Db, generation: number): void {
  db.transaction(() => dataOpsOf(db).counterValues().set(GENERATION_ROW, generation))();
}
