// fallocate(FALLOC_FL_PUNCH_HOLE / ZERO_RANGE) in the store: every chunk wholly inside the range
// becomes a hole (version 0 in the chunk map: it reads as zeros) and its version goes on the reclaim
// queue in the same transaction (DESIGN §5: metadata first, the background reclaimer deletes the
// shards, as for truncate), so the space comes back without the caller waiting on deletes. The parts
// of the range in partly covered chunks (all of it for a small file, whose needle is smaller than a
// chunk) are returned for the caller to overwrite with zeros.
import type { ChunkEnv } from './chunk-env';
import type { ChunkRef } from './chunk-ref';
import { retireChunk } from './live-version';
import { FsError } from '../fs-error';
import { nowNs } from '../meta/meta';

export interface ByteRange {
  offsetBytes: number;
  lengthBytes: number;
}

/** What a punch needs of the file layer (store/file-io.ts): a chunk under its inode lock, and cache drops. */
export interface ChunkLocks {
  withChunk<T>(ino: number, c: number, fn: (ref: ChunkRef | null) => Promise<T>): Promise<T>;
  forget(ino: number): void;
  /** A transaction group holding ino's rows commits first (DESIGN §5). */
  settle(ino: number): Promise<void>;
}

export async function punchHole(
  env: ChunkEnv,
  files: ChunkLocks,
  ino: number,
  offsetBytes: number,
  lengthBytes: number,
): Promise<ByteRange[]> {
  const cs = env.fileRows.chunkSizeBytes(ino);
  if (cs === undefined) throw new FsError('EINVAL', `inode ${ino} is not a regular file`);
  const end = offsetBytes + lengthBytes;
  const first = Math.ceil(offsetBytes / cs);
  const last = Math.floor(end / cs); // exclusive
  if (last <= first) return lengthBytes > 0 ? [{ offsetBytes, lengthBytes }] : [];
  await files.settle(ino);
  // Only live chunks are visited (a punch over a huge sparse range costs its live chunks, not its length).
  const live = env.map
    .live(ino, first)
    .filter((r) => r.chunkIndex < last)
    .map((r) => r.chunkIndex);
  for (const c of live) {
    await files.withChunk(ino, c, async (ref) => {
      if (ref === null) return; // a hole already, or the file went meanwhile
      env.db.transaction(() => {
        retireChunk(env, ino, c, ref.version, ref.fl);
        env.fileRows.touch(ino, nowNs());
      })();
      env.backlog.dropChunk(ino, c);
      files.forget(ino);
    });
  }
  const edges: ByteRange[] = [];
  if (offsetBytes < first * cs) edges.push({ offsetBytes, lengthBytes: first * cs - offsetBytes });
  if (end > last * cs) edges.push({ offsetBytes: last * cs, lengthBytes: end - last * cs });
  return edges;
}
