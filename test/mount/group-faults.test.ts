// Transaction groups on a live mount (DESIGN §5, the default) meet a disk that goes offline before
// the group holding a file's chunks closes: the write quorum decides. One disk gone costs no byte
// (its shards go to the heal queue); a chunk that loses its quorum ends the file before it (a
// prefix) and the file's next fsync reports EIO, once. The group stays open until the fault is in:
// the store's group interval is set far beyond the test (defaults.groupIntervalMs).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { storeFixture, CLI_JS, PYTHON, run, shOk } from '../helpers/mount';
import { SYNCFS_FILES_MIN } from '../../store/chunks/tx-group';

const fixture = storeFixture(test, 'group-faults'); // replica:3 on 6 disks
const MB = 1 << 20;
/** Longer than the test: only fsync closes the group. */
const GROUP_INTERVAL_TEST_MS = 3_600_000;

async function chunkfs(args: string[]): Promise<string> {
  const r = await run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`chunkfs ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}
const status = async (mnt: string): Promise<any> => JSON.parse(await chunkfs(['status', mnt, '--json']));

/** fsync of the file through the mount: '' or the error's name (EIO). */
async function fsyncOf(file: string): Promise<string> {
  const py = `import os,sys\nfd=os.open(sys.argv[1], os.O_RDONLY)\ntry:\n os.fsync(fd)\nexcept OSError as e:\n print(os.strerror(e.errno)); sys.exit(0)\nfinally:\n os.close(fd)`;
  const r = await run(PYTHON, ['-c', py, file]);
  if (r.code !== 0) throw new Error(`fsync of ${file}: ${r.stderr}`);
  return r.stdout.trim();
}

/** The disks (ids) holding a shard file of chunk c of the file (its shards are written, maybe not flushed). */
function disksOfChunk(store: string, file: string, c: number): number[] {
  const disks = path.join(store, 'disks');
  const version = `${fs.statSync(file).ino.toString(16).padStart(16, '0')}.v`;
  const found = fs
    .readdirSync(disks)
    .filter((d) =>
      (fs.readdirSync(path.join(disks, d), { recursive: true }) as string[]).some((p) => {
        const parts = p.split(path.sep);
        return parts.length >= 3 && parts.at(-3)!.startsWith(version) && parts.at(-2) === `c${c}`;
      }),
    )
    .map((d) => Number(d.slice(1)));
  if (found.length === 0) throw new Error(`no shard of chunk ${c} of ${file} under ${disks}`);
  return found;
}

test.serial.before(() => {
  const file = path.join(fixture.store, 'chunkfs.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8'));
  config.defaults.groupIntervalMs = GROUP_INTERVAL_TEST_MS;
  config.defaults.groupDirtyBytesMax = 1 << 30; // no close at the bound for these few chunks
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
});

test.serial('a disk offline before the group closes: the file keeps every byte, its shards go to heal', async (t) => {
  const m = await fixture.mount();
  const ref = path.join(fixture.dir, 'ref');
  const f = path.join(m.mountpoint, 'f');
  await shOk(`head -c ${8 * MB - 4321} /dev/urandom > ${ref} && cp ${ref} ${f}`);
  const closed = (await status(m.mountpoint)).groupsClosed;
  const disk = disksOfChunk(fixture.store, f, 0)[0];
  await chunkfs(['inject', 'offline', String(disk), m.mountpoint]);
  t.is((await status(m.mountpoint)).groupsClosed, closed, 'the group was still open when the disk went');
  t.is(await fsyncOf(f), '', 'fsync succeeds: every chunk kept its write quorum');
  t.true((await status(m.mountpoint)).healQueueLength >= 1, 'the shards on the offline disk are queued for heal');
  await chunkfs(['inject', 'online', String(disk), m.mountpoint]);
  await shOk(`dd if=${f} iflag=nocache count=0 status=none && cmp ${ref} ${f}`);
  await m.stop();
  const again = await fixture.mount();
  try {
    await shOk(`cmp ${ref} ${path.join(again.mountpoint, 'f')}`); // committed: there after remount
    t.pass();
  } finally {
    await again.stop();
  }
});

test.serial('a chunk that loses its quorum: the file stays a prefix, its next fsync reports EIO once', async (t) => {
  const m = await fixture.mount();
  const g = path.join(m.mountpoint, 'g');
  fs.rmSync(path.join(m.mountpoint, 'f'));
  await shOk(`head -c ${8 * MB} /dev/urandom > ${g}`);
  const lost = disksOfChunk(fixture.store, g, 0).slice(0, 2);
  const closed = (await status(m.mountpoint)).groupsClosed;
  for (const d of lost) await chunkfs(['inject', 'offline', String(d), m.mountpoint]);
  t.is((await status(m.mountpoint)).groupsClosed, closed, 'the group was still open when the disks went');
  t.is(await fsyncOf(g), 'Input/output error', "fsync reports what the group's close could not keep");
  t.is(await fsyncOf(g), '', 'once');
  for (const d of lost) await chunkfs(['inject', 'online', String(d), m.mountpoint]);
  await m.stop();
  const again = await fixture.mount();
  try {
    t.is(fs.statSync(path.join(again.mountpoint, 'g')).size, 0, 'the size stops before chunk 0 (prefix rule)');
  } finally {
    await again.stop();
  }
});

test.serial(
  'a disk failing writes before a group of one syncfs closes: the file keeps every byte, its shards go to heal',
  async (t) => {
    const chunks = 10; // 30 shard files on the fixture's one file system: flushed by one syncfs (DESIGN §5)
    t.true(3 * chunks >= SYNCFS_FILES_MIN);
    const m = await fixture.mount();
    const ref = path.join(fixture.dir, 'ref-whole');
    const h = path.join(m.mountpoint, 'h');
    await shOk(`head -c ${chunks * 4 * MB} /dev/urandom > ${ref} && cp ${ref} ${h}`);
    const before = await status(m.mountpoint);
    const disk = disksOfChunk(fixture.store, h, 0)[0];
    await chunkfs(['inject', 'eio', String(disk), '--ops', 'write', m.mountpoint]); // its stat still answers
    t.is(
      (await status(m.mountpoint)).groupsClosed,
      before.groupsClosed,
      'the group was still open when the fault came',
    );
    t.is(await fsyncOf(h), '', 'fsync succeeds: every chunk kept its write quorum');
    t.true(
      (await status(m.mountpoint)).healQueueLength > before.healQueueLength,
      'the shards on the failing disk are queued for heal, although one syncfs would have flushed them',
    );
    await chunkfs(['inject', '--clear', m.mountpoint]);
    await m.stop();
    const again = await fixture.mount();
    try {
      await shOk(`cmp ${ref} ${path.join(again.mountpoint, 'h')}`); // committed: there after remount
      t.pass();
    } finally {
      await again.stop();
    }
  },
);
