// What the disks hold, walked once by an opener that doubts its metadata (DESIGN §4 "Restored
// metadata", store/restored-meta.ts): the highest file id of any shard directory, and which chunk
// versions have at least one shard file (temp files of a write cut short count: their version was
// handed out all the same). Costs a readdir of every fan-out, file-version and chunk directory, so it
// runs only when the disks' markers say the metadata may be older than they are. The readdirs are
// synchronous (nothing is served yet, and a promise per directory cost 4-5 times the CPU) and each
// level's names are parsed once, as the spec §7 path parts they must be; a chunk directory's listing
// is read only for a version no earlier disk showed a shard of, and judged by its first shard name.
import * as nodePath from 'node:path';
import { CHUNKS_DIR, fanoutRelPath } from '../src/path';
import { errnoCode } from './io/io';
import { SyncIo } from './io/sync-io';

/** A chunk version found on the disks. */
export interface VersionOnDisk {
  ino: number;
  chunkIndex: number;
  version: bigint;
}

export interface DisksHold {
  /** The highest file id of any shard directory (0: none). */
  highestId: number;
  /** Every chunk version with a shard file on some disk, once. */
  versions: VersionOnDisk[];
}

const U64_MAX = (1n << 64n) - 1n;
/** spec §7 names: "{file_id:016x}.v{version}", "c{chunk_index}", "{shard_index}.shard" (+ ".tmp.{rand:016x}"). */
const VERSION_DIR_RE = /^([0-9a-f]{16})\.v(0|[1-9][0-9]*)$/;
const CHUNK_DIR_RE = /^c(0|[1-9][0-9]*)$/;
const SHARD_NAME_RE = /^(0|[1-9][0-9]*)\.shard(?:\.tmp\.[0-9a-f]{16})?$/;
const SHARD_INDEX_LIMIT = 0x10000;

function listDir(io: SyncIo, dir: string): string[] {
  try {
    return io.readdir(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

/** "ino/chunk/version" key of a chunk version. */
export function versionKey(ino: number | bigint, chunkIndex: number | bigint, version: bigint): string {
  return `${ino}/${chunkIndex}/${version}`;
}

/** Whether names hold a shard file's name (a temp one included). */
function holdsShard(names: readonly string[]): boolean {
  return names.some((n) => {
    const m = SHARD_NAME_RE.exec(n);
    return m !== null && Number(m[1]) < SHARD_INDEX_LIMIT;
  });
}

/** fileId and version of a file-version directory under fan-out p0/p1; null when it is not ours to judge. */
function parseVersionDir(fanout: string, name: string): { fileId: bigint; version: bigint } | null {
  const m = VERSION_DIR_RE.exec(name);
  if (m === null) return null;
  const fileId = BigInt('0x' + m[1]);
  const version = BigInt(m[2]);
  if (version > U64_MAX || fanoutRelPath(fileId) !== fanout) return null;
  return { fileId, version };
}

/** Walk .chunks/p0/p1/fid.vV/cN/ on every root. */
export function walkDisks(io: SyncIo, roots: readonly string[]): DisksHold {
  let high = 0n;
  const versions = new Map<string, VersionOnDisk>();
  for (const root of roots) {
    const top = nodePath.join(root, CHUNKS_DIR);
    for (const p0 of listDir(io, top))
      for (const p1 of listDir(io, nodePath.join(top, p0))) {
        const fanoutDir = nodePath.join(top, p0, p1);
        for (const vdir of listDir(io, fanoutDir)) {
          const v = parseVersionDir(`${CHUNKS_DIR}/${p0}/${p1}`, vdir);
          if (v === null) continue; // not ours to judge
          for (const cdir of listDir(io, nodePath.join(fanoutDir, vdir))) {
            const c = CHUNK_DIR_RE.exec(cdir);
            if (c === null || BigInt(c[1]) > U64_MAX) continue;
            const key = versionKey(v.fileId, BigInt(c[1]), v.version);
            if (versions.has(key)) continue; // found on an earlier disk: its shards here change nothing
            if (!holdsShard(listDir(io, nodePath.join(fanoutDir, vdir, cdir)))) continue;
            if (v.fileId > high) high = v.fileId;
            if (v.fileId <= BigInt(Number.MAX_SAFE_INTEGER))
              versions.set(key, { ino: Number(v.fileId), chunkIndex: Number(c[1]), version: v.version });
          }
        }
      }
  }
  const highestId = Number(high > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : high);
  return { highestId, versions: [...versions.values()] };
}
