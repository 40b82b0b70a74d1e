// Chunk-key path scheme (spec §7, DESIGN §3):
//   .chunks/{p0}/{p1}/{file_id:016x}.v{version}/c{chunk_index}/{shard_index}.shard
// h = xxh3_64(seed 0) of the 8-byte little-endian file_id; p0 = h & 0xff,
// p1 = (h >> 8) & 0xff, two lowercase hex digits each. Temp: {final}.tmp.{rand:016x}.
import { assert } from './errors';
import { u64le, xxh3_64 } from './xxh3';

export const CHUNKS_DIR = '.chunks';
const U64_MAX = (1n << 64n) - 1n;

function hex2(n: bigint): string {
  return n.toString(16).padStart(2, '0');
}

function hex16(n: bigint): string {
  assert(n >= 0n && n <= U64_MAX, 'u64 out of range');
  return n.toString(16).padStart(16, '0');
}

/** Fan-out directories ".chunks/{p0}/{p1}" for a file (keys on file_id only, spec §7). */
export function fanoutRelPath(fileId: bigint): string {
  const h = xxh3_64(u64le(fileId));
  return `${CHUNKS_DIR}/${hex2(h & 0xffn)}/${hex2((h >> 8n) & 0xffn)}`;
}

/** A file's directory prefix ".chunks/{p0}/{p1}/{file_id:016x}" (spec §7); its versions are ".v{version}" beside it. */
export function fileRelPrefix(fileId: bigint): string {
  return `${fanoutRelPath(fileId)}/${hex16(fileId)}`;
}

/** chunkDirRelPath under a fileRelPrefix already computed (the xxh3 fan-out costs more than the rest). */
export function chunkDirRelPathUnder(filePrefix: string, version: bigint, chunkIndex: bigint): string {
  assert(version >= 0n && version <= U64_MAX && chunkIndex >= 0n && chunkIndex <= U64_MAX, 'u64 out of range');
  return `${filePrefix}.v${version}/c${chunkIndex}`;
}

export function chunkDirRelPath(fileId: bigint, version: bigint, chunkIndex: bigint): string {
  return chunkDirRelPathUnder(fileRelPrefix(fileId), version, chunkIndex);
}

/** shardRelPath under a fileRelPrefix already computed. */
export function shardRelPathUnder(filePrefix: string, version: bigint, chunkIndex: bigint, shardIndex: number): string {
  assert(Number.isInteger(shardIndex) && shardIndex >= 0 && shardIndex < 0x10000, 'shard_index is u16');
  return `${chunkDirRelPathUnder(filePrefix, version, chunkIndex)}/${shardIndex}.shard`;
}

export function shardRelPath(fileId: bigint, version: bigint, chunkIndex: bigint, shardIndex: number): string {
  return shardRelPathUnder(fileRelPrefix(fileId), version, chunkIndex, shardIndex);
}

/** Temp name during a whole-shard write (spec §7, §8.1). */
export function tempName(finalPath: string, randomU64: bigint): string {
  return `${finalPath}.tmp.${hex16(randomU64)}`;
}

const TEMP_RE = /\.shard\.tmp\.[0-9a-f]{16}$/;
export function isTempName(name: string): boolean {
  return TEMP_RE.test(name);
}

const SHARD_RE =
  /^\.chunks\/([0-9a-f]{2})\/([0-9a-f]{2})\/([0-9a-f]{16})\.v(0|[1-9][0-9]*)\/c(0|[1-9][0-9]*)\/(0|[1-9][0-9]*)\.shard$/;

/** Inverse of shardRelPath; null for anything that is not a canonical shard path. */
export function parseShardRelPath(
  rel: string,
): { fileId: bigint; version: bigint; chunkIndex: bigint; shardIndex: number } | null {
  const m = SHARD_RE.exec(rel);
  if (m === null) return null;
  const fileId = BigInt('0x' + m[3]);
  const version = BigInt(m[4]);
  const chunkIndex = BigInt(m[5]);
  const shardIndex = Number(m[6]);
  if (version > U64_MAX || chunkIndex > U64_MAX || shardIndex >= 0x10000) return null;
  // The fan-out must be the one this file_id hashes to, or the path is not ours.
  if (shardRelPath(fileId, version, chunkIndex, shardIndex) !== rel) return null;
  return { fileId, version, chunkIndex, shardIndex };
}
