// kill -9 of a mount whose write-back buffer holds part of a chunk (DESIGN §5 prefix rule):
// a writer stores the first part of a chunk (fsync, as the flush timer would), then streams on without
// fsync until whole chunks after that one are stored; the mount is killed, remounted, and the file
// must be a prefix of what was written: no zeros inside its size where data was written, and growing
// it reads zeros. chunkfs status and scrub open the store first, as the killed mount left it. Before the rule, the rest of that chunk stayed in memory while later chunks raised
// the committed size past it (2 MiB of zeros here). Both layouts.
import test from 'ava';
import * as path from 'node:path';
import { spawn, ChildProcess } from 'node:child_process';
import { storeFixture, CLI_JS, shOk, run, PYTHON } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';
import { untilCommitted } from '../helpers/committed-size';

const WRITER = path.join(REPO_ROOT, 'test', 'helpers', 'paced-writer.py');
const MIB = 1 << 20;
/** fsync'd: a chunk and a half (4 MiB chunks), so the second chunk is half stored. */
const FIRST_BYTES = 6 * MIB;
/**
 * The rest stays under the 64 MiB buffer with its 16 MiB flush lane (no memory-pressure flush of
 * everything) but over 0.85 of the 48 MiB left (whole chunks stream out: fs/write-buffer.ts).
 */
const TOTAL_BYTES = 48 * MIB;
/** Whole chunks after the half-stored one are committed once the size reaches this. */
const STREAMED_BYTES = 16 * MIB;
const MOUNT_OPTIONS = ['-o', 'buffer_mb=64,flush_ms=3600000']; // no timer flush during the test

const writers = new Set<ChildProcess>();
const fixture = storeFixture(test, 'wbcrash', {
  beforeStop: () => {
    for (const w of writers) w.kill('SIGKILL');
  },
});

/** Start the writer; resolves once it has written everything (it then holds the file open). */
function startWriter(file: string, seed: number): Promise<ChildProcess> {
  const child = spawn(PYTHON, [WRITER, file, String(seed), String(FIRST_BYTES), String(TOTAL_BYTES)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  writers.add(child);
  child.on('exit', () => writers.delete(child));
  let err = '';
  child.stderr.on('data', (b: Buffer) => {
    err += b.toString();
  });
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      if (b.toString().includes('written')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`writer exited (${code}) before writing: ${err}`)));
  });
}

/** After the remount: size, MiB inside it that differ from what was written, and whether growing it reads zeros. */
async function check(
  file: string,
  seed: number,
): Promise<{ size: number; differingMiB: number[]; grownZeros: boolean }> {
  const r = await run(
    PYTHON,
    [
      '-c',
      `
import json, os, random, sys
path, seed, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
want = random.Random(seed).randbytes(total)
got = open(path, 'rb').read()
bad = [i for i in range(0, len(got), 1 << 20) if got[i:i + (1 << 20)] != want[i:i + len(got[i:i + (1 << 20)])]]
size = len(got)
os.truncate(path, total + (8 << 20))
grown = open(path, 'rb').read()[size:]
print(json.dumps({'size': size, 'differingMiB': [b >> 20 for b in bad], 'grownZeros': grown.count(0) == len(grown)}))
`,
      file,
      String(seed),
      String(TOTAL_BYTES),
    ],
    { timeoutMs: 120_000 },
  );
  if (r.code !== 0) throw new Error(`check failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

for (const [layout, names, seed] of [
  ['replica:3', ['r3.bin'], 1],
  ['ec:4+2', ['ec', 'ec.bin'], 2],
] as Array<[string, string[], number]>) {
  test.serial(
    `kill -9 while a chunk is half stored and later ones stream: the file is a prefix (${layout})`,
    async (t) => {
      const store = fixture.store;
      let m = await fixture.mount(MOUNT_OPTIONS);
      if (names.length > 1)
        await shOk(`mkdir -p ${m.mountpoint}/ec && setfattr -n user.chunkfs.layout -v ec:4+2 ${m.mountpoint}/ec`);
      const file = path.join(m.mountpoint, ...names);
      const writer = await startWriter(file, seed);
      const before = await untilCommitted(store, names, STREAMED_BYTES);
      await m.kill9();
      writer.kill('SIGKILL');
      t.true(
        before !== null && before >= STREAMED_BYTES,
        `whole chunks after the half-stored one were committed (size ${before})`,
      );
      // Every tool opens the metadata the killed mount left (WAL and -shm) before anything else does.
      for (const args of [
        ['status', store],
        ['scrub', store],
      ]) {
        const r = await run(process.execPath, [CLI_JS, ...args], { timeoutMs: 120_000 });
        t.is(r.code, 0, `chunkfs ${args[0]} after kill -9: ${r.stderr}`);
      }

      m = await fixture.mount(MOUNT_OPTIONS); // on the stale mount point: the CLI recovers it
      const after = await check(path.join(m.mountpoint, ...names), seed);
      await m.stop();
      t.true(
        after.size >= FIRST_BYTES && after.size <= TOTAL_BYTES,
        `size ${after.size}: the fsync'd part is there, nothing past what was written`,
      );
      t.deepEqual(after.differingMiB, [], `size ${after.size}: MiB that differ from what was written`);
      t.true(after.grownZeros, 'growing the file after the crash reads zeros');
    },
  );
}
