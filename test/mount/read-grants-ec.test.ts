// Read grants of EC chunks (DESIGN §6 "Answers in C"; native/fuse3/read_grant.cc, ec_pieces.h):
// reads of ec:4+2 chunks, raw or encrypted (cipher format v2), answered in C from the data shards'
// pieces (spec §6) are right, including reads across fragment and erasure-block boundaries and in a
// short last erasure block; a block flipped in a data shard (raw or encrypted) hands the read back
// to JavaScript, which reconstructs it, counts it and heals; and no read after a write, truncate or
// punched hole is answered from a grant made before it.
import test, { ExecutionContext } from 'ava';
import * as fs from 'node:fs';
import { sharedMount, TRANSPORT, healDrained, shOk } from '../helpers/mount';
import { MODEL, READS, grantHelpers, py } from '../helpers/grant-reads';
import { dataStartBytes } from '../../src/region';
import { shardDataLenBytes } from '../../src/mapping';

const shared = sharedMount(test, 'grantsec'); // 6 disks: ec:4+2 places one shard on each
// Grants are a libfuse3 transport feature; fuse-native keeps serving every read in JavaScript.
const serial = TRANSPORT === 'fuse-native' ? test.serial.skip : test.serial;
const KB = 1 << 10;
const MB = 1 << 20;
const CHUNK_BYTES = 4 * MB;
const EB_BYTES = MB; // ec_block_size (spec §10 default): 4 fragments of 256 KiB
const FRAGMENT_BYTES = EB_BYTES / 4;
const BLOCK_BYTES = 16 << 10;
const FILE_BYTES = 3 * CHUNK_BYTES - 777; // the last chunk's last erasure block is short: fragments of ceil((1 MiB - 777) / 4)

const { status, grants, flipStoredByte, readsRightFromGrants } = grantHelpers(shared);

/** Reads across fragment and erasure-block boundaries of every chunk, 4 KiB and 128 KiB. */
function boundaryReads(): Array<[number, number]> {
  const ops: Array<[number, number]> = [];
  const lastFragment = Math.ceil((EB_BYTES - 777) / 4);
  for (let c = 0; c < 3; c++) {
    const at = c * CHUNK_BYTES;
    ops.push(
      [at + FRAGMENT_BYTES - 2 * KB, 4 * KB],
      [at + FRAGMENT_BYTES - 64 * KB, 128 * KB],
      [at + 3 * FRAGMENT_BYTES - 100, 128 * KB],
    );
    ops.push(
      [at + EB_BYTES - 2 * KB, 4 * KB],
      [at + EB_BYTES - 60_000, 128 * KB],
      [at + 2 * EB_BYTES + FRAGMENT_BYTES - 1, 2],
    );
  }
  const last = 2 * CHUNK_BYTES + 3 * EB_BYTES;
  ops.push(
    [last + lastFragment - 2 * KB, 4 * KB],
    [last + 2 * lastFragment - 70_000, 128 * KB],
    [last + 3 * lastFragment - 10, 4 * KB],
  );
  return ops;
}

async function ecDir(name: string, layout: string): Promise<void> {
  fs.mkdirSync(shared.path(name));
  await shOk(`setfattr -n user.chunkfs.layout -v ${layout} ${shared.path(name)}`);
}

test.serial.before(async () => {
  await shOk(`head -c ${FILE_BYTES} /dev/urandom > ${shared.dir}/ref`);
  await ecDir('ec', 'ec:4+2');
  await ecDir('enc', 'ec:4+2,aes256gcm');
});

serial(
  'ec:4+2: reads answered from grants of the data shards, verified and right across fragments and erasure blocks',
  async (t) => {
    await shOk(`cp ${shared.dir}/ref ${shared.path('ec/f')} && sync`);
    t.is((await shOk(`getfattr --only-values -n user.chunkfs.layout ${shared.path('ec/f')}`)).trim(), 'ec:4+2');
    await readsRightFromGrants(t, 'ec/f', '1', boundaryReads());
    t.true((await grants()).grantedChunks > 0);
  },
);

serial('ec:4+2,aes256gcm: stored segments read from the data shards, verified, opened in C, right', async (t) => {
  await shOk(`cp ${shared.dir}/ref ${shared.path('enc/f')} && sync`);
  t.is(
    (await shOk(`getfattr --only-values -n user.chunkfs.layout ${shared.path('enc/f')}`)).trim(),
    'ec:4+2,aes256gcm',
  );
  await readsRightFromGrants(t, 'enc/f', '2', boundaryReads());
});

