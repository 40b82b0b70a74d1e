// Metadata engine benchmark at the store level (DESIGN §9 "Engines"): create, getattr, chmod, rename and
// unlink of FILES files through store.ns (no FUSE, no kernel), each phase timed, ROUNDS rounds with
// the targets interleaved phase by phase, the median reported as operations per second, as a ratio
// against the first target, and as this process's CPU time (user + system) per operation. Targets:
// this build's SQLite engine, a baseline build's (A/B of the metadata interface: `--baseline
// /work/main/dist`), and this build on PostgreSQL (`--pg URL`; with --baseline, the baseline build
// on PostgreSQL too). `--group-ms N`: this build's SQLite engine twice, as a live mount opens it (its
// background jobs started), with metadata groups of N ms and with none (chunkfs.json metaGroupMs 0).
// Usage: node dist/scripts/bench/bench-meta-store.js [--baseline DIST] [--pg URL|auto] [--group-ms N]
//   env: FILES=3000 ROUNDS=5
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startPgCluster } from '../../test/helpers/pg-cluster';

const FILES = Number(process.env.FILES ?? 3000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const ROOT_INO = 1;
const PHASES = ['create', 'getattr', 'chmod', 'rename', 'unlink'] as const;
type Phase = (typeof PHASES)[number];

interface Ns {
  create(p: number, n: string, mode: number, uid: number, gid: number): { ino: number };
  getattr(ino: number): unknown;
  setattr(ino: number, v: { mode: number }): unknown;
  rename(op: number, on: string, np: number, nn: string): unknown;
  unlink(p: number, n: string): unknown;
}
interface StoreLike {
  ns: Ns;
  close(): Promise<void>;
}
interface StoreClass {
  create(dir: string, opts: Record<string, unknown>): Promise<StoreLike>;
  open(dir: string, opts: Record<string, unknown>): Promise<StoreLike>;
}
interface Target {
  name: string;
  store: StoreClass;
  meta?: string;
  /** Reopened as a live mount opens it (background jobs) with chunkfs.json metaGroupMs set to this. */
  groupMs?: number;
}

/** The store made in dir, reopened as a live mount's with metadata groups of groupMs (0: none). */
async function reopenLive(t: Target, dir: string, made: StoreLike, groupMs: number): Promise<StoreLike> {
  await made.close();
  const file = path.join(dir, 'chunkfs.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.writeFileSync(file, JSON.stringify({ ...config, defaults: { ...config.defaults, metaGroupMs: groupMs } }));
  return t.store.open(dir, { background: true });
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}

/** Operations between two turns of the event loop (a mount serves each request from the loop, so its timers run: the lease's renewal). */
const OPS_PER_TURN = 64;

async function phaseOps(ns: Ns, phase: Phase, inos: number[]): Promise<void> {
  for (let i = 0; i < FILES; i++) {
    if (i % OPS_PER_TURN === 0) await new Promise(setImmediate);
    switch (phase) {
      case 'create':
        inos[i] = ns.create(ROOT_INO, `f${i}`, 0o644, 0, 0).ino;
        break;
      case 'getattr':
        ns.getattr(inos[i]);
        break;
      case 'chmod':
        ns.setattr(inos[i], { mode: 0o600 });
        break;
      case 'rename':
        ns.rename(ROOT_INO, `f${i}`, ROOT_INO, `g${i}`);
        break;
      case 'unlink':
        ns.unlink(ROOT_INO, `g${i}`);
        break;
    }
  }
}

/**
 * Round trips to PostgreSQL, counted on libpq's prototype (so every build in this process is
 * counted the same way): each synchronous call, and each pipeline (one sync point). Noise-free,
 * unlike ops/s on a shared machine.
 */
let roundTrips = 0;
function countRoundTrips(): void {
  const proto = (require('libpq') as { prototype: Record<string, (...a: unknown[]) => unknown> }).prototype;
  for (const m of ['execPrepared', 'exec', 'prepare', 'pipelineSync']) {
    const f = proto[m];
    if (typeof f !== 'function') continue;
    proto[m] = function (this: unknown, ...a: unknown[]) {
      roundTrips++;
      return f.apply(this, a);
    };
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  const here = path.join(__dirname, '..', '..');
  const targets: Target[] = [];
  const baseline = arg('--baseline');
  // Each build's Store class from its own dist/ (same process, same drivers).
  if (baseline !== undefined)
    targets.push({ name: 'sqlite-baseline', store: require(path.resolve(baseline, 'store/store')).Store });
  const groupMs = arg('--group-ms');
  if (groupMs === undefined) targets.push({ name: 'sqlite', store: require(path.join(here, 'store/store')).Store });
  else
    targets.push(
      { name: 'sqlite-ungrouped', store: require(path.join(here, 'store/store')).Store, groupMs: 0 },
      {
        name: `sqlite-grouped-${groupMs}ms`,
        store: require(path.join(here, 'store/store')).Store,
        groupMs: Number(groupMs),
      },
    );
  // --pg auto: a throwaway cluster on a Unix socket (test/helpers/pg-cluster.ts), one database per store.
  const pg = arg('--pg');
  const cluster = pg === 'auto' ? startPgCluster() : null;
  let databases = 0;
  const pgUrl = (): string => (cluster !== null ? cluster.createDatabase(`bench${++databases}`) : pg!);
  if (pg !== undefined) {
    // The baseline build on PostgreSQL too (before/after of the PostgreSQL engine in one run).
    if (baseline !== undefined)
      targets.push({
        name: 'postgres-baseline',
        store: require(path.resolve(baseline, 'store/store')).Store,
        meta: 'postgres',
      });
    targets.push({ name: 'postgres', store: require(path.join(here, 'store/store')).Store, meta: 'postgres' });
  }
  if (pg !== undefined) countRoundTrips();
  const results = new Map<string, number[]>(
    targets.flatMap((t) => PHASES.map((p) => [`${t.name}/${p}`, [] as number[]])),
  );
  // This process's CPU time per operation (user + system): steadier than ops/s on a shared machine.
  const cpuUs = new Map<string, number[]>([...results.keys()].map((k) => [k, [] as number[]]));
  const trips = new Map<string, number>();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-bench-meta-store-'));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const open = await Promise.all(
        targets.map(async (t, i) => {
          const dir = path.join(tmp, `r${round}-${i}`);
          const made = await t.store.create(dir, {
            disks: 1,
            layout: 'replica:1',
            ...(t.meta === undefined ? {} : { meta: pgUrl() }),
          });
          const store = t.groupMs === undefined ? made : await reopenLive(t, dir, made, t.groupMs);
          return { t, store, inos: [] as number[] };
        }),
      );
      // The order alternates per round: whoever runs second in a phase measured up to 17% apart in an A/A run.
      const order = round % 2 === 0 ? open : [...open].reverse();
      for (const phase of PHASES) {
        for (const o of order) {
          const trips0 = roundTrips;
          const start = process.hrtime.bigint();
          const cpu0 = process.cpuUsage();
          await phaseOps(o.store.ns, phase, o.inos);
          const cpu = process.cpuUsage(cpu0);
          const seconds = Number(process.hrtime.bigint() - start) / 1e9;
          results.get(`${o.t.name}/${phase}`)!.push(FILES / seconds);
          cpuUs.get(`${o.t.name}/${phase}`)!.push((cpu.user + cpu.system) / FILES);
          trips.set(`${o.t.name}/${phase}`, (roundTrips - trips0) / FILES);
        }
      }
      for (const o of open) await o.store.close();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
    cluster?.stop();
  }
  const base = targets[0].name;
  console.log(`phase\t${targets.map((t) => `${t.name} ops/s\t/${base}`).join('\t')}`);
  for (const p of PHASES) {
    const b = median(results.get(`${base}/${p}`)!);
    console.log(
      `${p}\t${targets
        .map((t) => {
          const m = median(results.get(`${t.name}/${p}`)!);
          return `${Math.round(m)}\t${(m / b).toFixed(3)}`;
        })
        .join('\t')}`,
    );
  }
  console.log(
    `\nCPU microseconds per operation (user + system, median)\nphase\t${targets.map((t) => t.name).join('\t')}`,
  );
  const cpuOf = (t: Target, p: Phase): string => median(cpuUs.get(`${t.name}/${p}`)!).toFixed(1);
  for (const p of PHASES) console.log(`${p}\t${targets.map((t) => cpuOf(t, p)).join('\t')}`);
  const pgTargets = targets.filter((t) => t.meta !== undefined);
  if (pgTargets.length > 0) {
    console.log(
      `\nround trips to PostgreSQL per operation (last round)\nphase\t${pgTargets.map((t) => t.name).join('\t')}`,
    );
    for (const p of PHASES)
      console.log(`${p}\t${pgTargets.map((t) => trips.get(`${t.name}/${p}`)!.toFixed(2)).join('\t')}`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
