// What the chunk I/O needs to know about one chunk: the inode's Layout (authoritative,
// spec §1), the live version and length from the chunk map, and its placement.
import { ErrorSite } from '../../src/errors';
import { EcGeometry, shardDataLenBytes } from '../../src/mapping';
import { ShardParams } from '../../src/shard';
import { Layout, headerEcFields } from '../../src/layout';

export interface FileLayout {
  layout: Layout;
  chunkSizeBytes: number;
  bitrotBlockBytes: number;
  ecBlockSizeBytes: number;
  placementSeed: bigint;
  clusterMapEpoch: number;
}

export interface ChunkRef {
  ino: number;
  fileId: bigint; // = inode number (store-api.md)
  chunkIndex: number;
  version: bigint;
  logicalLenBytes: number;
  fl: FileLayout;
  diskIds: readonly number[]; // disk of shard i (store/chunks/placement.ts); shared, never mutated
}

export function ecGeometry(ref: ChunkRef): EcGeometry {
  const l = ref.fl.layout;
  const { k, m } = l.kind === 'ec' ? l : { k: 1, m: 0 };
  return { k, m, ecBlockSizeBytes: ref.fl.ecBlockSizeBytes, chunkLogicalLenBytes: ref.logicalLenBytes };
}

/** shard_data_len: the chunk length for a replica, §6 / DESIGN §3 for EC. */
export function shardDataLen(ref: ChunkRef): number {
  return ref.fl.layout.kind === 'replica' ? ref.logicalLenBytes : shardDataLenBytes(ecGeometry(ref));
}

/** Header fields of shard i (spec §3); the header echoes the inode Layout. */
export function shardParams(ref: ChunkRef, shardIndex: number, createdUnixNanos: bigint): ShardParams {
  const ec = headerEcFields(ref.fl.layout);
  return {
    fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), version: ref.version, shardIndex,
    ecK: ec.ecK, ecM: ec.ecM, ecAlgo: ec.ecAlgo, bitrotBlockBytes: ref.fl.bitrotBlockBytes,
    chunkLogicalLenBytes: BigInt(ref.logicalLenBytes), createdUnixNanos,
    ecBlockSizeBytes: ref.fl.layout.kind === 'ec' ? BigInt(ref.fl.ecBlockSizeBytes) : 0n,
    placementSeed: ref.fl.placementSeed, clusterMapEpoch: BigInt(ref.fl.clusterMapEpoch),
    chunkSizeBytes: BigInt(ref.fl.chunkSizeBytes), contentLenBytes: BigInt(ref.logicalLenBytes),
  };
}

export function siteOf(ref: ChunkRef, shardIndex?: number): ErrorSite {
  const site: ErrorSite = { fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), version: ref.version };
  if (shardIndex !== undefined) {
    site.shardIndex = shardIndex;
    site.diskId = String(ref.diskIds[shardIndex]);
  }
  return site;
}
