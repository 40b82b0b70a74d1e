// The tools on small files packed as needles (DESIGN §5 "Small files", §7): inject damages the container chunk
// that holds a file's needle and says so; the read is served around it; inspect finds the needle
// through the metadata and lists the container chunk's needles, marking the file's; compact runs, and
// says so when its needle appends all fail (exit 1, the container and disks named, every file readable).
import test from 'ava';
import { sharedMount, CLI_JS, run, shOk, RunResult } from '../helpers/mount';

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

/** Small files written, then most removed: the open container is past the dead ratio and bound (compactor.ts). */
const CHURN_FILES = 100;
const CHURN_REMOVED = 70;
const CHURN_FILE_BYTES = 60 * 1024;
/** `chunkfs compact` runs until one meets the container (the mount's own compactor may hold it, busy, meanwhile). */
const COMPACT_TRIES_MAX = 5;

test.serial(
  'compact whose needle appends all fail (inject eio on every disk) exits 1 naming the container and disks; every file reads where it was',
  async (t) => {
    const mp = shared.mount.mountpoint;
    const sums = `${shared.dir}/churn.sum`;
    await shOk(
      `cd ${mp} && mkdir churn && for i in $(seq ${CHURN_FILES}); do head -c ${CHURN_FILE_BYTES} /dev/urandom > churn/f$i; done && ` +
        `sha256sum $(seq -f churn/f%g ${CHURN_REMOVED + 1} ${CHURN_FILES}) > ${sums} && sync`,
    );
    const disks = ((await json(['status', mp])).disks as Array<{ id: number }>).map((d) => d.id);
    let r: RunResult = { code: 0, signal: null, stdout: '', stderr: '' };
    try {
      // Faults first, dead bytes next: no compaction (the mount's own, every second) can move a needle.
      for (const d of disks) await json(['inject', 'eio', String(d), '--ops', 'write', mp]);
      await shOk(`cd ${mp} && rm $(seq -f churn/f%g 1 ${CHURN_REMOVED})`);
      for (let i = 0; i < COMPACT_TRIES_MAX && r.code === 0; i++) r = await cli(['compact', mp]);
    } finally {
      await json(['inject', '--clear', mp]);
    }
    t.is(r.code, 1, r.stdout + r.stderr);
    t.regex(
      r.stderr,
      new RegExp(
        '^chunkfs compact: compaction of container (\\d+): (\\d+) of \\2 live needles could not be appended to ' +
          'container \\d+ \\(EIO: only 0 of \\d+ required shards written to disks \\d+(, \\d+)* .*\\); ' +
          'they stay readable in container \\1, kept for a later round',
        'm',
      ),
    );
    t.regex(r.stdout, /, \d+ could not be moved; containers now: /);
    await shOk(`cd ${mp} && sha256sum -c --quiet ${sums}`);
    const again = await cli(['compact', mp]);
    t.is(again.code, 0, again.stderr);
    await shOk(`cd ${mp} && sha256sum -c --quiet ${sums}`);
  },
);
