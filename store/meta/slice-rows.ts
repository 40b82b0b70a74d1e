// The Slice pointer of a small file (spec §11.3): four columns of its inode row, and nothing else
// (no data in the database). The one owner of the slice_* columns of table `inodes`; each engine's
// folder implements it (sql/slice-rows.ts for both SQL engines, which spell it alike; DESIGN §9 "Operations").
import { Slice } from '../../src/slice';

/** The slice columns as an engine reads them. */
export type SliceValues = Record<string, bigint | null>;

/** The Slice of a row's columns; null when it names no container. */
export function sliceOf(r: SliceValues | undefined): Slice | null {
  if (r === undefined || r.slice_container === null) return null;
  return {
    containerId: BigInt(r.slice_container),
    offsetBytes: BigInt(r.slice_offset!),
    lengthBytes: Number(r.slice_length),
    cookie: Number(r.slice_cookie),
  };
}

export interface SliceRows {
  get(ino: number): Slice | null;
  /** null: the file holds no needle (empty, or stored in chunks of its own). */
  set(ino: number, slice: Slice | null): void;
  /** Repoint ino to `to` only if it still points at `from` (compaction's liveness rule, spec §11.5). */
  setIf(ino: number, from: Slice, to: Slice): boolean;
  /** Every slice of container `from` now names `to` (a seal's rewrite keeps offsets); how many. */
  moveAll(from: number, to: number): number;
  countIn(containerId: number): number;
  liveBytesIn(containerId: number): number;
}
