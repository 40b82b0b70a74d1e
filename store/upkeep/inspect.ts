// Inspect shard files without the metadata (DESIGN §7 "the self-describing property"):
// decode the header (spec §3, its CRC), check that the §7 path agrees with it, and verify every block
// against its hash entry (spec §4, §9). Only the store's config (disk directories) and bitrot key
// are read; a chunk's shards are found from its file id by the path scheme alone, every version
// present. Shard files are read through the store's Io.
import * as nodePath from 'node:path';
import {
  HEADER_BYTES,
  FLAG_COMPRESSED,
  FLAG_ENCRYPTED,
  FLAG_MODE_EC,
  ShardHeader,
  decodeHeader,
} from '../../src/header';
import { verifyBlockRange } from '../../src/hashtable';
import { BitrotKey } from '../../src/keying';
import { CHUNKS_DIR, chunkDirRelPath, fanoutRelPath, parseShardRelPath } from '../../src/path';
import { HASH_ENTRY_BYTES, hashTableBytes } from '../../src/region';
import { NEEDLE_HEADER_BYTES, NEEDLE_MAGIC, decodeNeedleHeader, needleSpanBytes } from '../../src/needle';
import { crc32c } from '../../src/crc32c';
import { ChunkTransforms } from '../../src/chunk-transforms';
import { verifyShardBytes } from '../../src/shard';
import { PayloadDecode, decodeForInspect, joinEcPayload } from './inspect-decode';
import { Io, errnoCode } from '../io/io';

/** Bad blocks listed per shard; the count stays exact. */
export const BAD_BLOCKS_LISTED_MAX = 100;
/** Versions of one chunk listed by inspectChunk (a healthy chunk has one; reclaim removes the rest). */
const VERSIONS_MAX = 1_000;
/** A shard is at most a chunk (1 GiB, store/config.ts); anything larger is not a shard. */
const SHARD_FILE_BYTES_MAX = (1 << 30) + (1 << 26);

export interface ShardInspection {
  path: string;
  sizeBytes: number;
  /** Decoded header fields (u64s as decimal strings), or null when it does not decode. */
  header: Record<string, string | number> | null;
  /** replica or ec:K+M, from the header. */
  layout: string | null;
  /** The transforms the payload went through (spec §3.1 bits 1, 2): 'compressed', 'encrypted'; the algorithms are in the Layout. */
  transforms: string[];
  headerError: string | null;
  /** The §7 path names the same file id, version, chunk and shard as the header (null: not a canonical path). */
  pathAgrees: boolean | null;
  blockCount: number;
  badBlockCount: number;
  badBlocks: number[];
  /** Truncated table or data, or a read error. */
  dataError: string | null;
  /**
   * A replica shard of a container chunk (spec §11): the needles found walking it from its start, live
   * or dead alike (which are live only the metadata knows), up to the first byte that starts none.
   */
  needles: { count: number; listed: NeedleListing[] } | null;
  /** A transformed replica shard's payload decoded (with the store key when encrypted): tag, raw length, ratio. */
  decoded: PayloadDecode | null;
  ok: boolean;
}

/** What inspect decodes with: the store key (null: none loaded) and the layout's compression (undefined: named from the bytes). */
export interface InspectKeys {
  storeKey: Buffer | null;
  compression?: ChunkTransforms['compression'];
}

export interface NeedleListing {
  /** Offset in the container file (chunk * chunk_size + offset in the chunk). */
  containerOffsetBytes: string;
  fileId: string;
  dataLenBytes: number;
  cookie: number;
  flags: number;
  /** data_crc32c matches the data (spec §11.4 step 5). */
  crcOk: boolean;
}

/** Needles listed per shard; the count stays exact. */
export const NEEDLES_LISTED_MAX = 10_000;

/** Walk needles from the start of a container chunk's payload (they never cross a chunk, DESIGN §3). */
function needlesOf(h: ShardHeader, payload: Buffer): { count: number; listed: NeedleListing[] } | null {
  if (payload.length < NEEDLE_HEADER_BYTES || !payload.subarray(0, 4).equals(NEEDLE_MAGIC)) return null;
  const base = h.chunkIndex * h.chunkSizeBytes;
  const out = { count: 0, listed: [] as NeedleListing[] };
  for (let at = 0; at + NEEDLE_HEADER_BYTES <= payload.length && out.count < payload.length / NEEDLE_HEADER_BYTES; ) {
    let n;
    try {
      n = decodeNeedleHeader(payload.subarray(at));
    } catch {
      break; // zeros (a gap or free space) or garbage: no needle starts here
    }
    const span = needleSpanBytes(n.dataLenBytes);
    if (at + span > payload.length) break;
    const data = payload.subarray(at + NEEDLE_HEADER_BYTES, at + NEEDLE_HEADER_BYTES + n.dataLenBytes);
    out.count++;
    if (out.listed.length < NEEDLES_LISTED_MAX) {
      out.listed.push({
        containerOffsetBytes: (base + BigInt(at)).toString(),
        fileId: n.fileId.toString(),
        dataLenBytes: n.dataLenBytes,
        cookie: n.cookie,
        flags: n.flags,
        crcOk: crc32c(data) === n.dataCrc32c,
      });
    }
    at += span;
  }
  return out;
}

