// A small write into a hole stores only what it needs (DESIGN §5 "Sparse shard writes"): 4 KiB
// written at the end of the first chunk of a fresh sparse file makes a chunk whose bytes before the
// write are zeros; each replica's shard file leaves them as a hole, so the disks hold the shard
// heads and the written page, not 4 MiB three times. The file reads back with zeros there, after a
// remount too (the zeros verify against the hash table), and a scrub finds every shard good.
import test from 'ava';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { storeFixture, shOk, chunkfsCli, ChunkfsMount } from '../helpers/mount';

const MIB = 1 << 20;
const CHUNK_BYTES = 4 * MIB;
const PAGE_BYTES = 4096;
/** Per shard: header (4 KiB), hash table (8 KiB for 256 blocks) and the written page, with room to spare. */
const SHARD_ALLOCATED_MAX = 64 * 1024;
/** What the mount may write for it all: three shards, the metadata's WAL and the log (the chunk is 4 MiB). */
const WRITTEN_BYTES_MAX = 1 << 20;

const fixture = storeFixture(test, 'sparse-shards');

/** Allocated bytes (st_blocks) and apparent sizes of every shard file of the store. */
async function shardFiles(): Promise<Array<{ allocated: number; size: number }>> {
  const out = await shOk(`find '${fixture.store}/disks' -name '*.shard' -printf '%b %s\\n'`);
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const [blocks, size] = l.split(' ').map(Number);
      return { allocated: blocks * 512, size };
    });
}

/** Bytes the mount process has written to storage (/proc/PID/io write_bytes: page cache and O_DIRECT). */
function writtenBytes(m: ChunkfsMount): number {
  const pid = /\(pid (\d+)/.exec(m.readyLine)?.[1];
  if (pid === undefined) throw new Error(`no pid in the mount's ready line: ${m.readyLine}`);
  const line = readFileSync(`/proc/${pid}/io`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('write_bytes:'));
  if (line === undefined) throw new Error(`no write_bytes in /proc/${pid}/io`);
  return Number(line.split(':')[1]);
}

/** sha256 of the file as read through the mount, and of what it must hold. */
async function readBack(m: ChunkfsMount): Promise<{ got: string; want: string }> {
  const got = (await shOk(`sha256sum < '${m.mountpoint}/f'`)).split(' ')[0];
  const want = createHash('sha256')
    .update(Buffer.alloc(CHUNK_BYTES - PAGE_BYTES))
    .update(Buffer.alloc(PAGE_BYTES, 0x5a))
    .digest('hex');
  return { got, want };
}

test.serial('a 4 KiB write into a hole stores the written page, not the chunk, and reads zeros there', async (t) => {
  let m = await fixture.mount();
  const before = writtenBytes(m);
  // The last page of chunk 0 of a new file: a hole of 4 MiB - 4 KiB before it; fsync stores it.
  await shOk(
    `head -c ${PAGE_BYTES} /dev/zero | tr '\\0' 'Z' | dd of='${m.mountpoint}/f' bs=${PAGE_BYTES} ` +
      `seek=${CHUNK_BYTES / PAGE_BYTES - 1} conv=notrunc,fsync status=none`,
  );
  const written = writtenBytes(m) - before;
  t.true(written <= WRITTEN_BYTES_MAX, `the mount wrote ${written} bytes for a 4 KiB write`);
  const shards = await shardFiles();
  t.is(shards.length, 3, 'replica:3: one chunk, three shard files');
  for (const s of shards) {
    t.true(s.size > CHUNK_BYTES, `a shard file spans the whole chunk (${s.size} bytes)`);
    t.true(s.allocated <= SHARD_ALLOCATED_MAX, `a shard holds ${s.allocated} bytes on its disk`);
  }
  const total = shards.reduce((n, s) => n + s.allocated, 0);
  t.log(
    `a 4 KiB write into a hole: ${written} bytes written by the mount, ${total} on the disks (was ${3 * CHUNK_BYTES})`,
  );
  let r = await readBack(m);
  t.is(r.got, r.want, 'read back at once');
  await m.stop();
  m = await fixture.mount();
  r = await readBack(m);
  t.is(r.got, r.want, 'read back from the shards after a remount');
  const scrub = await chunkfsCli(['scrub', m.mountpoint]);
  t.is(scrub.code, 0, scrub.stderr);
  t.regex(scrub.stdout, /3 shards checked, 0 bad or missing/);
  await m.stop();
});
