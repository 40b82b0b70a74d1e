// Transforms through the mount (DESIGN §10): layouts with transforms set at mkfs and per directory,
// shown by getfattr and counted by `chunkfs status`; round trips on replica:3 and ec:4+2 with each
// transform and both; partial overwrites; incompressible data stored raw; a flipped stored byte of
// an encrypted chunk caught by the hash before decryption, served around and healed; a wrong or
// missing store key refused at mount with nothing changed; inspect decoding with the key; a shard
// whose hashes pass but whose GCM tag fails found by inspect and scrub, queued and mended.
import test from 'ava';
import * as path from 'node:path';
import { promises as fsp } from 'node:fs';
import { sharedMount, CLI_JS, run, shOk, transportArgs } from '../helpers/mount';
import { directReadMismatches } from '../helpers/direct-reads';
import { openConfig } from '../../store/config';
import { encodeShard, verifyShardBytes } from '../../src/shard';
import { FLAG_COMPRESSED, FLAG_ENCRYPTED } from '../../src/header';

const DIRS: Record<string, string> = {
  z3: 'replica:3,zstd',
  l3: 'replica:3,lz4',
  a3: 'replica:3,aes256gcm',
  zec: 'ec:4+2,zstd',
  lec: 'ec:4+2,lz4',
  aec: 'ec:4+2,aes256gcm',
  zaec: 'ec:4+2,zstd,aes256gcm',
  za3: 'replica:3,zstd,aes256gcm',
};
const TEXT_BYTES = 9 << 20; // three chunks, the last short
const NOISE_BYTES = 5 << 20;

const shared = sharedMount(test, 'transforms', { mkfs: ['--disks', '6', '--layout', 'replica:3,zstd'] });

test.serial.before(async () => {
  // Reference files: text that compresses (seq output), noise that does not.
  await shOk(
    `mkdir -p ${shared.dir}/ref && (seq 1 2000000 || true) | head -c ${TEXT_BYTES} > ${shared.dir}/ref/text && head -c ${NOISE_BYTES} /dev/urandom > ${shared.dir}/ref/noise`,
  );
});

