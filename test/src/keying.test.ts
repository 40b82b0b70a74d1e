import test from 'ava';
import { FormatError } from '../../src/errors';
import { ShardKeyer, bitrotKeyBytes, blockKey, parseBitrotKey } from '../../src/keying';
import { KEY_HEX } from './fixtures';

const MASK = (1n << 64n) - 1n;

test('parseBitrotKey reads four little-endian u64 words', (t) => {
  const k = parseBitrotKey(KEY_HEX);
  t.is(k.k0, 0x0706050403020100n);
  t.is(k.k3, 0x1f1e1d1c1b1a1918n);
  t.deepEqual(parseBitrotKey(Buffer.from(KEY_HEX, 'hex')), k);
  t.is(bitrotKeyBytes(k).toString('hex'), KEY_HEX);
  t.is(t.throws(() => parseBitrotKey('00'), { instanceOf: FormatError }).field, 'bitrot_key');
  t.is(t.throws(() => parseBitrotKey('zz'.repeat(32)), { instanceOf: FormatError }).field, 'bitrot_key');
  t.is(t.throws(() => parseBitrotKey(Buffer.alloc(31)), { instanceOf: FormatError }).field, 'bitrot_key');
});

test('block key follows spec §4.1 word by word', (t) => {
  const k = parseBitrotKey('ff'.repeat(8) + '1234567890abcdef'.repeat(3));
  const pos = { fileId: 0x8000000000000001n, chunkIndex: 77n, shardIndex: 0xfffe, version: 3n };
  const blockIndex = 0xfffffffe;
  const key = blockKey(k, pos, blockIndex);
  t.is(key.length, 32);
  t.is(key.readBigUInt64LE(0), (k.k0 ^ pos.fileId) & MASK);
  t.is(key.readBigUInt64LE(8), (k.k1 ^ pos.chunkIndex) & MASK);
  t.is(key.readBigUInt64LE(16), (k.k2 ^ ((BigInt(pos.shardIndex) << 32n) | BigInt(blockIndex))) & MASK);
  t.is(key.readBigUInt64LE(24), (k.k3 ^ pos.version) & MASK);
});

test('ShardKeyer patches only block_index and matches blockKey', (t) => {
  const k = parseBitrotKey(KEY_HEX);
  const pos = { fileId: 5n, chunkIndex: 6n, shardIndex: 3, version: 1n };
  const keyer = new ShardKeyer(k, pos);
  for (const i of [0, 1, 255, 65536, 0x7fffffff, 0xffffffff]) {
    t.deepEqual(Buffer.from(keyer.keyFor(i)), blockKey(k, pos, i));
  }
  t.notDeepEqual(blockKey(k, pos, 1), blockKey(k, { ...pos, shardIndex: 4 }, 1));
  t.throws(() => keyer.keyFor(-1));
  t.throws(() => keyer.keyFor(2 ** 32));
});
