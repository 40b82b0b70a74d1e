// Cost of the restored-metadata walk (DESIGN §4 "Restored metadata"): a store of one-chunk files is
// built once, closed cleanly, and then opened per round twice: after a clean close (no walk) and with
// every disk's marker saying its session never closed (what a crash leaves: the open walks the disks).
// Reports wall ms and CPU ms of Store.open (this process's CPU: the open is all there is).
// The open is timed on the store code of each --repo given (default: this checkout), interleaved per
// round, so an older checkout (e.g. BASELINE_REPO) is measured on the same store and the same load.
// Usage: npm run build:bench && node dist/scripts/bench/bench-walk.js [--files 2000] [--rounds 3]
//        [--layout replica:3] [--repo /older/checkout --repo .]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Store } from '../../store/store';
import { ROOT_INO } from '../../store/meta/meta';
import { markerPath } from '../../store/disk-identity';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const FILES = Number(arg('files', '2000'));
const ROUNDS = Math.max(1, Number(arg('rounds', '3')));
const LAYOUT = arg('layout', 'replica:3');
const DISKS = 6;
const REPOS = process.argv.flatMap((a, i) => (a === '--repo' ? [path.resolve(process.argv[i + 1])] : []));

/** Store of the given checkout's build. */
function storeOf(repo: string): typeof Store {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(path.join(repo, 'dist/store/store.js')) as { Store: typeof Store }).Store;
}
const FILE_BYTES = 8192;

function diskRoots(dir: string): string[] {
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'chunkfs.json'), 'utf8')) as { disks: Array<{ path: string }> };
  return cfg.disks.map((d) => path.resolve(dir, d.path));
}

/** Every marker as a crash leaves it: the session never closed. */
function markUnclosed(roots: string[]): void {
  for (const root of roots) {
    const m = JSON.parse(fs.readFileSync(markerPath(root), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(markerPath(root), JSON.stringify({ ...m, closed: false }) + '\n');
  }
}

async function timed<T>(f: () => Promise<T>): Promise<{ ms: number; cpuMs: number; value: T }> {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const value = await f();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, value };
}

async function main(): Promise<void> {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-walk-')), 'store');
  const store = await Store.create(dir, { disks: DISKS, layout: LAYOUT, smallFileMaxBytes: 0 });
  const data = Buffer.alloc(FILE_BYTES, 7);
  for (let i = 0; i < FILES; i++) {
    const f = store.ns.create(ROOT_INO, `f${i}`, 0o644, 0, 0);
    data.writeUInt32LE(i, 0);
    await store.write(f.ino, 0, data);
  }
  await store.close();
  const roots = diskRoots(dir);
  for (let r = 0; r < ROUNDS; r++)
    for (const repo of REPOS.length > 0 ? REPOS : [path.resolve(__dirname, '../../..')]) {
      const S = storeOf(repo);
      const clean = await timed(() => S.open(dir));
      await clean.value.close();
      markUnclosed(roots);
      const crash = await timed(() => S.open(dir));
      await crash.value.close();
      process.stdout.write(
        `round ${r + 1} ${repo}: ${FILES} files ${LAYOUT} ${DISKS} disks: open after a clean close ` +
          `${clean.ms.toFixed(0)} ms (${clean.cpuMs.toFixed(0)} ms CPU); never closed ${crash.ms.toFixed(0)} ms ` +
          `(${crash.cpuMs.toFixed(0)} ms CPU); load ${os.loadavg()[0].toFixed(2)}\n`,
      );
    }
  if (process.env.KEEP === undefined) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  else process.stdout.write(`kept ${dir}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
