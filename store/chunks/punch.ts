// fallocate(FALLOC_FL_PUNCH_HOLE / ZERO_RANGE) in the store: every chunk wholly inside the range
// becomes a hole (version 0 in the chunk map: it reads as zeros) and its version goes on the reclaim
// queue in the same transaction (DESIGN §5: metadata first, the background reclaimer deletes the
// shards, as for truncate), so the space comes back without the caller waiting on deletes. The parts
// of the range in partly covered chunks (all of it for a small file, whose needle is smaller than a
// chunk) are returned for the caller to overwrite with zeros.
import type { ChunkEnv } from './chunk-env';
import type { FileIo } from './file-io';
import { retireChunk } from './live-version';
import { FsError } from '../fs-error';
import type { Statement } from 'better-sqlite3';
import { Db, nowNs } from '../meta/meta';

export interface ByteRange { offsetBytes: number; lengthBytes: number }

/** Statements prepared once per database (a prepare compiles SQL: not per fallocate, issue 20). */
const STATEMENTS = new WeakMap<Db, { chunkSize: Statement; setTimes: Statement }>();

function statementsOf(db: Db): { chunkSize: Statement; setTimes: Statement } {
  let s = STATEMENTS.get(db);
  if (s === undefined) {
    s = {
      chunkSize: db.prepare("SELECT chunk_size FROM inodes WHERE ino = ? AND type = 'file'"),
      setTimes: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
    };
    STATEMENTS.set(db, s);
  }
  return s;
}

export async function punchHole(env: ChunkEnv, files: FileIo, ino: number, offsetBytes: number, lengthBytes: number): Promise<ByteRange[]> {
  const { chunkSize, setTimes } = statementsOf(env.db);
  const row = chunkSize.get(ino) as { chunk_size: bigint } | undefined;
  if (row === undefined) throw new FsError('EINVAL', `inode ${ino} is not a regular file`);
  const cs = Number(row.chunk_size);
  const end = offsetBytes + lengthBytes;
  const first = Math.ceil(offsetBytes / cs);
  const last = Math.floor(end / cs); // exclusive
  if (last <= first) return lengthBytes > 0 ? [{ offsetBytes, lengthBytes }] : [];
  // Only live chunks are visited (a punch over a huge sparse range costs its live chunks, not its length).
  const live = env.map.live(ino, first).filter((r) => r.chunkIndex < last).map((r) => r.chunkIndex);
  for (const c of live) {
    await files.withChunk(ino, c, async (ref) => {
      if (ref === null) return; // a hole already, or the file went meanwhile
      env.db.transaction(() => {
        retireChunk(env, ino, c, ref.version, ref.fl);
        const t = nowNs();
        setTimes.run(t, t, ino);
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
