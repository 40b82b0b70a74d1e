// The tools on small files packed as needles (issues 9 and 11): inject damages the container chunk
// that holds a file's needle and says so; the read is served around it; inspect finds the needle
// through the metadata and lists the container chunk's needles, marking the file's; compact runs.
import test from 'ava';
import { sharedMount, CLI_JS, run, shOk } from '../helpers/mount';

const shared = sharedMount(test, 'small-tools'); // packing on: files up to 64 KiB become needles
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 });

async function json(args: string[]): Promise<any> {
  const r = await cli([...args, '--json']);
  if (r.code !== 0 && !args.includes('inspect')) throw new Error(`chunkfs ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

test.serial.before(async () => {
  await shOk(`cd ${shared.dir}/mnt && for i in 1 2 3 4 5; do echo "small file $i" > s$i; done && sync`);
});

test.serial(
  'inject on a packed file damages its container chunk; the read is right; inspect marks its needle',
  async (t) => {
    const ino = Number((await shOk(`stat -c %i ${shared.dir}/mnt/s3`)).trim());
    const before = (await json(['status', shared.mount.mountpoint])).counters;
    const r = await json(['inject', 'corrupt', `${shared.dir}/mnt/s3`]);
    t.regex(
      r.message,
      new RegExp(
        `of container (\\d+) chunk 0 on disk \\d+, which holds the needle of the small file /s3 \\(file ${ino}\\)`,
      ),
    );
    t.is(r.damage.needle.containerIno, r.damage.ino);
    t.is((await shOk(`cat ${shared.dir}/mnt/s3`)).trim(), 'small file 3');
    const after = (await json(['status', shared.mount.mountpoint])).counters;
    t.true(after.bitrot_errors > before.bitrot_errors);
    t.true(after.failovers > before.failovers);

    const i = await json(['inspect', `${shared.dir}/mnt/s3`]);
    t.deepEqual(i.needle, {
      containerIno: r.damage.ino,
      chunkIndex: 0,
      offsetBytes: r.damage.needle.offsetBytes,
      lengthBytes: 13,
    });
    t.is(i.shards.length, 3);
    for (const s of i.shards) {
      const mine = s.needles.listed.find((n: any) => n.containerOffsetBytes === i.needle.offsetBytes);
      t.is(mine.fileId, String(ino));
      t.is(mine.dataLenBytes, 13);
      t.true(s.needles.count >= 5);
    }
    const text = await cli(['inspect', `${shared.dir}/mnt/s3`]);
    t.regex(
      text.stdout,
      new RegExp(
        `^/s3 \\(file ${ino}\\) is a small file packed as a needle of 13 bytes in container ${r.damage.ino} at offset \\d+ \\(chunk 0\\)`,
      ),
    );
    t.regex(
      text.stdout,
      new RegExp(`at ${i.needle.offsetBytes}: file ${ino}, 13 bytes, cookie \\d+, crc (ok|BAD)   <- this file`),
    );

    const drop = await json(['inject', 'drop', `${shared.dir}/mnt/s4`]);
    t.regex(drop.message, /every needle in that chunk loses this copy/);
    t.is((await shOk(`cat ${shared.dir}/mnt/s4`)).trim(), 'small file 4');
    const bad = await cli(['inject', 'corrupt', `${shared.dir}/mnt/s5`, '--chunk', '1']);
    t.regex(bad.stderr, /is packed as a needle \(13 bytes\): it has only chunk 0/);
  },
);

test.serial('compact: seals and compacts now, and reports the containers', async (t) => {
  await shOk(`rm ${shared.dir}/mnt/s1 ${shared.dir}/mnt/s2`);
  const r = await json(['compact', shared.mount.mountpoint]);
  t.true(r.online);
  t.deepEqual(r.errors, []);
  t.is(r.containers.open, 1);
  t.true(r.containers.deadBytes > 0, 'the removed files are dead bytes');
  t.regex(
    (await cli(['compact', shared.mount.mountpoint])).stdout,
    /containers now: 1 open, 0 full, 0 sealed, .* live, .* dead, 0 due for compaction/,
  );
});