function headerFields(h: ShardHeader): Record<string, string | number> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]));
}

/** Every block that fails, found with the native span check (each call stops at the first bad block). */
function badBlocksOf(key: BitrotKey, h: ShardHeader, table: Buffer, data: Buffer): { count: number; listed: number[] } {
  const pos = { fileId: h.fileId, chunkIndex: h.chunkIndex, shardIndex: h.shardIndex, version: h.version };
  const bb = h.bitrotBlockBytes;
  const listed: number[] = [];
  let count = 0;
  for (let from = 0; from < h.blockCount; ) {
    const bad = verifyBlockRange(
      key,
      pos,
      from,
      data.subarray(from * bb),
      table.subarray(from * HASH_ENTRY_BYTES, h.blockCount * HASH_ENTRY_BYTES),
      bb,
    );
    if (bad < 0) break;
    count++;
    if (listed.length < BAD_BLOCKS_LISTED_MAX) listed.push(bad);
    from = bad + 1;
  }
  return { count, listed };
}

function pathAgrees(path: string, diskRoot: string | undefined, h: ShardHeader): boolean | null {
  if (diskRoot === undefined) return null;
  const p = parseShardRelPath(nodePath.relative(diskRoot, path).split(nodePath.sep).join('/'));
  if (p === null) return null;
  return (
    p.fileId === h.fileId && p.version === h.version && p.chunkIndex === h.chunkIndex && p.shardIndex === h.shardIndex
  );
}

async function readAll(io: Io, path: string): Promise<Buffer> {
  const f = await io.open(path, 'read');
  try {
    const size = await f.sizeBytes();
    if (size > SHARD_FILE_BYTES_MAX) throw new Error(`${size} bytes is larger than any shard`);
    return await f.pread(size, 0);
  } finally {
    await f.close();
  }
}

/** Decode and verify one shard file; diskRoot (when known) lets the path be checked against the header. */
export async function inspectShardFile(
  io: Io,
  key: BitrotKey,
  path: string,
  diskRoot?: string,
  keys?: InspectKeys,
): Promise<ShardInspection> {
  const out: ShardInspection = {
    path,
    sizeBytes: 0,
    header: null,
    layout: null,
    transforms: [],
    headerError: null,
    pathAgrees: null,
    blockCount: 0,
    badBlockCount: 0,
    badBlocks: [],
    dataError: null,
    needles: null,
    decoded: null,
    ok: false,
  };
  let bytes: Buffer;
  try {
    bytes = await readAll(io, path);
  } catch (err) {
    out.dataError = `cannot read: ${(err as Error).message}`;
    return out;
  }
  out.sizeBytes = bytes.length;
  let h: ShardHeader;
  try {
    h = decodeHeader(bytes.subarray(0, HEADER_BYTES));
  } catch (err) {
    out.headerError = (err as Error).message;
    return out;
  }
  out.header = headerFields(h);
  out.layout = (h.flags & FLAG_MODE_EC) !== 0 ? `ec:${h.ecK}+${h.ecM}` : 'replica';
  out.transforms = [
    (h.flags & FLAG_COMPRESSED) !== 0 ? 'compressed' : '',
    (h.flags & FLAG_ENCRYPTED) !== 0 ? 'encrypted' : '',
  ].filter((x) => x !== '');
  out.pathAgrees = pathAgrees(path, diskRoot, h);
  out.blockCount = h.blockCount;
  const tableEnd = HEADER_BYTES + hashTableBytes(h.blockCount);
  const dataLen = Number(h.shardDataLenBytes);
  if (bytes.length < tableEnd + dataLen) {
    out.dataError = `truncated: ${bytes.length} bytes, the header needs ${tableEnd + dataLen}`;
    return out;
  }
  const payload = bytes.subarray(tableEnd, tableEnd + dataLen);
  const bad = badBlocksOf(key, h, bytes.subarray(HEADER_BYTES, tableEnd), payload);
  // Only a replica shard holds the chunk's bytes in order; an EC shard holds fragments (spec §6).
  if ((h.flags & FLAG_MODE_EC) === 0) out.needles = needlesOf(h, payload);
  // A replica's payload is the whole stored payload: decode it once its blocks verified (spec §9 first).
  if ((h.flags & FLAG_MODE_EC) === 0 && bad.count === 0 && keys !== undefined)
    out.decoded = decodeForInspect(h, payload, keys.storeKey, keys.compression);
  out.badBlockCount = bad.count;
  out.badBlocks = bad.listed;
  out.ok = bad.count === 0 && out.pathAgrees !== false && out.decoded?.tagOk !== false;
  return out;
}

