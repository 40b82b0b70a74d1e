// Features a user expects of a local file system (filesystem.md, Features), on a real mount on the pass's
// transport: st_blocks counts what a file allocates (a sparse file shows few blocks, du agrees),
// SEEK_DATA / SEEK_HOLE answer from the chunk map (libfuse3; fuse-native has no lseek op, so the
// kernel there reports the whole file as data, which POSIX allows), fallocate modes the store
// cannot do are refused cleanly, O_TMPFILE is refused cleanly (no tmpfile op in libfuse 3.14), and
// statx reports no birth time (libfuse 3.14 cannot send one); POSIX ACLs are enforced by the kernel
// (libfuse3's POSIX ACL capability) and refused cleanly on fuse-native.
import test from 'ava';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { sharedMount, fsClient, fsOk, shOk, TRANSPORT, ClientOp } from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
const MiB = 1 << 20;
const CHUNK_BYTES = 4 * MiB;
/** Python's name for errno 95 (EOPNOTSUPP and ENOTSUP are one number on Linux). */
const ENOTSUP = 'ENOTSUP';

const shared = sharedMount(test, 'features');
const P = shared.path;

const remount = shared.remount;

/** 4 KiB at 0 and 4 KiB at 10 chunks in: two small islands of data in a 40 MiB file. */
const FAR = 10 * CHUNK_BYTES;
const ISLAND = 4096;

test.serial(
  'st_blocks counts allocated bytes: a sparse file shows a few blocks, before and after fsync; du and a sparse copy agree',
  async (t) => {
    const r = await fsClient([
      ['open', 'f', P('sparse'), ['rdwr', 'creat']],
      ['pwrite', 'f', 0, { seed: 1, len: ISLAND }],
      ['pwrite', 'f', FAR, { seed: 2, len: ISLAND }],
      ['fstat', 'f'],
      ['fsync', 'f'],
      ['fstat', 'f'],
      ['close', 'f'],
      ['open', 'g', P('dense'), ['rdwr', 'creat']],
      ['pwrite', 'g', 0, { seed: 3, len: 3 * MiB }],
      ['fsync', 'g'],
      ['fstat', 'g'],
      ['writefile', P('small'), 'a small file, packed as a needle'],
      ['stat', P('small')],
    ]);
    for (const [i, res] of r.entries()) t.is(res.err, undefined, `op ${i}: ${res.err}`);
    const size = FAR + ISLAND;
    for (const st of [r[3].ok, r[5].ok]) {
      t.is(st.size, size);
      t.true(st.blocks * 512 >= 2 * ISLAND, `blocks ${st.blocks} cover the written bytes`);
      t.true(st.blocks * 512 < MiB, `blocks ${st.blocks} for ${size} bytes with ${2 * ISLAND} written`);
    }
    t.is(r[10].ok.blocks * 512, 3 * MiB);
    t.is(r[12].ok.blocks, Math.ceil(r[12].ok.size / 512));
    t.is(Number((await shOk(`du -k ${P('sparse')} | cut -f1`)).trim()), (2 * ISLAND) / 1024);
    await shOk(`cp --sparse=always ${P('sparse')} ${shared.dir}/copy && cmp ${shared.dir}/copy ${P('sparse')}`);
  },
);

test.serial(
  'SEEK_DATA / SEEK_HOLE find the islands of a sparse file (libfuse3), or the whole file as data (fuse-native)',
  async (t) => {
    const size = FAR + ISLAND;
    const r = await fsClient([
      ['open', 'f', P('sparse'), ['rdonly']],
      ['lseek', 'f', 0, 'data'],
      ['lseek', 'f', 0, 'hole'],
      ['lseek', 'f', ISLAND, 'data'],
      ['lseek', 'f', FAR + 10, 'hole'],
      ['lseek', 'f', size, 'data'],
      ['lseek', 'f', size, 'hole'],
      // written, not yet stored (the write-back buffer holds it): data all the same
      ['open', 'w', P('buffered'), ['rdwr', 'creat']],
      ['pwrite', 'w', 2 * CHUNK_BYTES, { seed: 4, len: ISLAND }],
      ['lseek', 'w', 0, 'data'],
      ['lseek', 'w', 0, 'hole'],
    ]);
    t.is(r[1].ok, 0);
    t.is(r[5].err, 'ENXIO');
    t.is(r[6].err, 'ENXIO');
    t.is(r[4].ok, size);
    if (FUSE3) {
      t.is(r[2].ok, ISLAND);
      t.is(r[3].ok, FAR);
      t.is(r[9].ok, 2 * CHUNK_BYTES);
      t.is(r[10].ok, 0);
    } else {
      t.is(r[2].ok, size);
      t.is(r[3].ok, ISLAND);
      t.is(r[9].ok, 0);
      t.is(r[10].ok, 2 * CHUNK_BYTES + ISLAND);
    }
  },
);

