// Read grants (DESIGN §6; fs/fuse/read-grants.ts, native/fuse3/read_grant.cc): reads of clean
// replica chunks answered in C are right, are never answered from a grant after a write, truncate or
// punched hole, and a damaged block under a grant (flipped on disk behind the store's back, or an
// injected fault) is served around, counted and healed by the one JavaScript read pipeline. Encrypted
// replica chunks (DESIGN §10, cipher format v2) are granted too: C verifies the stored segments, then
// opens them; a segment whose tag fails (forged with fresh hashes) goes back to JavaScript.
// Reads use O_DIRECT in a child process, so each one reaches the mount (not the kernel's page cache).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sharedMount, TRANSPORT, healDrained, reclaimDrained, run, shOk } from '../helpers/mount';
import { MODEL, READS, grantHelpers, py } from '../helpers/grant-reads';
import { dataStartBytes } from '../../src/region';
import { openConfig } from '../../store/config';
import { encodeShard, verifyShardBytes } from '../../src/shard';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from '../../src/header';

const shared = sharedMount(test, 'grants'); // replica:3 on 6 disks
// Grants are a libfuse3 transport feature; fuse-native keeps serving every read in JavaScript.
const serial = TRANSPORT === 'fuse-native' ? test.serial.skip : test.serial;
const MB = 1 << 20;
const CHUNK_BYTES = 4 * MB;
const BLOCK_BYTES = 16 << 10;
const FILE_BYTES = 3 * CHUNK_BYTES - 777; // a short last chunk: reads past its end are short

const { cli, status, grants, shardOf, flipStoredByte, readsRightFromGrants } = grantHelpers(shared);

test.serial.before(async () => {
  await shOk(
    `head -c ${FILE_BYTES} /dev/urandom > ${shared.dir}/ref && cp ${shared.dir}/ref ${shared.path('f')} && sync`,
  );
});

serial('reads of a clean file are answered from grants, verified and right', async (t) => {
  await readsRightFromGrants(t, 'f', '1');
});

serial(
  'a block flipped on disk under a grant: the read is served from another replica, counted and healed',
  async (t) => {
    await py(READS, [shared.path('f'), `${shared.dir}/ref`, '2']); // chunk 1 is granted now
    // Flip a byte of block 3's data behind the store's back: only the hash check can see it.
    await flipStoredByte('f', 1, dataStartBytes(CHUNK_BYTES / BLOCK_BYTES) + 3 * BLOCK_BYTES + 100, 0x10);
    const before = await status();
    const r = await py(
      `
import os, sys, json
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
want = open(sys.argv[2], 'rb').read()
c1 = 4 * 1048576
# Block 0 of chunk 1 first (it verifies: JavaScript grants the chunk again if the grant of the
# pass before has lapsed), then the flipped block 3 right after, within the grant's second.
first = os.pread(fd, 4096, c1) == want[c1:c1 + 4096] and os.pread(fd, 4096, c1) == want[c1:c1 + 4096]
off = c1 + 3 * 16384
print(json.dumps({'same': first and os.pread(fd, 4096, off) == want[off:off + 4096]}))
`,
      [shared.path('f'), `${shared.dir}/ref`],
    );
    t.true(r.same, 'the flipped block reads right');
    const after = await status();
    t.true(after.mount.readGrants.failedReads > before.mount.readGrants.failedReads, 'the grant handed the read back');
    t.true(after.counters.bitrot_errors > before.counters.bitrot_errors, 'the bad block is counted');
    t.is(await healDrained(shared.mount.mountpoint), 0, 'and healed');
    t.is((await py(READS, [shared.path('f'), `${shared.dir}/ref`, '3'])).bad, 0);
  },
);

