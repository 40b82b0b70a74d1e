// The flush path's own memory (mount peak RSS). A flush window (up to BATCH_CHUNKS_MAX
// chunks of one file, fs/write-buffer.ts) needs one buffer of that many chunks: scattered runs are
// merged into it chunk by chunk, and a multi-part batch is joined in it before store.write. Before
// this, every flushing file took its own staging buffer (32 MiB) and chunk buffers (4 MiB each), and
// those past a small kept count were dropped to the garbage collector, which frees an external
// buffer only when it next runs: measured in the fio run, 174 MiB of such buffers were still
// resident in the job after the 4-job random write. Lanes are created on demand, kept for reuse
// (never dropped), and at most FLUSH_LANES_MAX windows of all files run at once; the memory they
// hold counts against the write-back buffer's bound. A lane unused for a while gives its pages back
// (src/idle-release.ts) and faults them in again at its next use.
import { allocLarge } from '../src/huge-buffer';
import { assert } from '../src/errors';
import { IdleRelease } from '../src/idle-release';

/**
 * Windows merged and written at once, across files. One lane already keeps the disks busy: its
 * store.write stores up to BATCH_CHUNKS_MAX chunks concurrently (3 or 6 shard files each). Two let
 * one file's merge read overlap another's write; more only hold more memory (each lane is 32 MiB with
 * 4 MiB chunks: 4 concurrent flushes held 4 x 64 MiB before).
 */
export const FLUSH_LANES_MAX = 2;
/** Flushes waiting for a lane at once (one per flushing file; files are far fewer). */
const LANE_WAITERS_MAX = 1 << 20;

/** One window's buffer; lent out by FlushLanes.acquire until release. */
export class FlushLane {
  private buf: Buffer | null = null;
  constructor(
    readonly bytes: number,
    private readonly lanes: FlushLanes,
  ) {}

  /** The lane's buffer (allocated at its first use: a window of whole single-part runs never needs it). */
  get buffer(): Buffer {
    if (this.buf === null) {
      this.buf = allocLarge(this.bytes);
      this.lanes.allocatedBytes += this.bytes;
    }
    return this.buf;
  }

  /** The buffer if allocated (not allocating it). */
  get allocated(): Buffer | null {
    return this.buf;
  }
}

export class FlushLanes {
  /** Memory of lane buffers allocated so far (kept for reuse: the flush path's resident memory). */
  allocatedBytes = 0;
  private readonly free: FlushLane[] = [];
  private created = 0;
  private readonly waiters: Array<(lane: FlushLane) => void> = [];

  constructor(
    readonly laneBytes: number,
    readonly lanesMax = FLUSH_LANES_MAX,
    readonly idle = new IdleRelease(),
  ) {
    assert(laneBytes > 0 && lanesMax > 0, 'flush lanes: bad sizes');
  }

  /** A lane for one window; waits while lanesMax windows run. */
  acquire(): FlushLane | Promise<FlushLane> {
    const lane = this.free.pop();
    if (lane !== undefined) {
      if (lane.allocated !== null) this.idle.unpark(lane.allocated);
      return lane;
    }
    if (this.created < this.lanesMax) {
      this.created++;
      return new FlushLane(this.laneBytes, this);
    }
    assert(this.waiters.length < LANE_WAITERS_MAX, 'flush lanes: too many flushes waiting');
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(lane: FlushLane): void {
    const next = this.waiters.shift();
    if (next !== undefined) next(lane);
    else {
      this.free.push(lane);
      if (lane.allocated !== null) this.idle.park(lane.allocated);
    }
  }
}
