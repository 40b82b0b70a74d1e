// `chunkfs inspect` (DESIGN §7): decode and verify shard files without the metadata, in
// this process (reading shard files needs no mount: only the store's config and bitrot key).
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import type { ToolCommand } from '../tool-args';
import { Target, TargetError, isStoreDir, resolveTarget } from '../target';
import { chunkfsMountContaining } from '../mounts';
import { jsonText } from '../output';
import { bytesText } from '../status-text';
import { openConfig } from '../../store/config';
import { nodeSyncIo } from '../../store/io/sync-io';
import { NodeIo } from '../../store/io/io';
import { runAction } from '../run-action';
import type { InodeArgs, InodeResult } from '../actions/inode';
import {
  InspectKeys,
  ShardInspection,
  VersionDecode,
  decodeEcVersions,
  diskOf,
  findChunkShards,
  inspectShardFile,
} from '../../store/upkeep/inspect';
import { PayloadDecode } from '../../store/upkeep/inspect-decode';
import { parseLayout } from '../../src/layout';

const STORE_SEARCH_DEPTH_MAX = 64;
const SHARD_NAME_RE = /\.shard(\.tmp\.[0-9a-f]{16})?$/;

type InspectCommand = Extract<ToolCommand, { verb: 'inspect' }>;

export interface InspectResult {
  store: string;
  /** Set when a file's chunk was inspected. */
  file?: { ino: number; path: string | null; chunkIndex: number };
  /** A small file packed as a needle: where (the metadata says); its container chunk's shards are inspected. */
  needle?: { containerIno: number; chunkIndex: number; offsetBytes: string; lengthBytes: number };
  shards: ShardInspection[];
  /** EC chunks: each transformed version's payload joined from its data shards and decoded. */
  decodedVersions?: VersionDecode[];
}

/** Needles shown per shard in the text (--json lists up to NEEDLES_LISTED_MAX). */
const NEEDLES_SHOWN_MAX = 20;

/**
 * What the metadata says of the file (the live mount's, through its control socket, or a read-only
 * open): a file with no shard files of its own may be packed in a container, and its layout names
 * the compression of its transformed chunks (spec §3.1 "algo in Layout").
 */
async function inodeOf(target: Target, ino: number): Promise<InodeResult | null> {
  const { result } = await runAction(target, 'inode', { ino } satisfies InodeArgs, () => undefined);
  return result as InodeResult | null;
}

/** The compression a layout text names (undefined: unknown, inspect names it from the bytes). */
function compressionOf(layout: string | undefined): InspectKeys['compression'] {
  if (layout === undefined || layout === '') return undefined;
  try {
    return parseLayout(layout).transforms.compression;
  } catch {
    return undefined;
  }
}

/** The store a shard file belongs to: TARGET, else the store directory above it, else the default store. */
function storeOfShard(abs: string, targetArg: string | undefined): Target {
  if (targetArg !== undefined) return resolveTarget(targetArg);
  let dir = path.dirname(abs);
  for (let depth = 0; depth < STORE_SEARCH_DEPTH_MAX && dir !== path.dirname(dir); depth++, dir = path.dirname(dir)) {
    if (isStoreDir(dir)) return { storeDir: dir, mountpoint: null };
  }
  return resolveTarget(undefined);
}

async function inspectShard(c: InspectCommand, abs: string): Promise<InspectResult> {
  const target = storeOfShard(abs, c.target);
  const opened = openConfig(target.storeDir, nodeSyncIo, process.env.CHUNKFS_KEYFILE);
  const disk = diskOf(opened.diskPaths, abs);
  if (disk === null)
    throw new TargetError(`${abs} is not under a disk of the store ${target.storeDir}; name its store`);
  const io = new NodeIo();
  try {
    return {
      store: target.storeDir,
      shards: [await inspectShardFile(io, opened.key, abs, disk.root, { storeKey: opened.storeKey })],
    };
  } finally {
    io.closeAll();
  }
}

async function inspectChunk(
  target: Target,
  ino: number,
  chunkIndex: number,
  shownPath: string | null,
): Promise<InspectResult> {
  const opened = openConfig(target.storeDir, nodeSyncIo, process.env.CHUNKFS_KEYFILE);
  const io = new NodeIo();
  try {
    let found = await findChunkShards(io, opened.diskPaths, BigInt(ino), chunkIndex);
    const inode = await inodeOf(target, ino);
    const needle = found.length === 0 && chunkIndex === 0 ? (inode?.needle ?? null) : null;
    if (needle !== null)
      found = await findChunkShards(io, opened.diskPaths, BigInt(needle.containerIno), needle.chunkIndex);
    const keys: InspectKeys = { storeKey: opened.storeKey, compression: compressionOf(inode?.layout) };
    const shards: ShardInspection[] = [];
    for (const f of found) shards.push(await inspectShardFile(io, opened.key, f.path, f.diskRoot, keys));
    const decodedVersions = await decodeEcVersions(io, opened.key, found, keys);
    return {
      store: target.storeDir,
      file: { ino, path: shownPath, chunkIndex },
      ...(needle === null ? {} : { needle }),
      shards,
      ...(decodedVersions.length === 0 ? {} : { decodedVersions }),
    };
  } finally {
    io.closeAll();
  }
}

/**
 * The file's bytes still in the mount's memory (write-back, close batch) have no shard yet: fsync it
 * through the mount first (this is a client process of the mount, never its server), so the shards
 * inspected hold what a read of the file returns.
 */
