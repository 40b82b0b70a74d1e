// `npm test` after its setup: the passes of scripts/test/passes.ts one after the other, all on one
// throwaway PostgreSQL cluster (test/helpers/pg-cluster.ts) instead of one per test process: it is
// started first, its socket directory named to the test processes in CHUNKFS_TEST_PG_SOCKET, and
// stopped and deleted at the end, also when a pass fails or the run is interrupted (a signal is
// passed on as SIGINT to the running ava's process group: ava, its test processes and their mounts;
// the cluster goes once ava has exited).
// Arguments: pass names to run only those (e.g. `postgres`: `npm run test:pg`); default: all.
// Prints each pass's duration at the end.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PgCluster, SHARED_CLUSTER_ENV, pgUnavailableReason, privateCluster } from '../../test/helpers/pg-cluster';
import { PASSES, TestPass } from './passes';

const REPO_ROOT = path.resolve(__dirname, '../../..');
const AVA_CLI = path.join(REPO_ROOT, 'node_modules', 'ava', 'entrypoints', 'cli.mjs');
/**
 * The shared cluster's settings. Connections: every test process of a pass at once, with its mounts
 * and CLI children. fsync off: the cluster is thrown away, and no test on it can see the difference
 * (it would need the server to crash; shared views refuse to stop it, and tests that stop a server
 * take a private one, fsync on); each CREATE and DROP DATABASE then costs tens of ms, not hundreds.
 */
const SHARED_SETTINGS = { max_connections: '200', fsync: 'off' };
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
/** A pass's files and folders named on its first line, at most (more: only their number). */
const PASS_NAMES_SHOWN_MAX = 3;

/** Every *.test.js under dir (relative to the repository root), sorted. */
function testFilesUnder(dir: string): string[] {
  return fs
    .readdirSync(path.join(REPO_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.js'))
    .map((f) => path.posix.join(dir, f))
    .sort();
}

/** ava's file arguments of a pass: its files with directories expanded and skipped files left out. */
function avaFiles(pass: TestPass): string[] {
  for (const f of [...pass.files, ...pass.skip]) {
    if (!fs.existsSync(path.join(REPO_ROOT, f))) {
      throw new Error(`scripts/test/passes.ts, pass '${pass.name}': ${f} does not exist (build first: npm run build)`);
    }
  }
  const skip = new Set(pass.skip);
  return pass.files.flatMap((f) => (f.endsWith('.test.js') ? [f] : testFilesUnder(f))).filter((f) => !skip.has(f));
}

/**
 * What a pass runs, for its first line: how many files, and what it names (a folder stands for the
 * files under it), e.g. "151 files: dist/test, 1 left out", "40 files: dist/test/store, 6 more" or
 * "1 file: dist/test/mount/x.test.js".
 */
function passContents(pass: TestPass, files: string[]): string {
  if (pass.files.length === 0) return 'every test file';
  const count = files.length === 1 ? '1 file' : `${files.length} files`;
  const folders = pass.files.filter((f) => !f.endsWith('.test.js'));
  const named =
    pass.files.length <= PASS_NAMES_SHOWN_MAX
      ? pass.files.join(', ')
      : [...folders, `${pass.files.length - folders.length} more`].join(', ');
  const left = pass.skip.length === 0 ? '' : `, ${pass.skip.length} left out`;
  return `${count}: ${named}${left}`;
}

let child: ReturnType<typeof spawn> | null = null;
let interrupted: NodeJS.Signals | null = null;

function runAva(pass: TestPass, files: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, ...pass.env };
    // Its own process group, so a signal reaches its test processes and their mounts too (below).
    child = spawn(process.execPath, [AVA_CLI, ...files], { cwd: REPO_ROOT, stdio: 'inherit', env, detached: true });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      child = null;
      resolve(code ?? (signal === null ? 1 : 128));
    });
  });
}

/** The shared cluster, or null (saying why) without PostgreSQL: its tests then report themselves skipped. */
function startSharedCluster(): PgCluster | null {
  const reason = pgUnavailableReason();
  if (reason !== null) {
    console.log(`run-tests: no shared PostgreSQL cluster (${reason})`);
    return null;
  }
  return privateCluster(SHARED_SETTINGS, false);
}

/** The databases and bytes a cluster holds at the end (what test files left: each drops its own as it ends). */
function clusterHeld(cluster: PgCluster): string {
  try {
    const sql = 'SELECT count(*), pg_size_pretty(sum(pg_database_size(datname))) FROM pg_database';
    const [n, size] = cluster.query('postgres', sql).trim().split('|');
    return `${n} databases, ${size}`;
  } catch (err) {
    return `? (${(err as Error).message.split('\n')[0]})`;
  }
}

async function main(): Promise<number> {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((n) => !PASSES.some((p) => p.name === n));
  if (unknown.length > 0) {
    throw new Error(`run-tests: no pass named ${unknown.join(', ')} (passes: ${PASSES.map((p) => p.name).join(', ')})`);
  }
  const passes = PASSES.filter((p) => wanted.length === 0 || wanted.includes(p.name));
  const files = passes.map(avaFiles); // every listed file checked before anything starts
  const cluster = startSharedCluster();
  process.on('exit', () => cluster?.stop()); // an exception: the cluster goes all the same
  const took: string[] = [];
  let code = 0;
  try {
    if (cluster !== null) process.env[SHARED_CLUSTER_ENV] = cluster.socketDir;
    for (const [i, pass] of passes.entries()) {
      if (interrupted !== null) break;
      const startMs = Date.now();
      console.log(`run-tests: pass '${pass.name}' ${JSON.stringify(pass.env)}: ${passContents(pass, files[i])}`);
      code = await runAva(pass, files[i]);
      const outcome = code === 0 ? '' : `, failed (exit ${code})`;
      took.push(`pass '${pass.name}': ${Math.round((Date.now() - startMs) / 1000)} s${outcome}`);
      if (code !== 0) break;
    }
  } finally {
    if (cluster !== null) console.log(`run-tests: the shared PostgreSQL cluster held ${clusterHeld(cluster)}`);
    cluster?.stop();
  }
  for (const line of took) console.log(`run-tests: ${line}`);
  return code;
}

for (const signal of SIGNALS) {
  process.on(signal, () => {
    interrupted = signal;
    // As a terminal's Ctrl-C to the whole group: ava ends its test processes, mounts flush and
    // unmount (their SIGINT); main() then stops the cluster.
    if (child?.pid !== undefined) process.kill(-child.pid, 'SIGINT');
  });
}

main().then(
  (code) => {
    if (interrupted !== null) {
      for (const s of SIGNALS) process.removeAllListeners(s);
      process.kill(process.pid, interrupted);
      return;
    }
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
