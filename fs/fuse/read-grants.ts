// Read grants (DESIGN §6): after JS served a read of a clean chunk (replica or EC), the
// transport lets native/fuse3/read_grant.cc answer the next reads of that chunk in C, on the thread
// that read them, each block still verified against its hash (spec §9). A grant is offered only
// when the mount holds nothing the store does not (no buffered bytes, no flush or truncate under
// way) and the store finds nothing laid over the stored bytes (store/chunks/read-grant.ts). It ends
// when any request that may change a file arrives or is answered (native, request.h
// MayChangeData), when the store changes anything a read shows (Store.onReadChange), after
// GRANT_TTL_MS, and when a read through it fails (then JS reads again: failover, counting and heal
// stay in the one read pipeline).
import type { FsCore } from '../core';
import type { Fuse3Native, Session } from './fuse3-native';
import type { ReadGrantStats } from './transport';

/**
 * A grant's lifetime: relatime moves atime on the first read a day after the last move, and a
 * granted read does not tell JS; re-granting costs one JS read per chunk per second.
 */
export const GRANT_TTL_MS = 1000;
/**
 * Chunks refused in the current epoch, not asked again until something changes (a granted chunk
 * reaches JS again only when its grant lapsed or could not answer a read: it is offered again).
 */
const REFUSALS_PER_EPOCH_MAX = 4096;

const NO_CIPHER = Buffer.alloc(0);
/** The key slot of an EC data shard not granted (read_grant.h: never used). */
const NO_KEY = Buffer.alloc(32);

export class ReadGrants {
  private epoch = -1;
  /** The session is going: the store's late changes (its flush at unmount) must not reach it. */
  private ended = false;
  private readonly refused = new Set<string>();
  private readonly nums = new Float64Array(13);

  constructor(
    private readonly native: Fuse3Native,
    private readonly session: Session,
    private readonly core: FsCore,
  ) {
    core.store.onReadChange?.(() => {
      if (!this.ended) this.native.grantsBump(this.session);
    });
  }

  /** Grants are possible at all on this mount. */
  static possible(core: FsCore): boolean {
    return !core.followsWriter && core.atime.mode !== 'strictatime' && core.store.readGrant !== undefined;
  }

  /** Before the session is destroyed: no grant is made or bumped after. */
  end(): void {
    this.ended = true;
  }

  /** JS answered a read of fh at offsetBytes: grant its chunk when nothing could make a grant wrong. */
  offer(fh: number, offsetBytes: number): void {
    if (this.ended) return;
    try {
      this.offerChunk(fh, offsetBytes);
    } catch (err) {
      // A grant is an optimisation: the read was answered already; say why, keep serving through JS.
      this.core.opts.log(`read grant of handle ${fh} at ${offsetBytes}: ${(err as Error).message}`);
    }
  }

  private offerChunk(fh: number, offsetBytes: number): void {
    const f = this.core.handles.fileIfOpen(fh);
    if (f === undefined || !f.buffer.isEmpty || !f.lock.idle || offsetBytes >= f.sizeBytes) return;
    const epoch = this.native.grantEpoch(this.session);
    if (epoch !== this.epoch) {
      this.epoch = epoch;
      this.refused.clear();
    }
    const key = `${f.ino}/${Math.floor(offsetBytes / this.core.store.defaultChunkSizeBytes)}`;
    if (this.refused.has(key) || this.refused.size >= REFUSALS_PER_EPOCH_MAX) return;
    const g = this.core.store.readGrant!(f.ino, offsetBytes);
    if (g === null) {
      this.refused.add(key);
      return;
    }
    const n = this.nums;
    n[0] = f.ino;
    n[1] = g.chunkIndex;
    n[2] = g.chunkSizeBytes;
    n[3] = f.sizeBytes;
    n[4] = g.dataAtBytes;
    n[5] = g.blockBytes;
    n[6] = g.shardDataLenBytes;
    n[7] = g.logicalLenBytes;
    n[8] = GRANT_TTL_MS;
    n[9] = g.cipher?.segmentBytes ?? 0;
    n[10] = g.payloadLenBytes;
    n[11] = g.ec?.k ?? 0;
    n[12] = g.ec?.ecBlockSizeBytes ?? 0;
    const cipher = g.cipher === null ? NO_CIPHER : Buffer.concat([g.cipher.nonceBase, g.cipher.dataKey]);
    // Every shard's table has one size (one entry per block of shard_data_len); a shard not granted: zeros.
    const tableBytes = g.shards.find((s) => s !== null)!.table.length;
    const paths = g.shards.map((s) => s?.path ?? '');
    const tables = Buffer.concat(g.shards.map((s) => s?.table ?? Buffer.alloc(tableBytes)));
    const keys = Buffer.concat(g.shards.map((s) => s?.key ?? NO_KEY));
    // A refusal (the epoch moved during this call, the shard vanished) only means JS keeps serving it.
    if (this.native.grantRead(this.session, epoch, paths, n, tables, keys, cipher) !== true) this.refused.add(key);
  }

  stats(): ReadGrantStats {
    const [servedReads, failedReads, grantedChunks, servedBytes] = this.native.grantStats(this.session);
    return { servedReads, failedReads, grantedChunks, servedBytes };
  }
}