// DESIGN §5 "One view": holes come in whole chunks (the format stores a chunk from its start), and
// st_blksize says so; xfstests' seek_sanity_test probes the allocation unit exactly like this.
test.serial(
  'st_blksize is the chunk size, the unit holes come in: one byte anywhere in a chunk makes it data from its start; the same after fsync and a remount',
  async (t) => {
    const probes: ClientOp[] = [];
    for (const at of [1, 4096, 128 * 1024, CHUNK_BYTES - 1, CHUNK_BYTES]) {
      probes.push(['ftruncate', 'g', 0], ['pwrite', 'g', at, 'a'], ['lseek', 'g', 0, 'data']);
    }
    const r = await fsClient([
      ['open', 'g', P('granule'), ['rdwr', 'creat']],
      ...probes,
      ['fstat', 'g'],
      ['stat', P('')],
      ['close', 'g'],
    ]);
    for (const [i, res] of r.entries()) t.is(res.err, undefined, `op ${i}: ${res.err}`);
    const found = [3, 6, 9, 12, 15].map((i) => r[i].ok);
    t.deepEqual(
      found,
      FUSE3 ? [0, 0, 0, 0, CHUNK_BYTES] : [0, 0, 0, 0, 0],
      'SEEK_DATA from 0 (fuse-native: the kernel says all data)',
    );
    t.is(r[16].ok.blksize, CHUNK_BYTES, 'a file: its chunk size');
    t.is(r[17].ok.blksize, 128 * 1024, 'a directory: the I/O size');
    if (!FUSE3) return;
    const size = 3 * CHUNK_BYTES + ISLAND;
    const view: ClientOp[] = [
      ['fstat', 'h'],
      ['lseek', 'h', 0, 'data'],
      ['lseek', 'h', CHUNK_BYTES, 'hole'],
      ['lseek', 'h', CHUNK_BYTES + 15, 'data'],
      ['lseek', 'h', 3 * CHUNK_BYTES, 'hole'],
    ];
    const shown = (res: Array<{ ok?: any; err?: string }>): unknown[] => res.map((x) => x.ok?.blocks ?? x.ok ?? x.err);
    const a = await fsClient([
      ['open', 'h', P('holes'), ['rdwr', 'creat']],
      ['pwrite', 'h', CHUNK_BYTES + 5, { seed: 5, len: 10 }],
      ['pwrite', 'h', 3 * CHUNK_BYTES, { seed: 6, len: ISLAND }],
      ...view,
      ['fsync', 'h'],
      ...view,
      ['close', 'h'],
    ]);
    const before = shown(a.slice(3, 8));
    t.deepEqual(before, [Math.ceil((15 + ISLAND) / 512), CHUNK_BYTES, CHUNK_BYTES + 15, 3 * CHUNK_BYTES, size]);
    t.deepEqual(shown(a.slice(9, 14)), before, 'after fsync');
    await remount();
    t.deepEqual(
      shown(await fsClient([['open', 'h', P('holes'), ['rdonly']], ...view]).then((x) => x.slice(1))),
      before,
      'after a remount',
    );
  },
);