/** A version's stored payload decoded (EC: joined from its data shards). */
export interface VersionDecode {
  version: string;
  decoded: PayloadDecode;
}

/** A shard file's verified header and payload, or null when it does not verify. */
async function verifiedShard(
  io: Io,
  key: BitrotKey,
  path: string,
): Promise<{ header: ShardHeader; payload: Buffer } | null> {
  try {
    return verifyShardBytes(await readAll(io, path), key);
  } catch {
    return null;
  }
}

/**
 * Each EC version of a chunk decoded from its k data shards (they must all verify: inspect reads,
 * it does not reconstruct). Versions missing a data shard, and untransformed ones, are left out.
 */
export async function decodeEcVersions(
  io: Io,
  key: BitrotKey,
  found: FoundShard[],
  keys: InspectKeys,
): Promise<VersionDecode[]> {
  const out: VersionDecode[] = [];
  for (const version of [...new Set(found.map((f) => f.version))]) {
    const data = new Map<number, { header: ShardHeader; payload: Buffer }>();
    for (const f of found.filter((x) => x.version === version)) {
      const v = await verifiedShard(io, key, f.path);
      if (v !== null && (v.header.flags & FLAG_MODE_EC) !== 0 && v.header.shardIndex < v.header.ecK)
        data.set(v.header.shardIndex, v);
    }
    const first = data.values().next().value;
    if (first === undefined || data.size < first.header.ecK) continue;
    const shards = Array.from({ length: first.header.ecK }, (_, i) => data.get(i)!.payload);
    const decoded = decodeForInspect(
      first.header,
      joinEcPayload(first.header, shards),
      keys.storeKey,
      keys.compression,
    );
    if (decoded !== null) out.push({ version: version.toString(), decoded });
  }
  return out;
}

async function listDir(io: Io, dir: string): Promise<string[]> {
  try {
    return await io.readdir(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

export interface FoundShard {
  diskId: number;
  diskRoot: string;
  version: bigint;
  shardIndex: number;
  path: string;
}

/** Every shard file of chunk chunkIndex of fileId on the given disks, every version present (spec §7 paths). */
export async function findChunkShards(
  io: Io,
  diskRoots: ReadonlyMap<number, string>,
  fileId: bigint,
  chunkIndex: number,
): Promise<FoundShard[]> {
  const prefix = `${fileId.toString(16).padStart(16, '0')}.v`;
  const out: FoundShard[] = [];
  for (const [diskId, root] of diskRoots) {
    const versions = (await listDir(io, nodePath.join(root, fanoutRelPath(fileId))))
      .filter((n) => n.startsWith(prefix) && /^[0-9]+$/.test(n.slice(prefix.length)))
      .slice(0, VERSIONS_MAX);
    for (const v of versions) {
      const version = BigInt(v.slice(prefix.length));
      const dir = nodePath.join(root, chunkDirRelPath(fileId, version, BigInt(chunkIndex)));
      for (const name of await listDir(io, dir)) {
        const m = /^(0|[1-9][0-9]*)\.shard$/.exec(name);
        if (m !== null)
          out.push({ diskId, diskRoot: root, version, shardIndex: Number(m[1]), path: nodePath.join(dir, name) });
      }
    }
  }
  return out.sort((a, b) => (a.version === b.version ? a.shardIndex - b.shardIndex : a.version < b.version ? -1 : 1));
}

/** The disk (id, root) whose directory holds path, if any. */
export function diskOf(diskRoots: ReadonlyMap<number, string>, path: string): { diskId: number; root: string } | null {
  for (const [diskId, root] of diskRoots) {
    if (path.startsWith(nodePath.join(root, CHUNKS_DIR) + nodePath.sep)) return { diskId, root };
  }
  return null;
}
