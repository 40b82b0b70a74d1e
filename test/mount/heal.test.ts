// Self-healing through the mount: with files on replica:3 and ec:4+2, flip bits in and delete shard
// files on the disks while mounted. Reads through the mount return the original bytes, `chunkfs status`
// (run while mounted) shows the events, and the mount's healer puts right what reads found and a scrub the rest — proven by
// then destroying the OTHER shards, so that only the healed ones can serve the data.
import test from 'ava';
import * as path from 'node:path';
import { promises as fsp } from 'node:fs';
import { storeFixture, healDrained, run, shOk, CLI_JS } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';

const STORE_JS = path.join(REPO_ROOT, 'dist', 'store', 'store.js');

const FILE_BYTES = 10 << 20; // 3 chunks of 4 MiB (the last one short)

const fixture = storeFixture(test, 'heal');

interface Status {
  healQueueLength: number;
  counters: Record<string, number>;
}
async function status(): Promise<Status> {
  const r = await run(process.execPath, [CLI_JS, 'status', fixture.store, '--json'], { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`status failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Status;
}

async function waitHealed(): Promise<Status> {
  await healDrained(fixture.store);
  return status();
}

/** Shard file of (file, chunk, shard) on whichever disk holds it (spec §7 paths). */
async function shardFile(ino: number, chunk: number, shard: number): Promise<string> {
  const fileId = ino.toString(16).padStart(16, '0');
  const out = await shOk(`find ${fixture.store} -path '*/${fileId}.v*/c${chunk}/${shard}.shard' -type f`);
  const files = out
    .trim()
    .split('\n')
    .filter((l) => l.length > 0);
  if (files.length !== 1) throw new Error(`expected one shard file for ${fileId} c${chunk} s${shard}, found: ${out}`);
  return files[0];
}

async function flipByte(file: string, fromEndBytes: number): Promise<void> {
  const fh = await fsp.open(file, 'r+');
  try {
    const { size } = await fh.stat();
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, size - fromEndBytes);
    b[0] ^= 0x5a;
    await fh.write(b, 0, 1, size - fromEndBytes);
  } finally {
    await fh.close();
  }
}

/** Reads with O_DIRECT: the kernel may keep the pages it wrote (keep_cache), and these reads must reach the store. */
async function sameAsReference(t: { is: (a: unknown, b: unknown, m?: string) => void }, rel: string): Promise<void> {
  const r = await run(
    'bash',
    [
      '-c',
      `dd if="$1" iflag=direct bs=1M status=none | cmp - "$2"`,
      '-',
      path.join(fixture.mountpoint, rel),
      path.join(fixture.dir, 'ref', rel),
    ],
    { timeoutMs: 60_000 },
  );
  t.is(r.code, 0, `cmp ${rel}: ${r.stdout}${r.stderr}`);
}

test.serial('bit flips and lost shards are served around, reported, and healed', async (t) => {
  await shOk(
    `mkdir -p ${fixture.dir}/ref/ec && head -c ${FILE_BYTES} /dev/urandom > ${fixture.dir}/ref/r3.bin && head -c ${FILE_BYTES} /dev/urandom > ${fixture.dir}/ref/ec/ec.bin`,
  );
  let m = await fixture.mount();
  await shOk(`mkdir ${m.mountpoint}/ec && setfattr -n user.chunkfs.layout -v ec:4+2 ${m.mountpoint}/ec`);
  await shOk(
    `cp ${fixture.dir}/ref/r3.bin ${m.mountpoint}/r3.bin && cp ${fixture.dir}/ref/ec/ec.bin ${m.mountpoint}/ec/ec.bin && sync`,
  );
  t.is((await shOk(`getfattr --only-values -n user.chunkfs.layout ${m.mountpoint}/ec/ec.bin`)).trim(), 'ec:4+2');
  const r3 = Number((await shOk(`stat -c %i ${m.mountpoint}/r3.bin`)).trim());
  const ec = Number((await shOk(`stat -c %i ${m.mountpoint}/ec/ec.bin`)).trim());

  // Damage while mounted: a flipped byte in one replica / one data shard, a deleted shard elsewhere.
  await flipByte(await shardFile(r3, 0, 0), 5000);
  await fsp.unlink(await shardFile(r3, 1, 1));
  await flipByte(await shardFile(ec, 0, 0), 5000);
  await fsp.unlink(await shardFile(ec, 1, 2));
  await sameAsReference(t, 'r3.bin');
  await sameAsReference(t, 'ec/ec.bin');
  const seen = await status();
  t.true(seen.counters.bitrot_errors >= 2, JSON.stringify(seen.counters));
  t.true(seen.counters.failovers + seen.counters.reconstructions >= 2, JSON.stringify(seen.counters));
  t.is(seen.counters.unrecoverable_reads, 0);
  t.true((await waitHealed()).healQueueLength === 0, 'heal queue drained while mounted');

  // Reads only touch what they need: a lost second replica is found by a scrub, which repairs it.
  t.true((await status()).counters.heals >= 3);
  await m.stop();
  const scrub = await run(
    process.execPath,
    [
      '-e',
      `
    const { Store } = require(${JSON.stringify(STORE_JS)})
    Store.open(process.argv[1]).then(async (s) => { const r = await s.scrub({ repair: true }); await s.close(); console.log(JSON.stringify(r)) })
  `,
      fixture.store,
    ],
    { timeoutMs: 120_000 },
  );
  t.is(scrub.code, 0, scrub.stderr);
  const report = JSON.parse(scrub.stdout) as { healed: number; failed: unknown[] };
  t.true(report.healed >= 1, scrub.stdout);
  t.deepEqual(report.failed, []);

  // Proof: destroy the shards that were NOT damaged; only the healed ones can serve the data now.
  for (const s of [1, 2]) await fsp.unlink(await shardFile(r3, 0, s));
  for (const s of [0, 2]) await fsp.unlink(await shardFile(r3, 1, s));
  for (const s of [1, 3]) await fsp.unlink(await shardFile(ec, 0, s)); // needs healed 0 with 2, 4, 5
  for (const s of [0, 1]) await fsp.unlink(await shardFile(ec, 1, s)); // needs healed 2 with 3, 4, 5
  m = await fixture.mount();
  await sameAsReference(t, 'r3.bin');
  await sameAsReference(t, 'ec/ec.bin');
  t.is((await status()).counters.unrecoverable_reads, 0);
});
