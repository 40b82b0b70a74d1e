// Reed-Solomon benchmark (DESIGN.md §8): 4+2 encode and
// reconstruction of 1 and of 2 lost data shards on 256 KiB shards, for our SIMD
// codec, @ronomon/reed-solomon (a Cauchy code: the speed bar only) and our
// pure-TS reference, interleaved in one run. GB/s counts the stripe's data
// bytes (k x shard) per operation. Run: npm run bench:rs
import * as crypto from 'node:crypto';
import { rsCodec, rsDetectedSimdLevel, setRsSimdLevel } from '../../src/rs';
import { rsReferenceCodec } from '../../src/rs-reference';

const K = 4;
const M = 2;
const SHARD_BYTES = 256 * 1024;
const DATA_BYTES = K * SHARD_BYTES;
const TRIALS = 5;
const TRIAL_SECONDS_MIN = 0.25;
const ITERATIONS_MAX = 100_000;

interface Ronomon {
  create(k: number, m: number): unknown;
  encode(
    context: unknown,
    sources: number,
    targets: number,
    buffer: Buffer,
    bufferOffset: number,
    bufferSize: number,
    parity: Buffer,
    parityOffset: number,
    paritySize: number,
    callback: (error?: Error) => void,
  ): void;
}
// eslint-disable-next-line @typescript-eslint/no-var-requires
const ronomon = require('@ronomon/reed-solomon') as Ronomon;

/** One call runs `count` operations back to back (async ones chained by callback). */
type Op = (count: number) => void | Promise<void>;
const syncOp =
  (fn: () => void): Op =>
  (count) => {
    for (let i = 0; i < count; i++) fn();
  };
const BATCH_OPS = 8;

/** Runs op until TRIAL_SECONDS_MIN has passed; returns GB/s of data bytes. */
async function trial(op: Op): Promise<number> {
  let iterations = 0;
  const start = process.hrtime.bigint();
  let elapsedSeconds = 0;
  while (elapsedSeconds < TRIAL_SECONDS_MIN && iterations < ITERATIONS_MAX) {
    await op(BATCH_OPS);
    iterations += BATCH_OPS;
    elapsedSeconds = Number(process.hrtime.bigint() - start) / 1e9;
  }
  return (iterations * DATA_BYTES) / elapsedSeconds / 1e9;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Interleaves the contenders trial by trial so machine noise hits all alike. */
async function race(names: string[], ops: Op[]): Promise<number[]> {
  const results: number[][] = names.map(() => []);
  for (const op of ops) await op(1); // warm-up
  for (let t = 0; t < TRIALS; t++) {
    for (let i = 0; i < ops.length; i++) results[i].push(await trial(ops[i]));
  }
  return results.map(median);
}

function ronomonOp(sources: number, targets: number, buffer: Buffer, parity: Buffer): Op {
  const context = ronomon.create(K, M);
  // Each call starts the next from the callback: the least overhead its async API allows.
  return (count) =>
    new Promise<void>((resolve, reject) => {
      let left = count;
      const next = (error?: Error): void => {
        if (error) return reject(error);
        if (left-- === 0) return resolve();
        ronomon.encode(context, sources, targets, buffer, 0, DATA_BYTES, parity, 0, M * SHARD_BYTES, next);
      };
      next();
    });
}

async function main(): Promise<void> {
  const stripe = crypto.randomBytes(DATA_BYTES);
  const data = Array.from({ length: K }, (_, i) => stripe.subarray(i * SHARD_BYTES, (i + 1) * SHARD_BYTES));
  const fast = rsCodec(K, M);
  const reference = rsReferenceCodec(K, M);
  const parityStore = Buffer.alloc(M * SHARD_BYTES);
  const parity = [0, 1].map((p) => parityStore.subarray(p * SHARD_BYTES, (p + 1) * SHARD_BYTES));
  fast.encodeInto(data, parity);
  const all = [...data, ...parity];
  const lose = (lost: number[]) => all.map((s, i) => (lost.includes(i) ? null : s));
  const outputs = [Buffer.alloc(SHARD_BYTES), Buffer.alloc(SHARD_BYTES)];

  const bits = (indices: number[]) => indices.reduce((acc, i) => acc | (1 << i), 0);
  const ronomonStripe = Buffer.from(stripe);
  const ronomonParity = Buffer.alloc(M * SHARD_BYTES);
  const scenarios: { name: string; ops: Op[] }[] = [
    {
      name: 'encode 4+2',
      ops: [
        syncOp(() => fast.encodeInto(data, parity)),
        ronomonOp(bits([0, 1, 2, 3]), bits([4, 5]), ronomonStripe, ronomonParity),
        syncOp(() => void reference.encode(data)),
      ],
    },
    {
      name: 'rebuild 1 data',
      ops: [
        syncOp(() => void fast.reconstructSome(lose([0]), [0], outputs.slice(0, 1))),
        ronomonOp(bits([1, 2, 3, 4, 5]), bits([0]), ronomonStripe, ronomonParity),
        syncOp(() => void reference.reconstruct(lose([0]))),
      ],
    },
    {
      name: 'rebuild 2 data',
      ops: [
        syncOp(() => void fast.reconstructSome(lose([0, 1]), [0, 1], outputs)),
        ronomonOp(bits([2, 3, 4, 5]), bits([0, 1]), ronomonStripe, ronomonParity),
        syncOp(() => void reference.reconstruct(lose([0, 1]))),
      ],
    },
  ];
  // Cross-check before timing: the rebuilt shards are the originals.
  for (const lost of [[0], [0, 1]]) {
    const rebuilt = fast.reconstructSome(lose(lost), lost);
    lost.forEach((l, i) => {
      if (!rebuilt[i].equals(all[l])) throw new Error(`rebuild of shard ${l} is wrong`);
    });
  }

  const level = rsDetectedSimdLevel();
  console.log(
    `Reed-Solomon ${K}+${M}, ${SHARD_BYTES / 1024} KiB shards, GB/s of data bytes (median of ${TRIALS}); SIMD level ${level}`,
  );
  console.log('scenario         ours    ronomon  reference  ours/ronomon  ours/reference');
  for (const s of scenarios) {
    const [ours, theirs, ref] = await race(['ours', 'ronomon', 'reference'], s.ops);
    console.log(
      `${s.name.padEnd(15)} ${ours.toFixed(2).padStart(6)} ${theirs.toFixed(2).padStart(9)} ${ref.toFixed(3).padStart(10)}` +
        ` ${(ours / theirs).toFixed(2).padStart(12)}x ${(ours / ref).toFixed(0).padStart(14)}x`,
    );
  }
  // Per kernel level, encode only: shows what the fallbacks on other CPUs give.
  const levels = ['gfni', 'avx512', 'avx2', 'ssse3', 'scalar'];
  const perLevel: string[] = [];
  for (const name of levels) {
    if (setRsSimdLevel(name) !== name) continue;
    const [gbps] = await race([name], [syncOp(() => fast.encodeInto(data, parity))]);
    perLevel.push(`${name} ${gbps.toFixed(2)}`);
  }
  setRsSimdLevel(level);
  console.log(`encode 4+2 by kernel level, GB/s: ${perLevel.join(', ')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