// xfstests generic/568: fallocated space counts in st_blocks like written zeros (SEEK_DATA
// sees data: store/meta/prealloc.ts says why), so a write into it does not grow the file's blocks.
test.serial(
  'fallocate (mode 0, KEEP_SIZE) counts in st_blocks and reads zeros; writing into it changes nothing shown; the same after fsync and a remount (libfuse3)',
  async (t) => {
    if (!FUSE3) {
      t.pass('fuse-native has no fallocate');
      return;
    }
    const view: ClientOp[] = [
      ['fstat', 'a'],
      ['lseek', 'a', 4097, 'data'],
      ['lseek', 'a', CHUNK_BYTES, 'hole'],
      ['pread', 'a', CHUNK_BYTES + 100, 1000],
    ];
    const shown = (res: Array<{ ok?: any; err?: string }>): unknown[] =>
      res.map((x) =>
        x.ok?.size !== undefined && x.ok?.blocks !== undefined ? [x.ok.size, x.ok.blocks] : (x.ok ?? x.err),
      );
    const r = await fsClient([
      ['open', 'a', P('falloc'), ['rdwr', 'creat']],
      ['fallocate', 'a', [], 4095, 2],
      ['fstat', 'a'], // generic/568: a range across a 4 KiB boundary
      ['pwrite', 'a', 4095, 'xy'],
      ['fstat', 'a'],
      ['fallocate', 'a', ['keep_size'], 2 * CHUNK_BYTES, MiB], // past the end: counted, the size stays
      ['fallocate', 'a', [], CHUNK_BYTES + 100, 1000], // grows the size; KEEP_SIZE space past it stays
      ...view,
      ['pwrite', 'a', CHUNK_BYTES + 200, { seed: 7, len: 10 }],
      ['pwrite', 'a', CHUNK_BYTES + 1000, 'z'],
      ...view,
      ['fsync', 'a'],
      ...view,
      ['close', 'a'],
    ]);
    for (const [i, res] of r.entries()) t.is(res.err, undefined, `op ${i}: ${res.err}`);
    t.is(r[2].ok.size, 4097);
    t.is(
      r[2].ok.blocks,
      Math.ceil(4097 / 512),
      'the fallocated bytes count (from the chunk start, as written ones would)',
    );
    t.is(r[4].ok.blocks, r[2].ok.blocks, 'writing into them does not grow the file (generic/568)');
    const before = shown(r.slice(7, 11));
    const size = CHUNK_BYTES + 1100;
    t.deepEqual(
      before.slice(0, 3),
      [[size, Math.ceil((4097 + 1100 + MiB) / 512)], CHUNK_BYTES, size],
      'size, blocks (KEEP_SIZE space past the end too), SEEK_DATA, SEEK_HOLE',
    );
    t.is(
      (r[10].ok as { sha256: string }).sha256,
      createHash('sha256').update(Buffer.alloc(1000)).digest('hex'),
      'reads zeros',
    );
    const written = shown(r.slice(13, 17));
    t.deepEqual(written.slice(0, 3), before.slice(0, 3), 'a write into the allocated range changes no answer');
    t.deepEqual(shown(r.slice(18, 22)), written, 'after fsync');
    await remount();
    const again = await fsClient([['open', 'a', P('falloc'), ['rdonly']], ...view]);
    t.deepEqual(shown(again.slice(1)), written, 'after a remount');
  },
);

// The kernel's FUSE module refuses these modes itself (fs/fuse/file.c), so no file system can offer them.
test.serial(
  'fallocate COLLAPSE_RANGE and INSERT_RANGE are refused with EOPNOTSUPP, leaving the file as it was',
  async (t) => {
    const r = await fsClient([
      ['open', 'f', P('dense'), ['rdwr']],
      ['fallocate', 'f', ['collapse_range'], 0, CHUNK_BYTES],
      ['fallocate', 'f', ['insert_range'], 0, CHUNK_BYTES],
      ['fstat', 'f'],
    ]);
    t.is(r[1].err, ENOTSUP);
    t.is(r[2].err, ENOTSUP);
    t.is(r[3].ok.size, 3 * MiB);
  },
);

// xfstests generic/213: fallocate promises the space, so more than the disks hold is refused.
test.serial(
  'fallocate past the free space is refused with ENOSPC and the size stays; within it the size grows (libfuse3)',
  async (t) => {
    if (!FUSE3) {
      t.pass('fuse-native has no fallocate');
      return;
    }
    const availBytes = Number((await shOk(`df -B1 --output=avail ${shared.mount.mountpoint} | tail -1`)).trim());
    const r = await fsClient([
      ['open', 'f', P('prealloc'), ['rdwr', 'creat']],
      ['fallocate', 'f', [], 0, availBytes * 2],
      ['fstat', 'f'],
      ['fallocate', 'f', [], 0, MiB],
      ['fstat', 'f'],
      ['close', 'f'],
    ]);
    t.is(r[1].err, 'ENOSPC');
    t.is(r[2].ok.size, 0, 'nothing changed');
    t.is(r[3].err, undefined);
    t.is(r[4].ok.size, MiB);
  },
);

// xfstests generic/564: a write past what the store holds (2^50 bytes) fails for its writer at once
// with EFBIG; it was accepted into the buffer, failed at the flush, and then rm answered EIO.
test.serial(
  'a write past the maximum file size fails with EFBIG for its writer; the file stays as it was and is removable',
  async (t) => {
    const r = await fsClient([
      ['open', 'f', P('huge-offset'), ['rdwr', 'creat']],
      ['pwrite', 'f', 0, 'kept'],
      ['pwrite', 'f', 2 ** 53, 'too far'],
      ['fsync', 'f'],
      ['fstat', 'f'],
      ['close', 'f'],
      ['unlink', P('huge-offset')],
    ]);
    t.is(r[2].err, 'EFBIG');
    t.is(r[3].err, undefined, 'nothing failed later');
    t.is(r[4].ok.size, 4);
    t.is(r[6].err, undefined);
  },
);

