// Which containers due for compaction a background round takes (DESIGN §5 "Small files"): only those
// whose dead bytes held still since the round before. A container still gaining dead bytes is in the
// middle of removals (an `rm -rf` of a tree, a package manager replacing one): its live needles are
// about to die too, and copying them now would write bytes the next unlinks make dead again.
import type { ContainerRow } from '../meta/containers';

/**
 * A container gaining dead bytes in every round still goes after this many rounds deferred (about a
 * second each): a steady trickle of removals never holds its dead bytes for good.
 */
export const COMPACT_DEFER_ROUNDS_MAX = 10;

interface Seen {
  deadBytes: number;
  deferredRounds: number;
}

export class SettledContainers {
  /** Containers the last round deferred, by id: their dead bytes then and the rounds they waited. */
  private last = new Map<number, Seen>();
  /** Those this round deferred so far. */
  private current = new Map<number, Seen>();

  constructor(readonly deferRoundsMax = COMPACT_DEFER_ROUNDS_MAX) {}

  /** A new background round: what the one before deferred is what take() compares with. */
  startRound(): void {
    this.last = this.current;
    this.current = new Map();
  }

  /**
   * The due containers (open ones to retire, sealed ones to compact) this round takes: those whose
   * dead bytes are what the last round saw, or that waited deferRoundsMax rounds. The others wait
   * for the next round; a container first seen due waits one (its dead bytes were rising to get it due).
   */
  take(due: readonly ContainerRow[]): ContainerRow[] {
    const out: ContainerRow[] = [];
    for (const row of due) {
      const before = this.last.get(row.id);
      if (before !== undefined && (before.deadBytes === row.deadBytes || before.deferredRounds >= this.deferRoundsMax))
        out.push(row);
      else this.current.set(row.id, { deadBytes: row.deadBytes, deferredRounds: (before?.deferredRounds ?? 0) + 1 });
    }
    return out;
  }
}
