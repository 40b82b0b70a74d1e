// What the chunk I/O needs to know about one chunk: the inode's Layout (authoritative,
// spec §1), the live version and length from the chunk map, and its placement.
import { ErrorSite } from '../../src/errors';
import { EcGeometry, shardDataLenBytes } from '../../src/mapping';
import { ShardParams } from '../../src/shard';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from '../../src/header';
import { StoredForm } from '../meta/chunk-map';
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
  /** The raw content length (content_len; what the file shows). */
  logicalLenBytes: number;
  /** How its layout's transforms stored it (spec §3.1); null: raw, the payload is the content. */
  stored: StoredForm | null;
  fl: FileLayout;
  diskIds: readonly number[]; // disk of shard i (store/chunks/placement.ts); shared, never mutated
}

/** The chunk version's key in caches of its decoded bytes and cipher layout (versions are never reused: store/meta/chunk-map.ts). */
export function versionKeyOf(ref: ChunkRef): string {
  return `${ref.ino}/${ref.chunkIndex}/${ref.version}`;
}

/** chunk_logical_len: the payload split into shards (post-transform, DESIGN §3). */
export function payloadLen(ref: ChunkRef): number {
  return ref.stored?.lenBytes ?? ref.logicalLenBytes;
}

export function ecGeometry(ref: ChunkRef): EcGeometry {
  const l = ref.fl.layout;
  const { k, m } = l.kind === 'ec' ? l : { k: 1, m: 0 };
  return { k, m, ecBlockSizeBytes: ref.fl.ecBlockSizeBytes, chunkLogicalLenBytes: payloadLen(ref) };
}

/** shard_data_len: the payload length for a replica, §6 / DESIGN §3 for EC. */
export function shardDataLen(ref: ChunkRef): number {
  return ref.fl.layout.kind === 'replica' ? payloadLen(ref) : shardDataLenBytes(ecGeometry(ref));
}

/**
 * Partial writes patch this chunk's replicas in place (spec §8.2) only when its payload is its raw
 * content; EC and transformed chunks get a new version instead (DESIGN §5, §10).
 */
export function patchedInPlace(ref: ChunkRef): boolean {
  return ref.fl.layout.kind === 'replica' && ref.stored === null;
}

/** Header fields of shard i (spec §3); the header echoes the inode Layout. */
export function shardParams(ref: ChunkRef, shardIndex: number, createdUnixNanos: bigint): ShardParams {
  const ec = headerEcFields(ref.fl.layout);
  return {
    fileId: ref.fileId,
    chunkIndex: BigInt(ref.chunkIndex),
    version: ref.version,
    shardIndex,
    ecK: ec.ecK,
    ecM: ec.ecM,
    ecAlgo: ec.ecAlgo,
    bitrotBlockBytes: ref.fl.bitrotBlockBytes,
    chunkLogicalLenBytes: BigInt(payloadLen(ref)),
    createdUnixNanos,
    ecBlockSizeBytes: ref.fl.layout.kind === 'ec' ? BigInt(ref.fl.ecBlockSizeBytes) : 0n,
    placementSeed: ref.fl.placementSeed,
    clusterMapEpoch: BigInt(ref.fl.clusterMapEpoch),
    chunkSizeBytes: BigInt(ref.fl.chunkSizeBytes),
    contentLenBytes: BigInt(ref.logicalLenBytes),
    compressed: ((ref.stored?.flags ?? 0) & FLAG_COMPRESSED) !== 0,
    encrypted: ((ref.stored?.flags ?? 0) & FLAG_ENCRYPTED) !== 0,
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
