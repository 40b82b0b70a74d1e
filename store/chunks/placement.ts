// Rendezvous (highest-random-weight) placement, DESIGN §3:
//   score(d) = xxh3_64(u64le(placement_seed) || u64le(chunk_index) || u64le(disk_id))
// shard i goes to the disk with the i-th highest score. A disk id IS its u64: disk
// ids are the non-negative integers 0, 1, 2, ... assigned in the order disks are
// added (store/config.ts), so u64le(disk_id) is that integer, little-endian.
// Only disks added at or before the layout's cluster_map_epoch take part, so adding
// disks never moves existing data. Health never changes placement.
import { assert } from '../../src/errors';
import { u64le, xxh3_64 } from '../../src/xxh3';

export interface PlacementDisk {
  id: number;
  epoch: number;
}

export class PlacementError extends Error {
  readonly code = 'EINVAL';
}

export function placementScore(placementSeed: bigint, chunkIndex: bigint, diskId: number): bigint {
  assert(Number.isSafeInteger(diskId) && diskId >= 0, 'disk id must be a non-negative integer');
  const input = Buffer.concat([u64le(placementSeed), u64le(chunkIndex), u64le(BigInt(diskId))]);
  return xxh3_64(input);
}

/** Disk id of shard 0..shardCount-1 for one chunk; all distinct. */
export function placeChunk(
  disks: readonly PlacementDisk[],
  placementSeed: bigint,
  clusterMapEpoch: number,
  chunkIndex: bigint,
  shardCount: number,
): number[] {
  const eligible = disks.filter((d) => d.epoch <= clusterMapEpoch);
  if (eligible.length < shardCount) {
    throw new PlacementError(
      `layout needs ${shardCount} disks, only ${eligible.length} exist at cluster_map_epoch ${clusterMapEpoch}`,
    );
  }
  const scored = eligible.map((d) => ({ id: d.id, score: placementScore(placementSeed, chunkIndex, d.id) }));
  // Highest score first; equal scores (2^-64 odds) fall back to the lower id so the order is total.
  scored.sort((a, b) => (a.score === b.score ? a.id - b.id : a.score > b.score ? -1 : 1));
  const chosen = scored.slice(0, shardCount).map((s) => s.id);
  assert(new Set(chosen).size === shardCount, 'placement: shards of one chunk on distinct disks');
  return chosen;
}
