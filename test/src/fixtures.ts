// Shared fixtures for the src/ unit tests: a fixed key, a deterministic PRNG and
// header/param builders, so each test states only what it varies.
import { mulberry32 } from '../../src/prng';
import { ShardHeader, FORMAT_VERSION } from '../../src/header';
import { BitrotKey, parseBitrotKey } from '../../src/keying';
import { ShardParams } from '../../src/shard';

export const KEY_HEX = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
export const KEY: BitrotKey = parseBitrotKey(KEY_HEX);

/** mulberry32 (u32 per call): failures reproduce from the seed. */
export const prng = mulberry32;

export function randomBytes(rand: () => number, n: number): Buffer {
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = rand() & 0xff;
  return out;
}

export function replicaParams(over: Partial<ShardParams> = {}): ShardParams {
  return {
    fileId: 0x1122334455667788n,
    chunkIndex: 3n,
    version: 2n,
    shardIndex: 0,
    ecK: 1,
    ecM: 0,
    ecAlgo: 0,
    bitrotBlockBytes: 16384,
    chunkLogicalLenBytes: 0n,
    createdUnixNanos: 1767225600000000000n,
    ecBlockSizeBytes: 0n,
    placementSeed: 0xdeadbeefcafef00dn,
    clusterMapEpoch: 7n,
    chunkSizeBytes: 4194304n,
    contentLenBytes: 0n,
    ...over,
  };
}

export function replicaHeader(over: Partial<ShardHeader> = {}): ShardHeader {
  return {
    formatVersion: FORMAT_VERSION,
    flags: 8,
    fileId: 0x1122334455667788n,
    chunkIndex: 3n,
    version: 2n,
    shardIndex: 1,
    ecK: 1,
    ecM: 0,
    ecAlgo: 0,
    csumAlgo: 1,
    bitrotBlockBytes: 16384,
    shardDataLenBytes: 24576n,
    chunkLogicalLenBytes: 24576n,
    blockCount: 2,
    createdUnixNanos: 1767225600123456789n,
    ecBlockSizeBytes: 0n,
    placementSeed: 0xfedcba9876543210n,
    clusterMapEpoch: 9n,
    chunkSizeBytes: 4194304n,
    contentLenBytes: 24576n,
    ...over,
  };
}

/** EC 4+2 shard header for a 4 MiB chunk, EB 1 MiB. */
export function ecHeader(over: Partial<ShardHeader> = {}): ShardHeader {
  return replicaHeader({
    flags: 1,
    shardIndex: 2,
    ecK: 4,
    ecM: 2,
    ecAlgo: 1,
    shardDataLenBytes: 1048576n,
    chunkLogicalLenBytes: 4194304n,
    contentLenBytes: 4194304n,
    blockCount: 64,
    ecBlockSizeBytes: 1048576n,
    ...over,
  });
}
