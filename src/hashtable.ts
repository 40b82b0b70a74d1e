// Hash table, region 2 (spec §4): block_count HighwayHash-256 entries of 32 bytes,
// in block order, zero padded to 4 KiB. Entry i covers data bytes
// [i*bitrot_block, min((i+1)*bitrot_block, shard_data_len)).
import { assert } from './errors';
import { firstBadBlock, hashBlocksInto, hashBlocksIntoAsync, nativeHighway256 } from './highway-native';
import { BitrotKey, BlockPosition, ShardKeyer } from './keying';
import { HASH_ENTRY_BYTES, blockCountFor, hashTableBytes } from './region';

/** Region 2 bytes for a shard payload (zero padded to 4 KiB). */
export function hashBlocks(key: BitrotKey, pos: BlockPosition, data: Uint8Array, bitrotBlockBytes: number): Buffer {
  const blockCount = blockCountFor(data.length, bitrotBlockBytes);
  const table = Buffer.alloc(hashTableBytes(blockCount));
  writeHashEntries(table, 0, key, pos, data, bitrotBlockBytes, 0);
  return table;
}

/**
 * Write the digests of the blocks of `data` (block firstBlockIndex onward) into
 * out at outOffsetBytes: the allocation-free core used by encodeShard and the store.
 */
export function writeHashEntries(
  out: Buffer,
  outOffsetBytes: number,
  key: BitrotKey,
  pos: BlockPosition,
  data: Uint8Array,
  bitrotBlockBytes: number,
  firstBlockIndex: number,
): void {
  const entries = entriesOf(out, outOffsetBytes, data, bitrotBlockBytes);
  hashBlocksInto(entries, key, pos, data, bitrotBlockBytes, firstBlockIndex); // one native call
}

/** writeHashEntries off the calling thread (hashBlocksIntoAsync): out and data untouched until it resolves. */
export function writeHashEntriesAsync(
  out: Buffer,
  outOffsetBytes: number,
  key: BitrotKey,
  pos: BlockPosition,
  data: Uint8Array,
  bitrotBlockBytes: number,
  firstBlockIndex: number,
): Promise<void> {
  const entries = entriesOf(out, outOffsetBytes, data, bitrotBlockBytes);
  return hashBlocksIntoAsync(entries, key, pos, data, bitrotBlockBytes, firstBlockIndex);
}

/** The part of out at outOffsetBytes that the digests of data's blocks take, checked to fit. */
function entriesOf(out: Buffer, outOffsetBytes: number, data: Uint8Array, bitrotBlockBytes: number): Buffer {
  const end = outOffsetBytes + blockCountFor(data.length, bitrotBlockBytes) * HASH_ENTRY_BYTES;
  assert(end <= out.length, 'hash entries overflow the table');
  return out.subarray(outOffsetBytes, end);
}

/**
 * Verify contiguous blocks firstBlockIndex.. of data against their entries (32 bytes
 * each, in order) in one native call (spec §9). Returns the index (absolute, as in
 * the table) of the first block that fails, or -1 when all pass.
 */
export function verifyBlockRange(
  key: BitrotKey,
  pos: BlockPosition,
  firstBlockIndex: number,
  data: Uint8Array,
  entries: Uint8Array,
  bitrotBlockBytes: number,
): number {
  const bad = firstBadBlock(key, pos, firstBlockIndex, data, entries, bitrotBlockBytes);
  return bad < 0 ? -1 : firstBlockIndex + bad;
}

/** Entry i of a hash table (a view, 32 bytes). */
export function hashEntry(table: Uint8Array, blockIndex: number): Buffer {
  const start = blockIndex * HASH_ENTRY_BYTES;
  assert(blockIndex >= 0 && start + HASH_ENTRY_BYTES <= table.length, `hash entry ${blockIndex} out of table`);
  return Buffer.from(table.buffer, table.byteOffset + start, HASH_ENTRY_BYTES);
}

/** True when block's position-keyed digest equals entry (spec §9). */
export function verifyBlock(
  key: BitrotKey,
  pos: BlockPosition,
  blockIndex: number,
  block: Uint8Array,
  entry: Uint8Array,
): boolean {
  return verifyWith(new ShardKeyer(key, pos), blockIndex, block, entry);
}

/** verifyBlock with a prebuilt keyer (hot path: one keyer per shard read). */
export function verifyWith(keyer: ShardKeyer, blockIndex: number, block: Uint8Array, entry: Uint8Array): boolean {
  assert(entry.length === HASH_ENTRY_BYTES, 'hash entry must be 32 bytes');
  const digest = nativeHighway256(keyer.keyFor(blockIndex), block);
  return digest.equals(entry);
}
