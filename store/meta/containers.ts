// Table `containers` (spec §11.1, DESIGN §5 "Small files"), owned by this class. A container is an
// internal file that holds needles: an inode of type 'file' with no directory entry (so no listing
// shows it) and a row here: its pack class (the target layout of the files packed into it), state,
// append offset and dead bytes. Its layout while open: store/small/pack-class.ts.

export type ContainerState = 'open' | 'full' | 'sealing' | 'sealed';

export interface ContainerRow {
  id: number;
  packClass: string;
  state: ContainerState;
  usedBytes: number;
  deadBytes: number;
  capacityBytes: number;
  /** A container being rewritten in its target layout ('sealing'): the one it replaces. */
  sealedFrom: number | null;
}

/**
 * The one owner of table `containers`, an engine's operations (sql/containers.ts for both SQL
 * engines; made by dataOpsOf(db).containers()). Callers group its changes with theirs in one transaction.
 */
export interface Containers {
  get(id: number): ContainerRow | null;
  /** The open container of a pack class, the oldest if several. */
  openOf(packClass: string): ContainerRow | null;
  add(row: ContainerRow): void;
  /** An append committed: the new append offset; gapBytes (chunk-boundary padding, DESIGN §3) are dead at once. */
  setUsed(id: number, usedBytes: number, gapBytes: number): void;
  /** A needle turned dead (unlink, overwrite, moved to chunks, compacted away). */
  addDead(id: number, bytes: number): void;
  setState(id: number, state: ContainerState): void;
  remove(id: number): void;
  /** By id. */
  inState(state: ContainerState): ContainerRow[];
  /** By id. */
  all(): ContainerRow[];
  /**
   * Containers in this state with dead/used >= ratio and at least deadBytesMin (or, for small test
   * containers, ratio x capacity) dead (spec §11.5),
   * most dead first. By used bytes, not capacity: a container retired before it filled (its dead
   * bytes held space) counts what it holds.
   */
  compactable(state: ContainerState, ratio: number, deadBytesMin: number, limit: number): ContainerRow[];
}