async function storeNow(abs: string): Promise<void> {
  const fh = await fsp.open(abs, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function run(c: InspectCommand): Promise<InspectResult> {
  if (c.ino !== undefined) return inspectChunk(resolveTarget(c.target), c.ino, c.chunk, null);
  const abs = path.resolve(c.path!);
  const m = chunkfsMountContaining(abs);
  if (m !== null) {
    if (c.target !== undefined)
      throw new TargetError(`${abs} is in a chunkfs mount, which names its store; drop '${c.target}'`);
    const st = await fsp.stat(abs);
    if (!st.isFile()) throw new TargetError(`${abs} is not a regular file`);
    await storeNow(abs);
    return inspectChunk(resolveTarget(m.mountpoint), st.ino, c.chunk, '/' + path.relative(m.mountpoint, abs));
  }
  if (!SHARD_NAME_RE.test(abs))
    throw new TargetError(`${abs} is neither a shard file (*.shard) nor a file in a chunkfs mount`);
  return inspectShard(c, abs);
}

/** "decoded: tag ok, 4.0 MiB of content from 1.2 MiB stored (3.41x)", or why not. */
function decodeText(d: PayloadDecode): string {
  if (!d.ok) return `${d.tagOk === false ? 'GCM TAG FAILS' : 'not decoded'}: ${d.error ?? '?'}`;
  const tag = d.tagOk === true ? `GCM tag ok (cipher ${d.cipher}), ` : '';
  return `decoded: ${tag}${bytesText(d.rawBytes!)} of content from ${bytesText(d.storedBytes)} stored (${d.ratio!.toFixed(2)}x)`;
}

/** mine: the container offset of the inspected file's needle, marked in the listing. */
function shardText(s: ShardInspection, mine?: string): string {
  const lines: string[] = [];
  const verdict = s.ok ? 'ok' : 'BAD';
  lines.push(`${s.path}: ${verdict}`);
  if (s.header === null) {
    lines.push(`  header does not decode: ${s.headerError ?? s.dataError ?? '?'}`);
    return lines.join('\n');
  }
  const h = s.header;
  const created = new Date(Number(BigInt(h.createdUnixNanos) / 1_000_000n)).toISOString();
  lines.push(
    `  file ${h.fileId} chunk ${h.chunkIndex} version ${h.version} shard ${h.shardIndex}, ${s.layout}, ` +
      `${bytesText(h.shardDataLenBytes)} of data in ${s.blockCount} block(s) of ${bytesText(h.bitrotBlockBytes)}, chunk ${bytesText(h.chunkLogicalLenBytes)}, written ${created}`,
  );
  if (s.transforms.length > 0)
    lines.push(
      `  payload ${s.transforms.join(' and ')} (spec §3.1; algorithms in the file's layout): ${bytesText(h.chunkLogicalLenBytes)} stored for ${bytesText(h.contentLenBytes)} of content`,
    );
  const pathNote =
    s.pathAgrees === null
      ? 'not a canonical shard path'
      : s.pathAgrees
        ? 'agrees with its path'
        : 'DISAGREES with its path (file id, version, chunk or shard)';
  const blocks =
    s.dataError !== null
      ? s.dataError
      : s.badBlockCount === 0
        ? `all ${s.blockCount} block(s) verify`
        : `${s.badBlockCount} of ${s.blockCount} block(s) do not verify: ${s.badBlocks.join(', ')}${s.badBlockCount > s.badBlocks.length ? ', ...' : ''}`;
  lines.push(`  header CRC ok, ${pathNote}; ${blocks}`);
  if (s.decoded !== null) lines.push(`  ${decodeText(s.decoded)}`);
  if (s.needles !== null) {
    lines.push(`  container chunk: ${s.needles.count} needle(s) (live or dead: only the metadata knows)`);
    for (const n of s.needles.listed.slice(0, NEEDLES_SHOWN_MAX)) {
      const mark = mine !== undefined && n.containerOffsetBytes === mine ? '   <- this file' : '';
      lines.push(
        `    at ${n.containerOffsetBytes}: file ${n.fileId}, ${n.dataLenBytes} bytes, cookie ${n.cookie}, crc ${n.crcOk ? 'ok' : 'BAD'}${mark}`,
      );
    }
    if (s.needles.count > NEEDLES_SHOWN_MAX)
      lines.push(`    ... and ${s.needles.count - NEEDLES_SHOWN_MAX} more (--json lists them)`);
  }
  return lines.join('\n');
}

export async function inspectVerb(c: InspectCommand): Promise<number> {
  const r = await run(c);
  if (c.json) process.stdout.write(jsonText(r));
  else {
    if (r.needle !== undefined) {
      process.stdout.write(
        `${r.file!.path ?? `file ${r.file!.ino}`} (file ${r.file!.ino}) is a small file packed as a needle of ${r.needle.lengthBytes} bytes ` +
          `in container ${r.needle.containerIno} at offset ${r.needle.offsetBytes} (chunk ${r.needle.chunkIndex}): ${r.shards.length} shard file(s) on disk\n`,
      );
    } else if (r.file !== undefined) {
      process.stdout.write(
        `${r.file.path ?? `file ${r.file.ino}`} (file ${r.file.ino}) chunk ${r.file.chunkIndex} in ${r.store}: ${r.shards.length} shard file(s) on disk\n`,
      );
    }
    for (const s of r.shards) process.stdout.write(shardText(s, r.needle?.offsetBytes) + '\n');
    for (const v of r.decodedVersions ?? [])
      process.stdout.write(`version ${v.version} from its data shards: ${decodeText(v.decoded)}\n`);
  }
  if (r.shards.length === 0) {
    process.stderr.write(
      `chunkfs inspect: no shard files of file ${r.file!.ino} chunk ${r.file!.chunkIndex} on any disk (a hole, past the end, or still in the write-back buffer)\n`,
    );
    return 1;
  }
  return r.shards.every((s) => s.ok) && (r.decodedVersions ?? []).every((v) => v.decoded.tagOk !== false) ? 0 : 1;
}
