// Damage one shard of a live chunk on purpose (`chunkfs inject corrupt|drop`; DESIGN §7:
// "corrupt a block, drop a shard", like zinject): flip one byte of a data block, of a block's hash
// entry (spec §4) or of the header's CRC-covered bytes (spec §3), or remove the shard file. Through
// the store's Io like every disk call, and the header cache entry is dropped so the next read sees
// the damage instead of a cached header.
import { HEADER_BYTES } from '../../src/header';
import { HASH_ENTRY_BYTES, blockCountFor, blockLengthBytes, dataStartBytes } from '../../src/region';
import { ChunkEnv, readOrder } from '../chunks/chunk-env';
import { ChunkRef, ecGeometry, shardDataLen } from '../chunks/chunk-ref';
import { mapRange } from '../../src/mapping';
import { FsError } from '../fs-error';
import { shardCount } from '../../src/layout';

export type DamageKind = 'data' | 'hash' | 'header' | 'drop';

/** header_crc32c covers header bytes [16, 4096) (DESIGN §3): a flip here fails the header check. */
const HEADER_FLIP_OFFSET_BYTES = 16;

export interface DamageReport {
  ino: number;
  chunkIndex: number;
  version: string;
  shardIndex: number;
  shards: number;
  diskId: number;
  /** Disk of each shard of the chunk (placement, DESIGN §3). */
  diskIds: number[];
  path: string;
  kind: DamageKind;
  /** The block whose data or hash entry was hit (data, hash). */
  blockIndex?: number;
  /** File offset of the flipped byte (data, hash, header). */
  offsetBytes?: number;
  /** Shard indices in the order a read tries them now. */
  readOrder: number[];
  /** A small file's damage lands in its needle, in a container chunk (spec §11): that chunk's file and the needle's offset. */
  needle?: { containerIno: number; offsetBytes: string };
}

/** A byte in a chunk (a needle's): the shard that holds it and where (spec §6 for EC; a replica holds it in every shard at the same offset). */
export function shardByteOf(
  ref: ChunkRef,
  chunkOffsetBytes: number,
  shardIndex: number | undefined,
): { shardIndex: number | undefined; shardOffsetBytes: number } {
  if (ref.fl.layout.kind === 'replica') return { shardIndex, shardOffsetBytes: chunkOffsetBytes };
  const [piece] = mapRange(ecGeometry(ref), chunkOffsetBytes, 1);
  if (shardIndex !== undefined && shardIndex !== piece.dataShard) {
    throw new FsError(
      'EINVAL',
      `that byte is in data shard ${piece.dataShard} of layout ${ref.fl.layout.text}, not shard ${shardIndex}`,
    );
  }
  return { shardIndex: piece.dataShard, shardOffsetBytes: piece.shardOffsetBytes };
}

/**
 * Which byte to flip: the middle of a data block (or, given, one data byte of the shard), the first
 * byte of a hash entry, or a header byte.
 */
function flipOffset(
  ref: ChunkRef,
  kind: Exclude<DamageKind, 'drop'>,
  blockIndex: number,
  atShardOffsetBytes?: number,
): number {
  if (kind === 'header') return HEADER_FLIP_OFFSET_BYTES;
  const dataLen = shardDataLen(ref);
  const blockCount = blockCountFor(dataLen, ref.fl.bitrotBlockBytes);
  if (!Number.isSafeInteger(blockIndex) || blockIndex < 0 || blockIndex >= blockCount) {
    throw new FsError(
      'EINVAL',
      `block ${blockIndex} is out of range: the shard has ${blockCount} block(s) (0..${blockCount - 1})`,
    );
  }
  if (kind === 'hash') return HEADER_BYTES + blockIndex * HASH_ENTRY_BYTES;
  if (atShardOffsetBytes !== undefined) return dataStartBytes(blockCount) + atShardOffsetBytes;
  const len = blockLengthBytes(blockIndex, dataLen, ref.fl.bitrotBlockBytes);
  return dataStartBytes(blockCount) + blockIndex * ref.fl.bitrotBlockBytes + Math.floor(len / 2);
}

async function flipByte(env: ChunkEnv, path: string, offsetBytes: number): Promise<void> {
  const f = await env.shards.io.open(path, 'readwrite');
  try {
    const b = await f.pread(1, offsetBytes);
    if (b.length !== 1) throw new FsError('EINVAL', `${path} is shorter than ${offsetBytes + 1} bytes`);
    b[0] ^= 0xff;
    await f.pwrite(b, offsetBytes);
    await f.fdatasync();
  } finally {
    await f.close();
  }
}

/**
 * Damage shard shardIndex (default: the one a read tries first, so the next read meets it) of
 * ref, the live version of a chunk. atShardOffsetBytes: the data byte to flip (a needle's), which
 * also names the block. Call under the inode's lock (FileIo.withChunk).
 */
export async function damageShard(
  env: ChunkEnv,
  ref: ChunkRef,
  shardIndex: number | undefined,
  kind: DamageKind,
  blockIndex: number,
  atShardOffsetBytes?: number,
): Promise<DamageReport> {
  const n = shardCount(ref.fl.layout);
  const order = readOrder(
    env,
    ref,
    Array.from({ length: n }, (_, i) => i),
  );
  const i = shardIndex ?? order[0];
  if (!Number.isSafeInteger(i) || i < 0 || i >= n)
    throw new FsError('EINVAL', `shard ${i} is out of range: layout ${ref.fl.layout.text} has shards 0..${n - 1}`);
  const path = env.shards.path(ref, i);
  const report: DamageReport = {
    ino: ref.ino,
    chunkIndex: ref.chunkIndex,
    version: ref.version.toString(),
    shardIndex: i,
    shards: n,
    diskId: ref.diskIds[i],
    diskIds: [...ref.diskIds],
    path,
    kind,
    readOrder: order,
  };
  if (kind === 'drop') {
    await env.shards.io.unlink(path);
  } else {
    const block =
      atShardOffsetBytes === undefined ? blockIndex : Math.floor(atShardOffsetBytes / ref.fl.bitrotBlockBytes);
    report.offsetBytes = flipOffset(ref, kind, block, atShardOffsetBytes);
    blockIndex = block;
    if (kind !== 'header') report.blockIndex = blockIndex;
    await flipByte(env, path, report.offsetBytes);
  }
  env.shards.forgetHeader(ref, i);
  return report;
}
