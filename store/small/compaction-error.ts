// A compaction that could not move live needles out of a container (DESIGN §5 "Small files"): each
// needle whose append failed stays readable where it was and its container is kept, so the round
// must say so (`chunkfs compact` exits 1) instead of reporting a round that did nothing.
import { ChunkfsError } from '../../src/errors';

export class CompactionError extends ChunkfsError {
  constructor(
    readonly containerId: number,
    readonly failedNeedles: number,
    readonly liveNeedles: number,
    /** Where the appends went: the open container and its disks. */
    readonly target: string,
    readonly firstCause: string,
  ) {
    super(
      `compaction of container ${containerId}: ${failedNeedles} of ${liveNeedles} live needles could not be ` +
        `appended to ${target} (${firstCause}); they stay readable in container ${containerId}, kept for a ` +
        'later round; check those disks (chunkfs status)',
    );
  }
}

/** A needle's file was rewritten while its copy was appended: the copy is dead at once, nothing failed. */
export class NeedleRewritten extends Error {
  constructor(ino: number) {
    super(`inode ${ino}: rewritten meanwhile`);
  }
}
