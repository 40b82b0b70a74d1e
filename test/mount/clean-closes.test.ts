// Closes of a new file nothing was written to are answered without JavaScript on the libfuse3
// transport (DESIGN §6, native/fuse3/clean_closes.h); a close after anything that may give the file
// bytes (a write, a truncate, another open) still reaches JavaScript, which stores and reports. The
// FLUSH requests JavaScript answered are counted by the metrics. fuse-native answers every close in
// JavaScript.
import test from 'ava';
import * as path from 'node:path';
import { ClientOp, TRANSPORT, fsClient, fsOk, run, sharedMount } from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
const shared = sharedMount(test, 'clean-closes', { mountArgs: ['-o', 'metrics=127.0.0.1:0'] });
const FILES = 40;

async function change(ops: ClientOp[]): Promise<void> {
  const results = await fsClient(ops);
  for (const [i, r] of results.entries()) if (r.err !== undefined) throw new Error(`${String(ops[i][0])}: ${r.err}`);
}

/** FLUSH requests JavaScript answered so far. */
async function flushesInJs(): Promise<number> {
  const port = Number(/metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(shared.mount.readyLine)![1]);
  const r = await run('curl', ['-s', `http://127.0.0.1:${port}/metrics`]);
  const m = /chunkfs_fuse_op_duration_seconds_count\{op="flush"\} (\d+)/.exec(r.stdout);
  return m === null ? 0 : Number(m[1]);
}

/** Runs one client's ops per file and returns the FLUSHes JavaScript answered meanwhile. */
async function flushesDuring(opsOf: (p: string, i: number) => ClientOp[], dir: string): Promise<number> {
  await change([['mkdir', shared.path(dir)]]);
  const before = await flushesInJs();
  const ops: ClientOp[] = [];
  for (let i = 0; i < FILES; i++) ops.push(...opsOf(shared.path(`${dir}/f${i}`), i));
  await change(ops);
  return (await flushesInJs()) - before;
}

const made = (p: string, i: number): ClientOp[] => [
  ['open', `c${i}`, p, ['wronly', 'creat', 'excl']],
  ['close', `c${i}`],
];

test.serial('the close of a new file nothing was written to needs no JavaScript', async (t) => {
  const n = await flushesDuring(made, 'empty');
  if (FUSE3) t.true(n < FILES / 4, `${n} of ${FILES} closes reached JavaScript`);
  else t.true(n >= FILES, `fuse-native: ${n} of ${FILES}`);
  for (let i = 0; i < FILES; i += 13) t.is((await fsOk(['stat', shared.path(`empty/f${i}`)])).size, 0);
});

test.serial('a close after a write, a truncate or another open reaches JavaScript and keeps the bytes', async (t) => {
  const written = await flushesDuring(
    (p, i) => [
      ['open', `w${i}`, p, ['wronly', 'creat', 'excl']],
      ['write', `w${i}`, `bytes of ${i}`],
      ['close', `w${i}`],
    ],
    'written',
  );
  t.true(written >= FILES, `every close after a write: ${written} of ${FILES}`);
  const truncated = await flushesDuring(
    (p, i) => [
      ['open', `t${i}`, p, ['rdwr', 'creat', 'excl']],
      ['ftruncate', `t${i}`, 1000 + i],
      ['close', `t${i}`],
    ],
    'truncated',
  );
  t.true(truncated >= FILES, `every close after a truncate: ${truncated} of ${FILES}`);
  // Another descriptor of the new file writes and closes first; the creator's close comes last.
  const shared2 = await flushesDuring(
    (p, i) => [
      ['open', `a${i}`, p, ['wronly', 'creat', 'excl']],
      ['open', `b${i}`, p, ['wronly']],
      ['write', `b${i}`, `other ${i}`],
      ['close', `b${i}`],
      ['close', `a${i}`],
    ],
    'two',
  );
  t.true(shared2 >= 2 * FILES, `both closes of each file: ${shared2} of ${2 * FILES}`);
  for (let i = 0; i < FILES; i += 7) {
    t.is(await fsOk(['readtext', shared.path(`written/f${i}`)]), `bytes of ${i}`);
    t.is((await fsOk(['stat', shared.path(`truncated/f${i}`)])).size, 1000 + i);
    t.is(await fsOk(['readtext', path.join(shared.mount.mountpoint, `two/f${i}`)]), `other ${i}`);
  }
});
