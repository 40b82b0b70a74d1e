// Spec §13/§14: "All golden vectors G1–G8 pass in two independent decoders". Builds the
// Go decoder in test/interop (Debian packages only, offline) and runs it on
// testdata/chunk. Without Go this FAILS with what to install; it never skips.
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { REPO_ROOT, TESTDATA } from './helpers/root';

const VECTORS = ['G1', 'G2', 'G3', 'G4', 'G5', 'G6', 'G7', 'G8', 'G9', 'G10', 'G11', 'G12', 'G13', 'G14', 'G15', 'G16'];
const INSTALL_HINT =
  'the independent decoder needs Go and four Go libraries from Debian: ' +
  'apt-get install golang-go golang-github-minio-highwayhash-dev golang-github-klauspost-reedsolomon-dev ' +
  'golang-github-klauspost-compress-dev golang-github-pierrec-lz4-dev';
const OUTPUT_BYTES_MAX = 16 * 1024 * 1024;

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-interop-'));
let built: { bin?: string; error?: string } | undefined;

function goEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GO111MODULE: 'off', GOPATH: '/usr/share/gocode', GOFLAGS: '' };
  // Go needs a build cache; CI may run without HOME.
  if (!env.GOCACHE && !env.HOME && !env.XDG_CACHE_HOME) env.GOCACHE = path.join(os.tmpdir(), 'chunkfs-go-cache');
  return env;
}

// Build once per run; later tests reuse the binary (or the same failure message).
function buildDecoder(): { bin?: string; error?: string } {
  if (built) return built;
  const version = spawnSync('go', ['version'], { env: goEnv(), encoding: 'utf8' });
  if (version.error || version.status !== 0) {
    built = { error: `\`go\` is not available (${version.error?.message ?? version.stderr}); ${INSTALL_HINT}` };
    return built;
  }
  const bin = path.join(workDir, 'interop');
  const build = spawnSync('go', ['build', '-o', bin, './test/interop'], {
    cwd: REPO_ROOT,
    env: goEnv(),
    encoding: 'utf8',
    maxBuffer: OUTPUT_BYTES_MAX,
  });
  if (build.status !== 0) {
    built = {
      error: `go build ./test/interop failed:\n${build.stdout}${build.stderr}\n(if a package is missing: ${INSTALL_HINT})`,
    };
    return built;
  }
  built = { bin };
  return built;
}

