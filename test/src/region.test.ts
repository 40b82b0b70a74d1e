import test from 'ava';
import {
  alignUp,
  blockCountFor,
  blockLengthBytes,
  dataStartBytes,
  hashTableBytes,
  shardFileBytes,
} from '../../src/region';

test('hash table is align_up(block_count*32, 4096) (spec §2)', (t) => {
  t.is(hashTableBytes(0), 0);
  t.is(hashTableBytes(1), 4096);
  t.is(hashTableBytes(128), 4096);
  t.is(hashTableBytes(129), 8192);
  t.is(hashTableBytes(256), 8192);
  t.is(dataStartBytes(2), 8192);
  t.is(dataStartBytes(256), 12288);
});

test('block count and block lengths (spec §3, §5)', (t) => {
  t.is(blockCountFor(0, 16384), 0);
  t.is(blockCountFor(16384, 16384), 1);
  t.is(blockCountFor(24576n, 16384), 2);
  t.is(blockCountFor(1n << 40n, 4096), 2 ** 28);
  t.is(blockLengthBytes(0, 24576, 16384), 16384);
  t.is(blockLengthBytes(1, 24576, 16384), 8192);
  t.throws(() => blockLengthBytes(2, 24576, 16384));
});

test('file size pads data to 4 KiB at EOF (spec §13.1 structure)', (t) => {
  t.is(shardFileBytes(24576, 16384), 8192 + 24576);
  t.is(shardFileBytes(24, 16), 4096 + 4096 + 4096); // §13.1 illustrative sizes: 2 blocks, data padded to 4096
  t.is(shardFileBytes(1048576, 16384), 4096 + 4096 + 1048576); // 64 entries fit one page
  t.is(shardFileBytes(1000, 4096), 4096 + 4096 + 4096);
  t.is(alignUp(0, 4096), 0);
  t.is(alignUp(4097, 4096), 8192);
});