// xfstests generic/525: a truncate past what the store holds answers EFBIG, as the kernel does past
// its own limit; sizes beyond 2^53 (2^63 - 1 there) answered EINVAL, as if the size were malformed.
test.serial('a truncate past the maximum file size fails with EFBIG; the file stays as it was', async (t) => {
  const r = await fsClient([
    ['open', 'f', P('huge-size'), ['rdwr', 'creat']],
    ['pwrite', 'f', 0, 'kept'],
    ['ftruncate', 'f', 2 ** 50 + 1],
    ['ftruncate', 'f', 2 ** 53 + 2],
    ['truncate', P('huge-size'), 2 ** 62],
    ['fstat', 'f'],
    ['close', 'f'],
  ]);
  t.deepEqual(
    r.slice(2, 5).map((x) => x.err),
    ['EFBIG', 'EFBIG', 'EFBIG'],
  );
  t.is(r[5].ok.size, 4);
});

test.serial('O_TMPFILE is refused with EOPNOTSUPP (libfuse 3.14 has no tmpfile op), and nothing appears', async (t) => {
  const before = await fsOk(['listdir', shared.mount.mountpoint]);
  const [r] = await fsClient([['tmpfile', 't', shared.mount.mountpoint]]);
  t.is(r.err, ENOTSUP);
  t.deepEqual(await fsOk(['listdir', shared.mount.mountpoint]), before);
});

test.serial('statx: no birth time (libfuse 3.14 cannot send one), the other times are there', async (t) => {
  const [btime, mtime] = (await shOk(`stat -c '%W %Y' ${P('dense')}`)).trim().split(' ').map(Number);
  t.is(btime, 0); // stat(1) prints 0 when statx has no STATX_BTIME
  t.true(mtime > 0);
});

test.serial(
  'POSIX ACLs (libfuse3): setfacl/getfacl, the kernel enforces them for another uid, chmod and the mode follow, default ACLs are inherited in place of the umask; fuse-native refuses them (EOPNOTSUPP)',
  async (t) => {
    const nobody = { asUid: 65534 };
    await shOk(`umask 022; echo secret > ${P('acl')}; chmod 600 ${P('acl')}; mkdir ${P('acld')}`);
    const set = await shOk(`setfacl -m u:nobody:r ${P('acl')} 2>&1 || true`);
    if (!FUSE3) {
      t.regex(set, /Operation not supported/);
      t.regex(await shOk(`cat ${P('acl')} 2>&1 || true`, nobody), /Permission denied/);
      return;
    }
    t.is(set, '');
    t.regex(await shOk(`getfacl -c ${P('acl')}`), /^user::rw-\nuser:nobody:r--\ngroup::---\nmask::r--\nother::---/);
    t.regex(await shOk(`ls -l ${P('acl')}`), /^-rw-r-----\+ /); // the group class shows the mask
    t.is((await shOk(`cat ${P('acl')}`, nobody)).trim(), 'secret');
    await shOk(`chmod 600 ${P('acl')}`); // the mask follows the mode: nobody loses read
    t.regex(await shOk(`getfacl -c ${P('acl')}`), /mask::---/);
    t.regex(await shOk(`cat ${P('acl')} 2>&1 || true`, nobody), /Permission denied/);
    await shOk(`setfacl -b ${P('acl')}`);
    t.is((await shOk(`getfacl -c ${P('acl')}`)).trim(), 'user::rw-\ngroup::---\nother::---');
    // inheritance: a default ACL replaces the umask; without one the umask applies
    await shOk(`setfacl -d -m u:nobody:rwx,g::r-x,o::- ${P('acld')}`);
    await shOk(`umask 077; touch ${P('acld/f')}; mkdir ${P('acld/sub')}; touch ${P('plain')}`);
    t.regex(
      await shOk(`getfacl -c ${P('acld/f')}`),
      /user:nobody:rwx\t+#effective:rw-\ngroup::r-x\t+#effective:r--\nmask::rw-\nother::---/,
    );
    t.regex(await shOk(`getfacl -c ${P('acld/sub')}`), /default:user:nobody:rwx/);
    t.regex(await shOk(`ls -l ${P('plain')}`), /^-rw------- /);
    await remount(); // stored as xattrs: they survive
    t.regex(await shOk(`getfacl -c ${P('acld/f')}`), /user:nobody:rwx/);
  },
);