function runDecoder(t: ExecutionContext, chunkDir: string): { status: number | null; out: string } | undefined {
  const { bin, error } = buildDecoder();
  if (!bin) {
    t.fail(error);
    return undefined;
  }
  const run = spawnSync(bin, [chunkDir], { encoding: 'utf8', maxBuffer: OUTPUT_BYTES_MAX });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

test.after.always(() => {
  fs.rmSync(workDir, { recursive: true, force: true });
});

test.serial('independent Go decoder agrees with every golden vector G1..G16', (t) => {
  const run = runDecoder(t, path.join(TESTDATA, 'chunk'));
  if (!run) return;
  t.is(run.status, 0, run.out);
  for (const name of VECTORS) {
    t.regex(run.out, new RegExp(`^${name} ok \\(`, 'm'), `${name} was not checked:\n${run.out}`);
  }
  t.regex(run.out, /^G6 ok \(rejected: bitrot at block \d+ as expected/m);
  t.regex(run.out, /^G7 ok \(.*bad slices rejected: \[cookie\]/m);
  t.regex(run.out, /^G12 ok \(.*parity == klauspost .*aes-256-gcm then zstd undone == input\.bin/m);
  t.regex(run.out, /^G13 ok \(.*lz4 undone == input\.bin/m);
  // Cipher format v2 (16 KiB segments, docs/transforms.md): replica, EC, and compressed then encrypted.
  t.regex(run.out, /^G14 ok \(.*aes-256-gcm undone == input\.bin/m);
  t.regex(run.out, /^G15 ok \(.*parity == klauspost .*aes-256-gcm undone == input\.bin/m);
  t.regex(run.out, /^G16 ok \(.*aes-256-gcm then zstd undone == input\.bin/m);
  t.regex(run.out, /^interop: all \d+ vectors agree/m);
});

// The decoder must be able to say no: corrupt copies of G1 (a data byte) and G2 (a
// reserved header byte, so only the CRC catches it) and expect precise failures.
test.serial('independent Go decoder rejects corrupted vectors', (t) => {
  const dir = path.join(workDir, 'corrupt');
  for (const name of ['G1', 'G2']) {
    fs.cpSync(path.join(TESTDATA, 'chunk', name), path.join(dir, name), { recursive: true });
  }
  const g1 = path.join(dir, 'G1', 'expected.shard');
  const shard = fs.readFileSync(g1);
  const blockCount = shard.readUInt32LE(68); // spec §3 block_count
  const dataStartBytes = 4096 + Math.ceil((blockCount * 32) / 4096) * 4096; // spec §2
  shard[dataStartBytes] ^= 0x01;
  fs.writeFileSync(g1, shard);
  const g2 = path.join(dir, 'G2', 'expected.shard');
  const header = fs.readFileSync(g2);
  header[1000] ^= 0x01; // reserved byte, covered by header_crc32c (DESIGN §3)
  fs.writeFileSync(g2, header);

  const run = runDecoder(t, dir);
  if (!run) return;
  t.is(run.status, 1, run.out);
  t.regex(run.out, /^G1 FAIL: .*bitrot at block 0/m);
  t.regex(run.out, /^G2 FAIL: .*header_crc32c/m);
  t.regex(run.out, /^G3 FAIL: vector missing/m);
  t.regex(run.out, /^interop: FAILED/m);
});

// Transforms (DESIGN §10): the decoder reads what a live store wrote, given the layout's algorithms and the
// store key (as a user recovering disks would): a chunk of an ec:4+2,zstd,aes256gcm file (all six
// shards) and of a replica:3,lz4 file, next to the required G1..G8.
test.serial("independent Go decoder reads a live store's transformed shards with the store key", async (t) => {
  const { Store } = await import('../store/store');
  const { ROOT_INO } = await import('../store/meta/meta');
  const { decodeHeader, HEADER_BYTES } = await import('../src/header');
  const dir = path.join(workDir, 'live');
  const storeDir = path.join(dir, 'store');
  const text = Buffer.from(
    Array.from({ length: 40_000 }, (_, i) => `record ${i}: a line the store compresses\n`).join(''),
  ).subarray(0, 1_000_000);
  const store = await Store.create(storeDir, { disks: 6, layout: 'replica:3' });
  const files: Array<{ name: string; layout: string; transform: unknown; ino: number }> = [];
  const storeKey = fs.readFileSync(path.join(storeDir, 'data.key')).toString('hex');
  for (const [name, layout, transform] of [
    [
      'G90',
      'ec:4+2,zstd,aes256gcm',
      { compression: { algo: 'zstd', level: 3 }, encryption: { algo: 'aes-256-gcm', store_key: storeKey } },
    ],
    ['G91', 'replica:3,lz4', { compression: { algo: 'lz4' } }],
  ] as const) {
    const f = store.ns.create(ROOT_INO, name, 0o644, 0, 0, layout);
    await store.write(f.ino, 0, text);
    files.push({ name, layout, transform, ino: f.ino });
  }
  await store.close();
  const bitrotKey = fs.readFileSync(path.join(storeDir, 'bitrot.key')).toString('hex');
  const out = path.join(dir, 'vectors');
  for (const v of VECTORS.slice(0, 8))
    fs.cpSync(path.join(TESTDATA, 'chunk', v), path.join(out, v), { recursive: true });
  for (const f of files) {
    const fileId = f.ino.toString(16).padStart(16, '0');
    const shards = fs
      .readdirSync(path.join(storeDir, 'disks'), { recursive: true, encoding: 'utf8' })
      .filter((p) => p.includes(`${fileId}.v`) && p.endsWith('.shard'))
      .map((p) => path.join(storeDir, 'disks', p));
    const vdir = path.join(out, f.name);
    fs.mkdirSync(vdir, { recursive: true });
    fs.writeFileSync(path.join(vdir, 'input.bin'), text);
    for (const p of shards) {
      const h = decodeHeader(fs.readFileSync(p).subarray(0, HEADER_BYTES));
      if (h.shardIndex === 0) {
        fs.copyFileSync(p, path.join(vdir, 'expected.shard'));
        fs.writeFileSync(
          path.join(vdir, 'params.json'),
          JSON.stringify(
            {
              vector: f.name,
              description: `live store, layout ${f.layout}`,
              mode: f.layout.startsWith('ec') ? 'ec' : 'replica',
              file_id: h.fileId.toString(),
              chunk_index: h.chunkIndex.toString(),
              version: h.version.toString(),
              shard_index: 0,
              ec_k: h.ecK,
              ec_m: h.ecM,
              ec_algo: h.ecAlgo,
              csum_algo: h.csumAlgo,
              bitrot_block: h.bitrotBlockBytes,
              ec_block_size: h.ecBlockSizeBytes.toString(),
              chunk_size: h.chunkSizeBytes.toString(),
              created_unix_nanos: h.createdUnixNanos.toString(),
              placement_seed: h.placementSeed.toString(),
              cluster_map_epoch: h.clusterMapEpoch.toString(),
              flags: h.flags,
              shard_data_len: h.shardDataLenBytes.toString(),
              chunk_logical_len: h.chunkLogicalLenBytes.toString(),
              content_len: h.contentLenBytes.toString(),
              block_count: h.blockCount,
              bitrot_key: bitrotKey,
              transform: f.transform,
              expect: 'valid',
            },
            null,
            2,
          ),
        );
      }
      if (f.layout.startsWith('ec')) fs.copyFileSync(p, path.join(vdir, `expected.${h.shardIndex}.shard`));
    }
  }
  const run = runDecoder(t, out);
  if (!run) return;
  t.is(run.status, 0, run.out);
  t.regex(
    run.out,
    /^G90 ok \(ec shard 0: .*§6 join of 4 data shards, parity == klauspost .*aes-256-gcm then zstd undone == input\.bin \(1000000 bytes\)/m,
  );
  t.regex(run.out, /^G91 ok \(replica shard 0: .*lz4 undone == input\.bin \(1000000 bytes\)/m);
});
