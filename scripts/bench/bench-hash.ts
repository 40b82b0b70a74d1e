// HighwayHash-256 bitrot benchmark (spec §4): a 4 MiB shard payload
// hashed as 256 position-keyed 16 KiB blocks through hashBlocks (the hot path of
// encodeShard; one batch call into our addon, native/highway/), against raw
// highwayhasher highway256 calls over the same blocks with one fixed key (the
// baseline) and the former per-block keyed highwayhasher loop, interleaved in the
// same run so the ratios are fair on a noisy machine. The scalar kernel gets a row too.
// Also times encodeShard (fresh 4 MiB output: page faults + copy), encodeShardHead
// (writev path, no payload copy) and a whole-shard verifiedRead. Target: >= 3 GB/s.
// Run: npm run bench:hash
import * as crypto from 'node:crypto';
import { hashBlocks } from '../../src/hashtable';
import { highway256, loadHighway } from '../../src/highway';
import { HighwayKernel, detectedHighwayKernel, setHighwayKernel } from '../../src/highway-native';
import { ShardKeyer, parseBitrotKey } from '../../src/keying';
import { ShardReader, encodeShard, encodeShardHead, readShardHeader, verifiedRead } from '../../src/shard';

const KiB = 1024;
const PAYLOAD_BYTES = 4 * 1024 * KiB;
const BLOCK_BYTES = 16 * KiB;
const TRIALS = 7;
const TRIAL_SECONDS_MIN = 0.3;
const ITERATIONS_MAX = 100_000;

type Op = () => unknown;

async function trial(op: Op): Promise<number> {
  let iterations = 0;
  const start = process.hrtime.bigint();
  let seconds = 0;
  while (seconds < TRIAL_SECONDS_MIN && iterations < ITERATIONS_MAX) {
    await op();
    iterations++;
    seconds = Number(process.hrtime.bigint() - start) / 1e9;
  }
  return (iterations * PAYLOAD_BYTES) / seconds / 1e9;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  await loadHighway();
  const payload = crypto.randomBytes(PAYLOAD_BYTES);
  const keyBytes = crypto.randomBytes(32);
  const key = parseBitrotKey(keyBytes);
  const pos = { fileId: 12345n, chunkIndex: 7n, shardIndex: 2, version: 1n };
  const blocks: Buffer[] = [];
  for (let o = 0; o < PAYLOAD_BYTES; o += BLOCK_BYTES) blocks.push(payload.subarray(o, o + BLOCK_BYTES));
  const params = {
    fileId: pos.fileId,
    chunkIndex: pos.chunkIndex,
    version: pos.version,
    shardIndex: 0,
    ecK: 1,
    ecM: 0,
    ecAlgo: 0,
    bitrotBlockBytes: BLOCK_BYTES,
    chunkLogicalLenBytes: BigInt(PAYLOAD_BYTES),
    createdUnixNanos: 0n,
    ecBlockSizeBytes: 0n,
    placementSeed: 0n,
    clusterMapEpoch: 0n,
    chunkSizeBytes: BigInt(PAYLOAD_BYTES),
    contentLenBytes: BigInt(PAYLOAD_BYTES),
  };
  const file = encodeShard(params, payload, key);
  const reader: ShardReader = {
    async read(o, l) {
      return file.subarray(o, Math.min(o + l, file.length));
    },
  };
  const header = await readShardHeader(reader);

  const keyer = new ShardKeyer(key, pos);
  const best: HighwayKernel = detectedHighwayKernel();
  const withKernel =
    (k: HighwayKernel, op: Op): Op =>
    () => {
      setHighwayKernel(k);
      try {
        return op();
      } finally {
        setHighwayKernel(best);
      }
    };
  const ops: Record<string, Op> = {
    'raw highway256 x256': () => {
      for (const b of blocks) highway256(keyBytes, b);
    },
    'keyed highwayhasher': () => {
      blocks.forEach((b, i) => highway256(keyer.keyFor(i), b));
    }, // the pre-native loop
    'hashBlocks (keyed)': () => hashBlocks(key, pos, payload, BLOCK_BYTES),
    'hashBlocks scalar': withKernel('scalar', () => hashBlocks(key, pos, payload, BLOCK_BYTES)),
    encodeShard: () => encodeShard(params, payload, key),
    encodeShardHead: () => encodeShardHead(params, payload, key),
    'verifiedRead (all)': () => verifiedRead(reader, header, key, 0, PAYLOAD_BYTES),
  };
  const results: Record<string, number[]> = {};
  for (const name of Object.keys(ops)) {
    results[name] = [];
    await trial(ops[name]);
  } // warm up
  for (let t = 0; t < TRIALS; t++) {
    for (const name of Object.keys(ops)) results[name].push(await trial(ops[name]));
  }
  const raw = median(results['raw highway256 x256']);
  console.log(
    `HighwayHash-256, 4 MiB as 256 x 16 KiB blocks, median of ${TRIALS} interleaved trials (GB/s of payload)`,
  );
  console.log(`native kernel: ${best}; baseline 'raw' = highwayhasher, one call per block`);
  for (const name of Object.keys(ops)) {
    const gbs = median(results[name]);
    const best = Math.max(...results[name]);
    console.log(
      `  ${name.padEnd(24)} ${gbs.toFixed(2).padStart(6)} GB/s (best ${best.toFixed(2)})   ratio vs raw ${(gbs / raw).toFixed(2)}`,
    );
  }
  const keyed = median(results['hashBlocks (keyed)']);
  console.log(`hashBlocks target >= 3 GB/s: ${keyed >= 3 ? 'met' : 'NOT met'} (${keyed.toFixed(2)} GB/s)`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
