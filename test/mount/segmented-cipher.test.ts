// Cipher format v2 through the mount (DESIGN §10, src/chunk-segments.ts): encrypted files on
// replica:3,aes256gcm and ec:4+2,aes256gcm written and read at random by fio with --verify and by
// O_DIRECT reads compared with a reference (fresh mounts, so the reads decrypt segments from the
// shards); a stored byte flipped inside one segment is caught by its hash before decryption, served
// around (another replica, or reconstruction) and healed by scrub --repair.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, CLI_JS, run, shOk } from '../helpers/mount';
import { directReadMismatches } from '../helpers/direct-reads';

const DIRS: Record<string, string> = { a3: 'replica:3,aes256gcm', aec: 'ec:4+2,aes256gcm' };
const REF_BYTES = (12 << 20) + 5000; // three chunks and a short fourth
const SEGMENT_BYTES = 16384;

const shared = sharedMount(test, 'segcipher', { mkfs: ['--disks', '6', '--layout', 'replica:3'] });

test.serial.before(async () => {
  const mnt = shared.mount.mountpoint;
  await shOk(`head -c ${REF_BYTES} /dev/urandom > ${shared.dir}/ref`);
  for (const [d, layout] of Object.entries(DIRS)) {
    await shOk(
      `mkdir ${mnt}/${d} && setfattr -n user.chunkfs.layout -v ${layout} ${mnt}/${d} && cp ${shared.dir}/ref ${mnt}/${d}/ref && sync`,
    );
  }
});

interface Status {
  healQueueLength: number;
  counters: Record<string, number>;
}
async function status(): Promise<Status> {
  const r = await run(process.execPath, [CLI_JS, 'status', shared.dir + '/store', '--json'], { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`status failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Status;
}

async function directReads(rel: string, reads: Array<[number, number]>): Promise<unknown[]> {
  return await directReadMismatches(path.join(shared.mount.mountpoint, rel), `${shared.dir}/ref`, reads);
}

/** Deterministic random 4 KiB-aligned reads of 4..64 KiB inside the reference. */
function randomReads(count: number, seed: number): Array<[number, number]> {
  let x = seed;
  const next = (): number => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
  const out: Array<[number, number]> = [];
  for (let i = 0; i < count; i++) {
    const n = 4096 * (1 + Math.floor(next() * 16));
    out.push([4096 * Math.floor(next() * ((REF_BYTES - n) / 4096)), n]);
  }
  return out;
}

test.serial('random O_DIRECT reads after a remount return the written bytes (segments decrypted alone)', async (t) => {
  await shared.remount(); // nothing cached: every read goes to the shards
  for (const d of Object.keys(DIRS)) {
    t.deepEqual(await directReads(`${d}/ref`, randomReads(300, 7)), [], d);
    t.deepEqual(
      await directReads(`${d}/ref`, [
        [REF_BYTES - (REF_BYTES % 4096), REF_BYTES % 4096],
        [0, 4096],
      ]),
      [],
      `${d}: the short tail and the first block`,
    );
  }
  const s = await status();
  t.is(s.counters.unrecoverable_reads, 0);
});

test.serial('fio random writes with --verify, verified again after a remount', async (t) => {
  const fio = (dir: string, extra: string): Promise<string> =>
    shOk(
      `cd ${dir} && fio --name=v --filename=fio.dat --size=16M --bs=4k --rw=randwrite --ioengine=psync --direct=1 --randseed=23 --verify=crc32c --verify_fatal=1 --output-format=terse ${extra}`,
      { timeoutMs: 300_000 },
    );
  for (const d of Object.keys(DIRS)) await fio(shared.path(d), '');
  await shared.remount();
  for (const d of Object.keys(DIRS)) {
    const r = await run(
      'bash',
      [
        '-c',
        `cd ${shared.path(d)} && fio --name=v --filename=fio.dat --size=16M --bs=4k --rw=randwrite --ioengine=psync --direct=1 --randseed=23 --verify=crc32c --verify_fatal=1 --verify_only`,
      ],
      { timeoutMs: 300_000 },
    );
    t.is(r.code, 0, `${d}: ${r.stdout}${r.stderr}`);
    t.notRegex(r.stdout + r.stderr, /verify: bad/, d);
  }
  t.is((await status()).counters.unrecoverable_reads, 0);
});

test.serial('a stored byte flipped inside one segment: caught by its hash, served around, healed', async (t) => {
  const mnt = shared.mount.mountpoint;
  const before = await status();
  // Bitrot block 5 of chunk 1 (its middle: payload byte 90112, inside segment 5); --shard 0: a replica
  // the read tries first, and for EC(4,2) the data shard holding the payload's first 256 KiB.
  for (const d of Object.keys(DIRS)) {
    const r = await run(
      process.execPath,
      [CLI_JS, 'inject', 'corrupt', `${mnt}/${d}/ref`, '--chunk', '1', '--shard', '0', '--block', '5'],
      { timeoutMs: 30_000 },
    );
    t.is(r.code, 0, r.stdout + r.stderr);
    const seg = (4 << 20) + 5 * SEGMENT_BYTES;
    t.deepEqual(
      await directReads(`${d}/ref`, [
        [seg, 4096],
        [seg + 8192, 8192],
        [seg - 4096, 12288],
      ]),
      [],
      d,
    );
  }
  const after = await status();
  t.true(after.counters.bitrot_errors >= before.counters.bitrot_errors + 2, JSON.stringify(after.counters));
  t.is(after.counters.unrecoverable_reads, 0);
  const fixed = await run(process.execPath, [CLI_JS, 'scrub', mnt, '--repair'], { timeoutMs: 120_000 });
  t.regex(fixed.stdout, / 0 unrecoverable/, fixed.stdout + fixed.stderr);
  const clean = await run(process.execPath, [CLI_JS, 'scrub', mnt], { timeoutMs: 120_000 });
  t.is(clean.code, 0, clean.stdout + clean.stderr);
  t.regex(clean.stdout, / 0 bad or missing/);
  await shared.remount();
  for (const d of Object.keys(DIRS))
    t.deepEqual(await directReads(`${d}/ref`, randomReads(50, 9)), [], `${d} after heal`);
});
