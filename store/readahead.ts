// Sequential-read hints: when a file is read sequentially, the shard data of the
// next chunks is read ahead into the page cache (the bytes are dropped, never
// served), so the verified read that follows finds them in memory. Nothing here can
// change what a read returns: every returned byte still goes through the §9 verify.
import { LRUCache } from 'lru-cache';
import { ChunkEnv } from './chunk-env';
import { ChunkRef } from './chunk-ref';

const FILES_TRACKED_MAX = 1024;
const CHUNKS_AHEAD = 2;
const HINTS_IN_FLIGHT_MAX = 4;

export class ReadaheadHints {
  /** Per inode: where the last read ended, and the highest chunk already hinted. */
  private readonly state = new LRUCache<number, { lastEnd: number; hintedTo: number }>({ max: FILES_TRACKED_MAX });
  private inFlight = 0;

  constructor(private readonly env: ChunkEnv) {}

  /** Called after a read of [offset, end) of ino; refOf(c) gives chunk c's live ref or null. */
  onRead(ino: number, chunkSizeBytes: number, offsetBytes: number, endBytes: number, refOf: (c: number) => ChunkRef | null): void {
    const s = this.state.get(ino) ?? { lastEnd: -1, hintedTo: -1 };
    const sequential = offsetBytes === s.lastEnd;
    s.lastEnd = endBytes;
    this.state.set(ino, s);
    if (!sequential) return;
    const next = Math.floor(endBytes / chunkSizeBytes);
    for (let c = Math.max(next, s.hintedTo + 1); c < next + CHUNKS_AHEAD; c++) {
      if (this.inFlight >= HINTS_IN_FLIGHT_MAX) return;
      const ref = refOf(c);
      s.hintedTo = c;
      if (ref === null) continue;
      this.inFlight++;
      void this.warm(ref).finally(() => this.inFlight--);
    }
  }

  /** Read the shards a verified read of this chunk would use (replica 0 / the k data shards). */
  private async warm(ref: ChunkRef): Promise<void> {
    const shards = ref.fl.layout.kind === 'replica' ? [0] : Array.from({ length: ref.fl.layout.k }, (_, i) => i);
    await Promise.all(shards.map((i) => this.env.shards.warm(ref, i).catch(() => undefined)));
  }

  forget(ino: number): void {
    this.state.delete(ino);
  }
}