serial(
  '128 KiB reads over a flipped block: the grant hands the read back to JavaScript, served from another replica, counted, healed',
  async (t) => {
    await py(READS, [shared.path('f'), `${shared.dir}/ref`, '14']);
    await flipStoredByte(
      'f',
      2,
      dataStartBytes(Math.ceil((CHUNK_BYTES - 777) / BLOCK_BYTES)) + 20 * BLOCK_BYTES + 5,
      0x01,
    );
    const before = await status();
    // 128 KiB reads (a sequential reader's size): the first (JavaScript) grants chunk 2 again if its
    // grant lapsed; the third covers the flipped block 20 (bytes [320 KiB, 336 KiB)).
    const r = await py(
      `
import os, sys, json, mmap
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
want = open(sys.argv[2], 'rb').read()
buf = mmap.mmap(-1, 131072)
c2 = 8 * 1048576
bad = 0
for k in [0, 1, 2, 3, 2, 0]:
    off = c2 + k * 131072
    n = os.preadv(fd, [buf], off)
    if buf[:n] != want[off:off + 131072]: bad += 1
print(json.dumps({'bad': bad}))
`,
      [shared.path('f'), `${shared.dir}/ref`],
    );
    t.is(r.bad, 0, 'every read is right');
    const after = await status();
    t.true(after.mount.readGrants.failedReads > before.mount.readGrants.failedReads, 'the grant handed the read back');
    t.true(after.counters.bitrot_errors > before.counters.bitrot_errors, 'the bad block is counted');
    t.is(await healDrained(shared.mount.mountpoint), 0, 'and healed');
    t.is((await py(READS, [shared.path('f'), `${shared.dir}/ref`, '15'])).bad, 0);
  },
);

