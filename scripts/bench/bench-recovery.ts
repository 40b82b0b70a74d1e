// Recovery-time benchmark (DESIGN §5): how long Store.open (recovery included) takes after a
// crash, on a store holding a few GiB. Builds the store once through the store API (--dir keeps it
// between runs), then per round: a writer (a child process) is killed with SIGKILL in the middle of
// multi-chunk writes (temp files, reserved versions, shards of no committed version are left
// behind), the page cache is dropped, and the store is opened again.
// Usage: npm run build:bench && node dist/scripts/bench/bench-recovery.js [--dir /path] [--gib 3] [--small-files 2000]
//        [--rounds 3] [--layout replica:3]
// Reports per round: open ms cold (after drop_caches) and warm, and what recovery did.
process.env.UV_THREADPOOL_SIZE = process.env.UV_THREADPOOL_SIZE ?? '16';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execSync, spawn } from 'node:child_process';
import { Store } from '../../store/store';
import { ROOT_INO } from '../../store/meta/meta';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const MIB = 1 << 20;
const GIB = Number(arg('gib', '3'));
const SMALL_FILES = Number(arg('small-files', '2000'));
const ROUNDS = Math.max(1, Number(arg('rounds', '3')));
const LAYOUT = arg('layout', 'replica:3');
/** Without --dir the store is built in a temp directory and removed at the end. */
const KEEP = process.argv.includes('--dir');
const DIR = KEEP ? arg('dir', '') : path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-recovery-')), 'store');
const BIG_FILE_MIB = 64;
const WRITE_MIB = 16; // bytes per store.write, like a write-back flush of whole chunks
const SMALL_FILE_BYTES = 8192;
/** How long the writer runs before its SIGKILL. */
const KILL_AFTER_MS = 1500;

let dropsWork = true;
function dropCaches(): void {
  try {
    execSync('sync');
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
  } catch {
    dropsWork = false;
  }
}

async function build(): Promise<void> {
  if (fs.existsSync(path.join(DIR, 'chunkfs.json'))) return;
  const store = await Store.create(DIR, { disks: 6, layout: LAYOUT });
  const data = crypto.randomBytes(WRITE_MIB * MIB);
  const bigFiles = Math.ceil((GIB * 1024) / BIG_FILE_MIB);
  for (let i = 0; i < bigFiles; i++) {
    const f = store.ns.create(ROOT_INO, `big${i}`, 0o644, 0, 0);
    for (let at = 0; at < BIG_FILE_MIB * MIB; at += data.length) {
      data.writeUInt32LE(i, 0); // differing content per call (no dedup anywhere, but honest bytes)
      await store.write(f.ino, at, data);
    }
  }
  const small = crypto.randomBytes(SMALL_FILE_BYTES);
  for (let i = 0; i < SMALL_FILES; i++) {
    const f = store.ns.create(ROOT_INO, `small${i}`, 0o644, 0, 0);
    await store.write(f.ino, 0, small);
  }
  await store.close();
  process.stdout.write(
    `built ${DIR}: ${bigFiles} x ${BIG_FILE_MIB} MiB + ${SMALL_FILES} x ${SMALL_FILE_BYTES} B, ${LAYOUT}\n`,
  );
}

/** The child: rewrite one file in multi-chunk writes until killed. */
async function writer(round: number): Promise<void> {
  const store = await Store.open(DIR);
  const f = store.ns.lookup(ROOT_INO, `cut${round}`) ?? store.ns.create(ROOT_INO, `cut${round}`, 0o644, 0, 0);
  const data = crypto.randomBytes(WRITE_MIB * MIB);
  process.stdout.write('writing\n');
  for (let i = 0; ; i++) await store.write(f.ino, (i % 4) * data.length, data);
}

/** A writer killed with SIGKILL in the middle of its writes. */
async function crashWriter(round: number): Promise<void> {
  const child = spawn(process.execPath, [__filename, '--child', String(round), '--dir', DIR], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  await new Promise((resolve) => setTimeout(resolve, KILL_AFTER_MS));
  child.kill('SIGKILL');
  await exited;
}

async function timedOpen(): Promise<{ ms: number; report: Store['recoveryReport']; reclaimBacklog: number }> {
  const t0 = process.hrtime.bigint();
  const store = await Store.open(DIR);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const report = store.recoveryReport;
  const { reclaimBacklog } = await store.status();
  await store.reclaimNow(); // what the mount's background reclaimer does after the open
  await store.close();
  return { ms, report, reclaimBacklog };
}

async function main(): Promise<void> {
  const child = process.argv.indexOf('--child');
  if (child >= 0) return writer(Number(process.argv[child + 1]));
  await build();
  for (let r = 0; r < ROUNDS; r++) {
    await crashWriter(r);
    dropCaches();
    const cold = await timedOpen();
    const warm = await timedOpen();
    const rep = cold.report;
    process.stdout.write(
      `round ${r + 1}: open after a crash ${cold.ms.toFixed(0)} ms cold${dropsWork ? '' : ' (caches not dropped: not root)'}, ` +
        `${warm.ms.toFixed(0)} ms warm (clean); recovery: ${rep.intentsResolved} intents, ${rep.orphansDeleted} orphans, ` +
        `${rep.filesTrimmed} files trimmed past their size; ${cold.reclaimBacklog} chunk versions queued for the background reclaimer\n`,
    );
  }
  if (!KEEP) fs.rmSync(path.dirname(DIR), { recursive: true, force: true });
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
