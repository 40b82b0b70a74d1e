// What the disks hold, walked once by an opener that doubts its metadata (DESIGN §4 "Restored
// metadata", store/restored-meta.ts): the highest file id of any shard directory, and which chunk
// versions have at least one shard file (temp files of a write cut short count: their version was
// handed out all the same). Costs a readdir of every fan-out, file-version and chunk directory, so it
// runs only when the disks' markers say the metadata may be older than they are.
import * as nodePath from 'node:path';
import { CHUNKS_DIR, isTempName, parseShardRelPath } from '../src/path';
import { Io, errnoCode } from './io/io';

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

async function listDir(io: Io, dir: string): Promise<string[]> {
  try {
    return await io.readdir(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

/** "ino/chunk/version" key of a chunk version. */
export function versionKey(ino: number | bigint, chunkIndex: number | bigint, version: bigint): string {
  return `${ino}/${chunkIndex}/${version}`;
}

/** Walk .chunks/p0/p1/fid.vV/cN/ on every root. */
export async function walkDisks(io: Io, roots: readonly string[]): Promise<DisksHold> {
  let high = 0n;
  const versions = new Map<string, VersionOnDisk>();
  for (const root of roots) {
    const top = nodePath.join(root, CHUNKS_DIR);
    for (const p0 of await listDir(io, top))
      for (const p1 of await listDir(io, nodePath.join(top, p0)))
        for (const vdir of await listDir(io, nodePath.join(top, p0, p1)))
          for (const cdir of await listDir(io, nodePath.join(top, p0, p1, vdir)))
            for (const name of await listDir(io, nodePath.join(top, p0, p1, vdir, cdir))) {
              const rel = [CHUNKS_DIR, p0, p1, vdir, cdir, name].join('/');
              const p = parseShardRelPath(isTempName(rel) ? rel.replace(/\.tmp\.[0-9a-f]{16}$/, '') : rel);
              if (p === null) continue; // not ours to judge
              if (p.fileId > high) high = p.fileId;
              const key = versionKey(p.fileId, p.chunkIndex, p.version);
              if (p.fileId <= BigInt(Number.MAX_SAFE_INTEGER) && !versions.has(key))
                versions.set(key, { ino: Number(p.fileId), chunkIndex: Number(p.chunkIndex), version: p.version });
            }
  }
  const highestId = Number(high > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : high);
  return { highestId, versions: [...versions.values()] };
}