interface Status {
  layoutsInUse: Array<{ layout: string; files: number }>;
  transformedChunks: Array<{ transforms: string; chunks: number; rawBytes: number; storedBytes: number }>;
  healQueueLength: number;
  counters: Record<string, number>;
}
async function status(): Promise<Status> {
  const r = await run(process.execPath, [CLI_JS, 'status', shared.dir + '/store', '--json'], { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`status failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Status;
}

/** O_DIRECT read through the mount compared with the reference (the kernel's pages are not what is tested). */
async function same(rel: string, ref: string): Promise<{ code: number | null; out: string }> {
  const r = await run(
    'bash',
    ['-c', 'dd if="$1" iflag=direct bs=1M status=none | cmp - "$2"', '-', path.join(shared.mount.mountpoint, rel), ref],
    { timeoutMs: 60_000 },
  );
  return { code: r.code, out: r.stdout + r.stderr };
}

test.serial(
  'round trips with each transform and both, on replica:3 and ec:4+2; getfattr and status show them',
  async (t) => {
    const mnt = shared.mount.mountpoint;
    for (const [d, layout] of Object.entries(DIRS)) {
      await shOk(
        `mkdir ${mnt}/${d} && setfattr -n user.chunkfs.layout -v ${layout} ${mnt}/${d} && cp ${shared.dir}/ref/text ${shared.dir}/ref/noise ${mnt}/${d}/`,
      );
    }
    await shOk(`cp ${shared.dir}/ref/text ${mnt}/default-text && sync`);
    const bad = await run('setfattr', ['-n', 'user.chunkfs.layout', '-v', 'ec:4+2,aes256gcm,zstd', `${mnt}/z3`], {
      timeoutMs: 10_000,
    });
    t.not(bad.code, 0, 'a transform order that does not parse is refused');
    for (const [d, layout] of Object.entries(DIRS)) {
      t.is((await shOk(`getfattr --only-values -n user.chunkfs.layout ${mnt}/${d}/text`)).trim(), layout);
      for (const f of ['text', 'noise']) {
        const r = await same(`${d}/${f}`, `${shared.dir}/ref/${f}`);
        t.is(r.code, 0, `${d}/${f}: ${r.out}`);
      }
    }
    t.is(
      (await shOk(`getfattr --only-values -n user.chunkfs.layout ${mnt}/default-text`)).trim(),
      'replica:3,zstd',
      'the mkfs default',
    );
    await shared.remount(); // fresh caches: the reads below decode from the shards
    for (const d of Object.keys(DIRS))
      t.is((await same(`${d}/text`, `${shared.dir}/ref/text`)).code, 0, `${d}/text after remount`);
    const s = await status();
    for (const layout of Object.values(DIRS)) {
      const files = layout === 'replica:3,zstd' ? 3 : 2; // and default-text, under the mkfs default
      t.truthy(
        s.layoutsInUse.find((l) => l.layout === layout && l.files === files),
        `${layout} in ${JSON.stringify(s.layoutsInUse)}`,
      );
    }
    const by = new Map(s.transformedChunks.map((c) => [c.transforms, c]));
    // text: 3 chunks in each dir and the default file; noise: raw under compression only, encrypted under encryption.
    t.is(by.get('compressed')?.chunks, 3 * 5, JSON.stringify(s.transformedChunks)); // z3 l3 zec lec + default
    t.is(by.get('compressed+encrypted')?.chunks, 3 * 2, JSON.stringify(s.transformedChunks)); // zaec za3
    t.is(by.get('encrypted')?.chunks, 5 * 2 + 2 * 2, JSON.stringify(s.transformedChunks)); // a3 aec text+noise; zaec za3 noise
    t.true(by.get('compressed')!.rawBytes / by.get('compressed')!.storedBytes > 2, 'text compresses');
    const text = await run(process.execPath, [CLI_JS, 'status', shared.dir + '/store'], { timeoutMs: 30_000 });
    t.regex(text.stdout, /transformed chunks: compressed 15 chunks/);
  },
);

test.serial("partial overwrites of transformed chunks, fsync'd, read back before and after a remount", async (t) => {
  const mnt = shared.mount.mountpoint;
  for (const d of ['z3', 'zaec', 'a3']) {
    await shOk(`cp ${shared.dir}/ref/text ${shared.dir}/ref/text-${d}`);
    for (const [seek, count] of [
      [10, 3],
      [700, 1],
      [2100, 5],
    ]) {
      await shOk(
        `head -c ${count * 4096} /dev/urandom > ${shared.dir}/patch && dd if=${shared.dir}/patch of=${mnt}/${d}/text bs=4096 seek=${seek} conv=notrunc,fsync status=none && dd if=${shared.dir}/patch of=${shared.dir}/ref/text-${d} bs=4096 seek=${seek} conv=notrunc status=none`,
      );
    }
    const r = await same(`${d}/text`, `${shared.dir}/ref/text-${d}`);
    t.is(r.code, 0, `${d}: ${r.out}`);
  }
  await shared.remount();
  for (const d of ['z3', 'zaec', 'a3'])
    t.is((await same(`${d}/text`, `${shared.dir}/ref/text-${d}`)).code, 0, `${d} after remount`);
});

/** The live version's shard file (the chunk map names it; inspect lists the shards it finds). */
async function liveShard(rel: string, chunk: number, shard: number): Promise<string> {
  const r = await run(
    process.execPath,
    [CLI_JS, 'inspect', path.join(shared.mount.mountpoint, rel), '--chunk', String(chunk), '--json'],
    { timeoutMs: 30_000 },
  );
  if (r.code !== 0) throw new Error(`inspect failed: ${r.stderr}${r.stdout}`);
  const shards = (
    JSON.parse(r.stdout) as { shards: Array<{ path: string; header?: { shardIndex: number; version: string } }> }
  ).shards;
  const mine = shards.filter((s) => s.header?.shardIndex === shard);
  mine.sort((a, b) => Number(BigInt(b.header!.version) - BigInt(a.header!.version)));
  if (mine.length === 0) throw new Error(`no shard ${shard}: ${r.stdout}`);
  return mine[0].path;
}

test.serial(
  'a flipped stored byte of an encrypted chunk is caught by the hash, served around and healed',
  async (t) => {
    const file = await liveShard('zaec/noise', 0, 1);
    await shared.mount.stop();
    const fh = await fsp.open(file, 'r+');
    const { size } = await fh.stat();
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, size - 9000);
    b[0] ^= 0x5a;
    await fh.write(b, 0, 1, size - 9000);
    await fh.close();
    await shared.remount();
    const r = await same('zaec/noise', `${shared.dir}/ref/noise`);
    t.is(r.code, 0, r.out);
    const s = await status();
    t.true(s.counters.bitrot_errors >= 1, JSON.stringify(s.counters));
    t.is(s.counters.unrecoverable_reads, 0);
    const scrub = await run(process.execPath, [CLI_JS, 'scrub', shared.mount.mountpoint, '--repair'], {
      timeoutMs: 120_000,
    });
    t.regex(scrub.stdout, /0 unrecoverable/, scrub.stdout + scrub.stderr);
    const clean = await run(process.execPath, [CLI_JS, 'scrub', shared.mount.mountpoint], { timeoutMs: 120_000 });
    t.is(clean.code, 0, clean.stdout + clean.stderr);
    t.regex(clean.stdout, / 0 bad or missing/);
  },
);

interface Decode {
  ok: boolean;
  rawBytes: number | null;
  ratio: number | null;
  tagOk: boolean | null;
  error: string | null;
}
interface Inspected {
  code: number | null;
  text: string;
  shards: Array<{ path: string; ok: boolean; header: { shardIndex: number; version: string }; decoded: Decode | null }>;
  decodedVersions?: Array<{ version: string; decoded: Decode }>;
}
async function inspect(args: string[]): Promise<Inspected> {
  const j = await run(process.execPath, [CLI_JS, 'inspect', ...args, '--json'], { timeoutMs: 30_000 });
  const text = await run(process.execPath, [CLI_JS, 'inspect', ...args], { timeoutMs: 30_000 });
  return { code: j.code, text: text.stdout + text.stderr, ...JSON.parse(j.stdout) };
}

/** Shard file re-encoded with one payload byte flipped and fresh hashes: spec §9 passes, only the GCM tag can tell. */
async function forgeShard(file: string): Promise<void> {
  const { key } = openConfig(shared.dir + '/store');
  const { header, payload } = verifyShardBytes(await fsp.readFile(file), key);
  payload[payload.length >> 1] ^= 0x5a;
  const params = {
    ...header,
    compressed: (header.flags & FLAG_COMPRESSED) !== 0,
    encrypted: (header.flags & FLAG_ENCRYPTED) !== 0,
  };
  await fsp.writeFile(file, encodeShard(params, payload, key));
}

test.serial(
  'inspect decodes transformed chunks with the store key: tag, raw length and ratio, on replica and EC shards',
  async (t) => {
    const mnt = shared.mount.mountpoint;
    const a3 = await inspect([path.join(mnt, 'a3/noise')]);
    t.is(a3.code, 0, a3.text);
    t.is(a3.shards.length, 3);
    for (const s of a3.shards) t.like(s.decoded, { ok: true, tagOk: true, rawBytes: 4 << 20 }, JSON.stringify(s));
    t.regex(
      a3.text,
      /decoded: GCM tag ok \(cipher v2 \(256 segments of 16384 bytes\)\), 4\.0 MiB of content from 4\.0 MiB stored \(1\.00x\)/,
    );
    const za3 = await inspect([path.join(mnt, 'za3/text')]);
    t.is(za3.code, 0, za3.text);
    t.true(
      za3.shards.every((s) => s.decoded?.ok === true && s.decoded.tagOk === true && s.decoded.ratio! > 2),
      JSON.stringify(za3.shards.map((s) => s.decoded)),
    );
    // EC: a shard holds fragments; the version's payload is joined from the data shards and decoded.
    const zaec = await inspect([path.join(mnt, 'zaec/text'), '--chunk', '1']);
    t.is(zaec.code, 0, zaec.text);
    t.true(zaec.shards.every((s) => s.decoded === null));
    t.like(
      zaec.decodedVersions?.[0]?.decoded,
      { ok: true, tagOk: true, rawBytes: 4 << 20 },
      JSON.stringify(zaec.decodedVersions),
    );
    t.true(zaec.decodedVersions![0].decoded.ratio! > 2);
    t.regex(
      zaec.text,
      /version \d+ from its data shards: decoded: GCM tag ok \(cipher v2 \(\d+ segments of 16384 bytes\)\), 4\.0 MiB of content/,
    );
    // One shard file by its path, without the metadata: the compression named from the bytes.
    const z3 = await inspect([await liveShard('z3/text', 0, 2)]);
    t.is(z3.code, 0, z3.text);
    t.like(z3.shards[0].decoded, { ok: true, tagOk: null, rawBytes: 4 << 20 });
  },
);

test.serial(
  'a shard whose hashes pass but whose GCM tag fails: inspect and scrub report it, scrub queues it, reads fail over, --repair mends it',
  async (t) => {
    const replica = await liveShard('a3/noise', 0, 0); // the replica a read tries first
    const ec = await liveShard('aec/noise', 0, 2);
    await shared.mount.stop();
    await forgeShard(replica);
    await forgeShard(ec);
    await shared.remount();
    const mnt = shared.mount.mountpoint;
    const a3 = await inspect([path.join(mnt, 'a3/noise')]);
    t.is(a3.code, 1, a3.text);
    const forged = a3.shards.find((s) => s.path === replica)!;
    t.false(forged.ok);
    t.like(forged.decoded, { ok: false, tagOk: false });
    t.true(a3.shards.filter((s) => s.path !== replica).every((s) => s.ok && s.decoded?.tagOk === true));
    t.regex(a3.text, /GCM TAG FAILS: aes256gcm: authentication tag mismatch/);
    const aec = await inspect([path.join(mnt, 'aec/noise')]);
    t.is(aec.code, 1, aec.text);
    t.like(aec.decodedVersions?.[0]?.decoded, { ok: false, tagOk: false });

    // Offline, so the mount's background healer cannot mend them before the queue is looked at.
    await shared.mount.stop();
    const found = await run(process.execPath, [CLI_JS, 'scrub', shared.dir + '/store', '--json'], {
      timeoutMs: 120_000,
    });
    t.is(found.code, 1, found.stdout + found.stderr);
    const r = JSON.parse(found.stdout) as {
      badFound: number;
      bad: Array<{ path: string; chunkIndex: number; shardIndex: number }>;
    };
    t.is(r.badFound, 2, found.stdout);
    t.deepEqual(r.bad.map((b) => `${b.path} ${b.chunkIndex} ${b.shardIndex}`).sort(), [
      '/a3/noise 0 0',
      '/aec/noise 0 2',
    ]);
    t.is((await status()).healQueueLength, 2, 'queued for heal like other damage');
    await shared.remount();
    // A read meeting the forged replica fails over to one whose tag checks (or finds it healed already).
    t.is((await same('a3/noise', `${shared.dir}/ref/noise`)).code, 0);
    const fixed = await run(process.execPath, [CLI_JS, 'scrub', mnt, '--repair'], { timeoutMs: 120_000 });
    t.regex(fixed.stdout, / 0 unrecoverable/, fixed.stdout + fixed.stderr);
    const clean = await run(process.execPath, [CLI_JS, 'scrub', mnt], { timeoutMs: 120_000 });
    t.is(clean.code, 0, clean.stdout + clean.stderr);
    t.regex(clean.stdout, / 0 bad or missing/);
    await shared.remount(); // fresh decoded cache: the reads below decode the mended shards
    for (const d of ['a3', 'aec']) t.is((await same(`${d}/noise`, `${shared.dir}/ref/noise`)).code, 0, d);
    t.is((await inspect([path.join(mnt, 'a3/noise')])).code, 0);
  },
);

test.serial(
  'an EC chunk whose shard passes its hashes but fails the GCM tag: reads rebuild it leaving out one shard at a time, serve it, count a failover and queue the shard for heal',
  async (t) => {
    const SEGMENT = 16384;
    // aec/text chunk 1 (read by segments: 4 KiB reads more than 256 KiB apart are random reads) and
    // aec/noise chunk 1 (decoded whole: a sequential read, its chunk 1 decoded ahead).
    const segmentCase = await liveShard('aec/text', 1, 1);
    const wholeCase = await liveShard('aec/noise', 1, 3);
    await shared.mount.stop();
    await forgeShard(segmentCase);
    await forgeShard(wholeCase);
    await shared.remount();
    const before = (await status()).counters;
    const reads: Array<[number, number]> = [];
    for (let j = 0; j < 32; j++) for (let i = 0; i < 8; i++) reads.push([(4 << 20) + (i * 32 + j) * SEGMENT, 4096]);
    t.deepEqual(
      await directReadMismatches(path.join(shared.mount.mountpoint, 'aec/text'), `${shared.dir}/ref/text`, reads),
      [],
      'every segment of the forged chunk read back right',
    );
    const mid = (await status()).counters;
    t.true(mid.failovers > before.failovers, `segment reads failed over: ${JSON.stringify(mid)}`);
    // Counted as a bad shard (a tag failure is a FormatError: header_mismatches) in the transaction that queues its heal.
    t.true(mid.header_mismatches > before.header_mismatches, JSON.stringify(mid));
    t.is((await same('aec/noise', `${shared.dir}/ref/noise`)).code, 0, 'the sequential read of the other forged chunk');
    const after = (await status()).counters;
    t.true(after.failovers > mid.failovers, `the whole decode failed over: ${JSON.stringify(after)}`);
    t.true(after.header_mismatches > mid.header_mismatches, JSON.stringify(after));
    t.is(after.unrecoverable_reads, 0);
    // Queued for heal where the read saw it: mended by the mount's healer or by scrub --repair.
    const fixed = await run(process.execPath, [CLI_JS, 'scrub', shared.mount.mountpoint, '--repair'], {
      timeoutMs: 120_000,
    });
    t.regex(fixed.stdout, / 0 unrecoverable/, fixed.stdout + fixed.stderr);
    const clean = await run(process.execPath, [CLI_JS, 'scrub', shared.mount.mountpoint], { timeoutMs: 120_000 });
    t.is(clean.code, 0, clean.stdout + clean.stderr);
    t.regex(clean.stdout, / 0 bad or missing/);
    await shared.remount();
    for (const d of ['text', 'noise'])
      t.is((await same(`aec/${d}`, `${shared.dir}/ref/${d}`)).code, 0, `aec/${d} after heal`);
  },
);

test.serial('a wrong or missing store key is refused at mount, with nothing changed', async (t) => {
  await shared.mount.stop();
  const store = shared.dir + '/store';
  const before = await fsp.readFile(store + '/meta.db');
  await fsp.writeFile(shared.dir + '/wrong.key', Buffer.alloc(32, 9), { mode: 0o600 });
  const wrong = await run(
    process.execPath,
    [CLI_JS, 'mount', store, shared.dir + '/mnt', ...transportArgs(), '-o', `keyfile=${shared.dir}/wrong.key`],
    { timeoutMs: 60_000 },
  );
  t.not(wrong.code, 0);
  t.regex(wrong.stderr, /wrong\.key is not the key of store/);
  await fsp.rename(store + '/data.key', shared.dir + '/data.key.away');
  const missing = await run(process.execPath, [CLI_JS, 'mount', store, shared.dir + '/mnt', ...transportArgs()], {
    timeoutMs: 60_000,
  });
  t.not(missing.code, 0);
  t.regex(missing.stderr, /store key file .*data\.key does not exist/);
  t.true((await fsp.readFile(store + '/meta.db')).equals(before), 'meta.db untouched');
  // The key given at mount time works from anywhere.
  await shared.remount(['-o', `keyfile=${shared.dir}/data.key.away`]);
  t.is((await same('zaec/text', `${shared.dir}/ref/text-zaec`)).code, 0);
});