serial('an injected read fault ends every grant: reads fail over in JavaScript until it is cleared', async (t) => {
  await py(READS, [shared.path('f'), `${shared.dir}/ref`, '4']);
  const set = JSON.parse(await cli(['inject', 'eio', '0', '--ops', 'read', shared.mount.mountpoint, '--json']));
  t.regex(set.message, /fault #\d+: disk 0/);
  try {
    const before = await grants();
    t.is(before.grantedChunks, 0, 'no grant outlives the fault');
    t.is((await py(READS, [shared.path('f'), `${shared.dir}/ref`, '4'])).bad, 0);
    t.is((await grants()).servedReads, before.servedReads, 'no read answered outside the Io while a fault is set');
  } finally {
    await cli(['inject', '--clear', shared.mount.mountpoint]);
  }
  const cleared = await grants();
  t.is((await py(READS, [shared.path('f'), `${shared.dir}/ref`, '5'])).bad, 0);
  t.true((await grants()).servedReads > cleared.servedReads, 'grants again once the fault is gone');
});

serial('writes, truncates and punched holes: no read is ever answered from a grant made before them', async (t) => {
  await shOk(`cp ${shared.dir}/ref ${shared.path('m')} && sync`);
  await py(READS, [shared.path('m'), `${shared.dir}/ref`, '6']); // grants of m's chunks
  const r = await py(MODEL, [shared.path('m'), `${shared.dir}/ref`, '7']);
  t.is(r.badCount, 0, `stale reads: ${r.bad.join(', ')}`);
  t.true((await grants()).servedReads > 0);
});

serial(
  '4 writers verifying their own blocks as they go (fio verify_backlog, O_DIRECT): every block verifies',
  async (t) => {
    const dir = shared.path('fio');
    fs.mkdirSync(dir);
    const r = await run(
      'fio',
      [
        '--name=v',
        `--directory=${dir}`,
        '--rw=randwrite',
        '--bs=4k',
        '--size=6M',
        '--numjobs=4',
        '--direct=1',
        '--ioengine=psync',
        '--verify_state_save=0',
        '--verify=crc32c',
        '--verify_backlog=64',
        '--verify_fatal=1',
        '--do_verify=1',
        '--group_reporting',
      ],
      { timeoutMs: 300_000 },
    );
    t.is(r.code, 0, `fio: ${r.stderr.slice(-2000)}`);
    t.notRegex(r.stdout + r.stderr, /verify: bad/);
    // And read again once stored and granted.
    await shOk(`sync ${dir}`);
    const again = await run(
      'fio',
      [
        '--name=v',
        `--directory=${dir}`,
        '--rw=randwrite',
        '--bs=4k',
        '--size=6M',
        '--numjobs=4',
        '--direct=1',
        '--ioengine=psync',
        '--verify_state_load=0',
        '--verify=crc32c',
        '--verify_only',
        '--verify_fatal=1',
        '--group_reporting',
      ],
      { timeoutMs: 300_000 },
    );
    t.is(again.code, 0, `fio verify_only: ${again.stderr.slice(-2000)}`);
    t.true(path.isAbsolute(dir));
  },
);

serial('a granted file removed: its shards are deleted and no descriptor of the mount holds them', async (t) => {
  await shOk(`cp ${shared.dir}/ref ${shared.path('gone')} && sync`);
  await py(READS, [shared.path('gone'), `${shared.dir}/ref`, '8']);
  t.true((await grants()).grantedChunks > 0, 'its chunks are granted');
  await shOk(`rm ${shared.path('gone')} && sync`);
  t.is(await reclaimDrained(shared.mount.mountpoint), 0);
  // A deleted shard file still open would keep its space until the descriptor closes.
  const held = await shOk(`ls -l /proc/${shared.mount.child.pid}/fd | grep '\\.shard (deleted)' || true`);
  t.is(held.trim(), '', 'descriptors of deleted shard files');
});

serial(
  'an encrypted file (replica:3,aes256gcm): reads answered from grants, segments verified and opened in C, right',
  async (t) => {
    fs.mkdirSync(shared.path('enc'));
    await shOk(
      `setfattr -n user.chunkfs.layout -v replica:3,aes256gcm ${shared.path('enc')} && cp ${shared.dir}/ref ${shared.path('enc/f')} && sync`,
    );
    t.is(
      (await shOk(`getfattr --only-values -n user.chunkfs.layout ${shared.path('enc/f')}`)).trim(),
      'replica:3,aes256gcm',
    );
    await readsRightFromGrants(t, 'enc/f', '9');
    // Writes, truncates and holes on an encrypted file: each makes a new version; no read meets an old grant.
    await shOk(`cp ${shared.dir}/ref ${shared.path('enc/m')} && sync`);
    await py(READS, [shared.path('enc/m'), `${shared.dir}/ref`, '10']);
    const m = await py(MODEL, [shared.path('enc/m'), `${shared.dir}/ref`, '11']);
    t.is(m.badCount, 0, `stale reads: ${m.bad.join(', ')}`);
  },
);

serial(
  'encrypted: a segment forged with fresh hashes fails its tag in C; served around in JavaScript, counted, healed',
  async (t) => {
    await shOk(`cp ${shared.dir}/ref ${shared.path('enc/g')} && sync`);
    // Replica 0 of chunk 1 re-encoded with one byte of segment 5 flipped and fresh hashes: only the GCM tag can tell.
    const file = await shardOf('enc/g', 1, 0);
    const { key } = openConfig(shared.dir + '/store');
    const { header, payload } = verifyShardBytes(fs.readFileSync(file), key);
    t.true((header.flags & FLAG_ENCRYPTED) !== 0);
    payload[24 + 5 * (16384 + 16) + 100] ^= 0x5a; // v2: the 24-byte header, then ciphertext || tag per segment
    fs.writeFileSync(
      file,
      encodeShard({ ...header, compressed: (header.flags & FLAG_COMPRESSED) !== 0, encrypted: true }, payload, key),
    );
    await shared.remount(); // nothing of the old shard cached: the first read verifies the forged file's fresh hashes
    const before = await status();
    // Segment 0 first (read by JavaScript from replica 0, its tag checks: the chunk is granted on
    // replica 0), again (from the grant), then the forged segment 5 within the grant's second.
    const r = await py(
      `
import os, sys, json
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
want = open(sys.argv[2], 'rb').read()
c1 = 4 * 1048576
offs = [c1, c1, c1 + 5 * 16384 + 4096] + [c1 + k * 16384 for k in range(16)]
print(json.dumps({'bad': sum(1 for off in offs if os.pread(fd, 4096, off) != want[off:off + 4096])}))
`,
      [shared.path('enc/g'), `${shared.dir}/ref`],
    );
    t.is(r.bad, 0, 'every read of the forged chunk is right');
    const after = await status();
    t.true(after.mount.readGrants.servedReads > before.mount.readGrants.servedReads, 'the chunk was granted');
    t.true(
      after.mount.readGrants.failedReads > before.mount.readGrants.failedReads,
      'the grant handed the forged segment back',
    );
    t.true(
      after.counters.header_mismatches > before.counters.header_mismatches,
      `the forged replica is counted: ${JSON.stringify(after.counters)}`,
    );
    t.is(await healDrained(shared.mount.mountpoint), 0, 'and healed');
    t.is((await py(READS, [shared.path('enc/g'), `${shared.dir}/ref`, '13'])).bad, 0);
  },
);
