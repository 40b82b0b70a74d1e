// fallocate(FALLOC_FL_PUNCH_HOLE / ZERO_RANGE) in the store: every chunk wholly inside the range
// becomes a hole (version 0 in the chunk map: it reads as zeros) and its shards are deleted, so the
// space comes back. Retired first, deleted after: a crash in between leaves unreferenced shards,
// which recovery collects (as after truncate, DESIGN §5). The parts of the range in partly covered
// chunks are returned for the caller to overwrite with zeros.
import type { ChunkEnv } from './chunk-env';
import type { FileIo } from './file-io';
import { shardCount } from './layout';
import { FsError } from './fs-error';
import { nowNs } from './meta';

/** Chunks one punch may retire (2^50-byte files of 4 MiB chunks: 2^28). */
export const PUNCH_CHUNKS_MAX = 1 << 28;

export interface ByteRange { offsetBytes: number; lengthBytes: number }

export async function punchHole(env: ChunkEnv, files: FileIo, ino: number, offsetBytes: number, lengthBytes: number): Promise<ByteRange[]> {
  const row = env.db.prepare("SELECT chunk_size FROM inodes WHERE ino = ? AND type = 'file'").get(ino) as { chunk_size: bigint } | undefined;
  if (row === undefined) throw new FsError('EINVAL', `inode ${ino} is not a regular file`);
  const cs = Number(row.chunk_size);
  const end = offsetBytes + lengthBytes;
  const first = Math.ceil(offsetBytes / cs);
  const last = Math.floor(end / cs); // exclusive
  if (last <= first) return lengthBytes > 0 ? [{ offsetBytes, lengthBytes }] : [];
  if (last - first > PUNCH_CHUNKS_MAX) throw new FsError('EINVAL', 'punch range too large');
  const setTimes = env.db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?');
  for (let c = first; c < last; c++) {
    await files.withChunk(ino, c, async (ref) => {
      if (ref === null) return; // a hole already
      env.db.transaction(() => {
        env.map.retire(ino, c);
        const t = nowNs();
        setTimes.run(t, t, ino);
      })();
      files.forget(ino);
      await env.shards.deleteChunk(ref, shardCount(ref.fl.layout));
    });
  }
  const edges: ByteRange[] = [];
  if (offsetBytes < first * cs) edges.push({ offsetBytes, lengthBytes: first * cs - offsetBytes });
  if (end > last * cs) edges.push({ offsetBytes: last * cs, lengthBytes: end - last * cs });
  return edges;
}
