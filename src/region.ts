// Shard file region layout (spec §2, §5): [Header 4096 | Hash table | Data | EOF pad].
// All sizes are JS numbers: a shard is at most a chunk (MiBs), far below 2^53.
import { assert } from './errors';

export const PAGE_BYTES = 4096; // spec §2: every region starts 4 KiB aligned
export const HASH_ENTRY_BYTES = 32; // spec §4: one HighwayHash-256 digest per block
const REGION_HEADER_BYTES = 4096; // spec §3 (header.ts re-exports the same value)

export function alignUp(n: number, a: number): number {
  assert(Number.isSafeInteger(n) && n >= 0, 'alignUp: n must be a non-negative safe integer');
  assert(Number.isSafeInteger(a) && a > 0, 'alignUp: alignment must be positive');
  return Math.ceil(n / a) * a;
}

/** Region 2 size: align_up(block_count*32, 4096) (spec §2). */
export function hashTableBytes(blockCount: number): number {
  assert(Number.isInteger(blockCount) && blockCount >= 0, 'hashTableBytes: bad blockCount');
  return alignUp(blockCount * HASH_ENTRY_BYTES, PAGE_BYTES);
}

/** File offset of the Data region: 4096 + hash table size (spec §2, §9). */
export function dataStartBytes(blockCount: number): number {
  return REGION_HEADER_BYTES + hashTableBytes(blockCount);
}

/** block_count = ceil(shard_data_len / bitrot_block) (spec §3). */
export function blockCountFor(shardDataLenBytes: bigint | number, bitrotBlockBytes: number): number {
  assert(bitrotBlockBytes > 0, 'blockCountFor: bitrot_block must be positive');
  const len = BigInt(shardDataLenBytes);
  assert(len >= 0n, 'blockCountFor: negative length');
  const bb = BigInt(bitrotBlockBytes);
  return Number((len + bb - 1n) / bb);
}

/** Length of block i: bitrot_block except possibly the last (spec §4, §5). */
export function blockLengthBytes(i: number, shardDataLenBytes: number, bitrotBlockBytes: number): number {
  const start = i * bitrotBlockBytes;
  assert(i >= 0 && start < shardDataLenBytes, `blockLengthBytes: block ${i} out of range`);
  return Math.min(bitrotBlockBytes, shardDataLenBytes - start);
}

/** Whole shard file size: data region padded to 4 KiB at EOF for O_DIRECT (spec §5, §13.1). */
export function shardFileBytes(shardDataLenBytes: number, bitrotBlockBytes: number): number {
  const blockCount = blockCountFor(shardDataLenBytes, bitrotBlockBytes);
  return dataStartBytes(blockCount) + alignUp(shardDataLenBytes, PAGE_BYTES);
}
