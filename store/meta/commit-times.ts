// The times a data commit stamps on its inode (DESIGN §5 "One view"): the mount shows a
// file's mtime and ctime from its buffered writes at once, and storing the bytes later (close batch,
// timer, memory pressure, fsync, unmount) must commit exactly those, never the time of the flush.
// Callers without buffered times (tools, tests, the store's own writes) get "now".
import { nowNs } from './meta';
import { toColumns } from './far-times';

export interface CommitTimes {
  /** Any time POSIX allows (far ones go to mtime_far: store/meta/far-times.ts). */
  mtimeNs: bigint;
  /** At least the row's ctime: a commit never moves ctime back (a chmod may have come meanwhile). */
  ctimeNs: bigint;
}

/** The bind values of mtime_ns, mtime_far and ctime_ns (never lowered), in that order (each engine's file-rows.ts). */
export function timeColumns(times: CommitTimes | null): [bigint, string | null, bigint] {
  const t = nowNs();
  const m = toColumns(times?.mtimeNs ?? t);
  const c = toColumns(times?.ctimeNs ?? t);
  return [m.ns, m.far, c.ns];
}
