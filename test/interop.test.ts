// Spec §13/§14: "All golden vectors G1–G8 pass in two independent decoders". Builds the
// Go decoder in scripts/interop (Debian packages only, offline) and runs it on
// testdata/chunk. Without Go this FAILS with what to install; it never skips.
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { REPO_ROOT, TESTDATA } from './helpers/root';

const VECTORS = ['G1', 'G2', 'G3', 'G4', 'G5', 'G6', 'G7', 'G8'];
const INSTALL_HINT =
  'the independent decoder needs Go and two Go libraries from Debian: ' +
  'apt-get install golang-go golang-github-minio-highwayhash-dev golang-github-klauspost-reedsolomon-dev';
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
  const build = spawnSync('go', ['build', '-o', bin, './scripts/interop'], {
    cwd: REPO_ROOT, env: goEnv(), encoding: 'utf8', maxBuffer: OUTPUT_BYTES_MAX,
  });
  if (build.status !== 0) {
    built = { error: `go build ./scripts/interop failed:\n${build.stdout}${build.stderr}\n(if a package is missing: ${INSTALL_HINT})` };
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

test.serial('independent Go decoder agrees with every golden vector G1..G8', (t) => {
  const run = runDecoder(t, path.join(TESTDATA, 'chunk'));
  if (!run) return;
  t.is(run.status, 0, run.out);
  for (const name of VECTORS) {
    t.regex(run.out, new RegExp(`^${name} ok \\(`, 'm'), `${name} was not checked:\n${run.out}`);
  }
  t.regex(run.out, /^G6 ok \(rejected: bitrot at block \d+ as expected/m);
  t.regex(run.out, /^G7 ok \(.*bad slices rejected: \[cookie\]/m);
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
