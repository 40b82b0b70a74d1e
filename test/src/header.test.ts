import test from 'ava';
import { crc32c } from '../../src/crc32c';
import { ChunkfsError, FormatError } from '../../src/errors';
import { HEADER_BYTES, ShardHeader, decodeHeader, encodeHeader } from '../../src/header';
import { ecHeader, prng, randomBytes, replicaHeader } from './fixtures';

/** Patch encoded header bytes, then fix the CRC so only the patched field is wrong. */
function patched(h: ShardHeader, patch: (b: Buffer) => void, fixCrc = true): Buffer {
  const b = encodeHeader(h);
  patch(b);
  if (fixCrc) b.writeUInt32LE(crc32c(b.subarray(16)), 12);
  return b;
}

function fieldOf(t: any, fn: () => unknown): string {
  const err = t.throws(fn, { instanceOf: FormatError }) as FormatError;
  return err.field;
}

test('round trip of every field (replica and EC)', (t) => {
  for (const h of [replicaHeader(), ecHeader(), ecHeader({ shardIndex: 5, flags: 1 | 16 })]) {
    const b = encodeHeader(h);
    t.is(b.length, HEADER_BYTES);
    t.deepEqual(decodeHeader(b), h);
  }
});

test('byte offsets follow spec §3', (t) => {
  const b = encodeHeader(replicaHeader());
  t.is(b.subarray(0, 8).toString('ascii'), 'RFSHARD1');
  t.is(b.readUInt16LE(8), 1);
  t.is(b.readUInt16LE(10), 8);
  t.is(b.readUInt32LE(12), crc32c(b.subarray(16)));
  t.is(b.readBigUInt64LE(16), 0x1122334455667788n);
  t.is(b.readUInt16LE(40), 1);
  t.is(b.readUInt8(47), 1);
  t.is(b.readUInt32LE(48), 16384);
  t.is(b.readBigUInt64LE(52), 24576n); // unaligned u64
  t.is(b.readBigUInt64LE(60), 24576n);
  t.is(b.readUInt32LE(68), 2);
  t.is(b.readBigUInt64LE(72), 1767225600123456789n);
  t.is(b.readBigUInt64LE(112), 24576n);
  t.true(
    b.subarray(120).every((x) => x === 0),
    'reserved bytes are zero on write',
  );
});

test('reserved bytes are ignored on read but covered by the CRC', (t) => {
  const withReserved = patched(replicaHeader(), (b) => {
    b[200] = 7;
  });
  t.deepEqual(decodeHeader(withReserved), replicaHeader());
  const noCrcFix = patched(
    replicaHeader(),
    (b) => {
      b[200] = 7;
    },
    false,
  );
  t.is(
    fieldOf(t, () => decodeHeader(noCrcFix)),
    'header_crc32c',
  );
});

test('malformed headers name the field', (t) => {
  const rh = replicaHeader();
  t.is(
    fieldOf(t, () => decodeHeader(encodeHeader(rh).subarray(0, 4095))),
    'header',
  );
  t.is(
    fieldOf(t, () =>
      decodeHeader(
        patched(rh, (b) => {
          b[0] = 0x58;
        }),
      ),
    ),
    'magic',
  );
  const v2 = t.throws(() => decodeHeader(patched(rh, (b) => b.writeUInt16LE(2, 8))), { instanceOf: FormatError });
  t.is(v2.field, 'format_version');
  t.regex(v2.message, /format_version 2/);
  t.is(
    fieldOf(t, () =>
      decodeHeader(
        patched(
          rh,
          (b) => {
            b[20] ^= 1;
          },
          false,
        ),
      ),
    ),
    'header_crc32c',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(rh, (b) => b.writeUInt32LE(3, 68)))),
    'block_count',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(rh, (b) => b.writeUInt32LE(16384 + 512, 48)))),
    'bitrot_block',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(rh, (b) => b.writeUInt32LE(0, 48)))),
    'bitrot_block',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(rh, (b) => b.writeUInt16LE(2, 42)))),
    'ec_k',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(rh, (b) => b.writeUInt16LE(1, 44)))),
    'ec_m',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(rh, (b) => b.writeUInt8(2, 47)))),
    'csum_algo',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(rh, (b) => b.writeUInt16LE(8 | 32, 10)))),
    'flags',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(rh, (b) => b.writeUInt16LE(0, 10)))),
    'flags',
  ); // last_block_short missing
  const eh = ecHeader();
  t.is(
    fieldOf(t, () => decodeHeader(patched(eh, (b) => b.writeUInt16LE(0, 42)))),
    'ec_k',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(eh, (b) => b.writeUInt16LE(0, 44)))),
    'ec_m',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(eh, (b) => b.writeUInt16LE(255, 44)))),
    'ec_m',
  ); // k+m > 256
  t.is(
    fieldOf(t, () => decodeHeader(patched(eh, (b) => b.writeUInt16LE(6, 40)))),
    'shard_index',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(eh, (b) => b.writeUInt16LE(4, 40)))),
    'flags',
  ); // parity flag missing
  t.is(
    fieldOf(t, () => decodeHeader(patched(eh, (b) => b.writeUInt8(0, 46)))),
    'ec_algo',
  );
  t.is(
    fieldOf(t, () => decodeHeader(patched(eh, (b) => b.writeBigUInt64LE(2097152n, 52)))),
    'block_count',
  );
});

test('encodeHeader refuses inconsistent headers', (t) => {
  t.is(
    fieldOf(t, () => encodeHeader(replicaHeader({ blockCount: 5 }))),
    'block_count',
  );
  t.is(
    fieldOf(t, () => encodeHeader(replicaHeader({ fileId: 1n << 64n }))),
    'file_id',
  );
  t.is(
    fieldOf(t, () => encodeHeader(replicaHeader({ contentLenBytes: 5n }))),
    'content_len',
  );
  t.is(
    fieldOf(t, () => encodeHeader(replicaHeader({ formatVersion: 3 }))),
    'format_version',
  );
  // EC shard_data_len must follow spec §6 from chunk_logical_len, EB and k.
  t.is(
    fieldOf(t, () => encodeHeader(ecHeader({ chunkLogicalLenBytes: 4194304n - 4096n }))),
    'shard_data_len',
  );
  // transform flags allow content_len != chunk_logical_len (spec §3 content_len)
  t.notThrows(() => encodeHeader(replicaHeader({ flags: 8 | 2, contentLenBytes: 99999n })));
});

test('fuzz: random and mutated bytes only ever throw ChunkfsError', (t) => {
  const rand = prng(12345);
  const valid = [encodeHeader(replicaHeader()), encodeHeader(ecHeader())];
  let rejected = 0;
  for (let i = 0; i < 3000; i++) {
    let b: Buffer;
    if (i % 3 === 0) {
      b = randomBytes(rand, rand() % 5000);
      if (i % 2 === 0 && b.length >= 8) b.write('RFSHARD1', 0, 'ascii');
    } else {
      b = Buffer.from(valid[i % 2]);
      const flips = 1 + (rand() % 4);
      for (let f = 0; f < flips; f++) b[rand() % 128] = rand() & 0xff;
      if (i % 3 === 1) b.writeUInt32LE(crc32c(b.subarray(16)), 12); // reach the semantic checks
    }
    try {
      decodeHeader(b);
    } catch (e) {
      rejected++;
      if (!(e instanceof ChunkfsError)) t.fail(`untyped throw: ${String(e)}`);
    }
  }
  t.true(rejected > 2000);
});