serial(
  'a block flipped in a data shard under a grant: handed back, reconstructed in JavaScript, counted and healed',
  async (t) => {
    await shOk(`cp ${shared.dir}/ref ${shared.path('ec/g')} && sync`);
    await py(READS, [shared.path('ec/g'), `${shared.dir}/ref`, '3']); // chunk 1's data shards are granted now
    // Data shard 1 of chunk 1 holds chunk bytes [256 KiB, 512 KiB) of erasure block 0 at shard offsets
    // [0, 256 KiB) (spec §6): flip a byte of its block 3 behind the store's back.
    await flipStoredByte('ec/g', 1, dataStartBytes(CHUNK_BYTES / 4 / BLOCK_BYTES) + 3 * BLOCK_BYTES + 100, 0x10, 1);
    const before = await status();
    const r = await py(
      `
import os, sys, json
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
want = open(sys.argv[2], 'rb').read()
c1 = 4 * 1048576 + 262144
# Block 0 of data shard 1 first (verifies: JavaScript grants the shard again if the grant lapsed),
# again (from the grant), then the flipped block 3 right after, within the grant's second.
first = os.pread(fd, 4096, c1) == want[c1:c1 + 4096] and os.pread(fd, 4096, c1) == want[c1:c1 + 4096]
off = c1 + 3 * 16384
print(json.dumps({'same': first and os.pread(fd, 4096, off) == want[off:off + 4096]}))
`,
      [shared.path('ec/g'), `${shared.dir}/ref`],
    );
    t.true(r.same, 'the flipped block reads right');
    await handedBackRebuiltHealed(t, before, 'ec/g', '4');
  },
);

/** After a read over a flipped block: the grant handed it back, the block was counted, rebuilt and healed, and file reads right. */
async function handedBackRebuiltHealed(t: ExecutionContext, before: any, file: string, seed: string): Promise<void> {
  const after = await status();
  t.true(after.mount.readGrants.failedReads > before.mount.readGrants.failedReads, 'the grant handed the read back');
  t.true(after.counters.bitrot_errors > before.counters.bitrot_errors, 'the bad block is counted');
  t.true(after.counters.reconstructions > before.counters.reconstructions, 'and rebuilt from the other shards');
  t.is(await healDrained(shared.mount.mountpoint), 0, 'and healed');
  t.is((await py(READS, [shared.path(file), `${shared.dir}/ref`, seed])).bad, 0);
}

serial(
  'ec:4+2,aes256gcm: a block flipped in a data shard fails its hash in C; reconstructed in JavaScript, counted, healed',
  async (t) => {
    await shOk(`cp ${shared.dir}/ref ${shared.path('enc/g')} && sync`);
    await py(READS, [shared.path('enc/g'), `${shared.dir}/ref`, '7']);
    // Chunk 1's v2 payload: a 24-byte header, then 256 segments of 16 KiB + a 16-byte tag (spec §6 maps it).
    const payloadBytes = 24 + CHUNK_BYTES + (CHUNK_BYTES / (16 * KB)) * 16;
    const shardBytes = shardDataLenBytes({
      k: 4,
      m: 2,
      ecBlockSizeBytes: EB_BYTES,
      chunkLogicalLenBytes: payloadBytes,
    });
    // Data shard 2 holds payload [512 KiB, 768 KiB) of erasure block 0: flip a byte of its block 3.
    const flippedAt = 3 * BLOCK_BYTES + 100;
    await flipStoredByte('enc/g', 1, dataStartBytes(Math.ceil(shardBytes / BLOCK_BYTES)) + flippedAt, 0x04, 2);
    const segment = Math.floor((2 * FRAGMENT_BYTES + flippedAt - 24) / (16 * KB + 16)); // the segment holding it
    const before = await status();
    const r = await py(
      `
import os, sys, json
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
want = open(sys.argv[2], 'rb').read()
c1 = 4 * 1048576
# Data shard 2's first blocks (they verify: the chunk is granted again with shard 2), again (from
# the grant), then the segment over the flipped block within the grant's second.
offs = [c1 + 532480, c1 + 532480, c1 + int(sys.argv[3]) * 16384]
print(json.dumps({'bad': sum(1 for off in offs if os.pread(fd, 4096, off) != want[off:off + 4096])}))
`,
      [shared.path('enc/g'), `${shared.dir}/ref`, String(segment)],
    );
    t.is(r.bad, 0, 'every read of the damaged chunk is right');
    await handedBackRebuiltHealed(t, before, 'enc/g', '8');
  },
);

serial(
  'ec:4+2: writes, truncates and punched holes: no read is ever answered from a grant made before them',
  async (t) => {
    await shOk(`cp ${shared.dir}/ref ${shared.path('ec/m')} && sync`);
    await py(READS, [shared.path('ec/m'), `${shared.dir}/ref`, '5']); // grants of m's chunks
    const before = await grants();
    const r = await py(MODEL, [shared.path('ec/m'), `${shared.dir}/ref`, '6']);
    t.is(r.badCount, 0, `stale reads: ${r.bad.join(', ')}`);
    t.true((await grants()).servedReads > before.servedReads);
  },
);
