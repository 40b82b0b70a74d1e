// The cost of lease fencing on PostgreSQL (DESIGN §9 "Lease and fencing", store/meta/postgres/fence.ts):
// the holder's session runs single-statement transactions (an UPDATE of one row, as chmod) and
// transactions of STATEMENTS_PER_TX updates, with the fence trigger on and off (ALTER TABLE ...
// DISABLE TRIGGER), rounds alternated; reported: the median microseconds per transaction of each,
// in wall clock and in the server process's CPU time (/proc/PID/schedstat: steady on a loaded
// machine), and the server's own time in the trigger (EXPLAIN ANALYZE's "Trigger chunkfs_fence").
// Usage: npm run build:bench; node dist/scripts/bench/bench-fence.js   env: OPS=3000 ROUNDS=7 (a throwaway cluster is started)
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startPgCluster } from '../../test/helpers/pg-cluster';
import { Store } from '../../store/store';
import { connectPg } from '../../store/meta/postgres/connect';
import { epochSettingSql } from '../../store/meta/postgres/fence';
import type { PgDb } from '../../store/meta/postgres/engine';

const OPS = Number(process.env.OPS ?? 3000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const STATEMENTS_PER_TX = 5;
const EXPLAINS = 200;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Nanoseconds the process pid has run on a CPU (the kernel's scheduler statistics). */
function cpuNs(pid: number): bigint {
  return BigInt(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

/** Wall-clock and server-CPU microseconds per call of fn. */
function usPerOp(fn: () => void, serverPid: number): { wall: number; cpu: number } {
  const t0 = process.hrtime.bigint();
  const c0 = cpuNs(serverPid);
  for (let i = 0; i < OPS; i++) fn();
  return { wall: Number(process.hrtime.bigint() - t0) / 1000 / OPS, cpu: Number(cpuNs(serverPid) - c0) / 1000 / OPS };
}

function triggers(db: PgDb, on: boolean): void {
  db.exec(`ALTER TABLE counters ${on ? 'ENABLE' : 'DISABLE'} TRIGGER chunkfs_fence`);
}

/** The server's time in the trigger for one statement, from EXPLAIN ANALYZE (ms -> us). */
function explainedUs(db: PgDb): number {
  const rows = db
    .prepare("EXPLAIN (ANALYZE, FORMAT TEXT) UPDATE counters SET value = value + 1 WHERE name = 'bench'")
    .all() as Array<Record<string, string>>;
  const line = rows.map((r) => Object.values(r)[0]).find((l) => /Trigger chunkfs_fence/.test(l));
  const m = line === undefined ? null : /time=([0-9.]+)/.exec(line);
  return m === null ? NaN : Number(m[1]) * 1000;
}

/** The median time in the trigger: a transaction's first statement (checks), or a later one (cached: later). */
function triggerUs(db: PgDb, later: boolean): number {
  const times: number[] = [];
  const one = db.prepare("UPDATE counters SET value = value + 1 WHERE name = 'bench'");
  for (let i = 0; i < EXPLAINS; i++) {
    if (!later) times.push(explainedUs(db));
    else
      db.transaction(() => {
        one.run();
        times.push(explainedUs(db));
      })();
  }
  return median(times);
}

async function main(): Promise<void> {
  const cluster = startPgCluster();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-bench-fence-'));
  try {
    const url = cluster.createDatabase('fence');
    const store = await Store.create(path.join(tmp, 'store'), { disks: 1, layout: 'replica:1', meta: url });
    const admin = connectPg(url);
    const epoch = (admin.prepare('SELECT epoch FROM chunkfs_lease WHERE k = 0').get() as { epoch: bigint }).epoch;
    const db = connectPg(url);
    db.holdLease(epochSettingSql(epoch)); // writes as the holder
    db.prepare("INSERT INTO counters(name, value) VALUES ('bench', 0)").run();
    const one = db.prepare("UPDATE counters SET value = value + 1 WHERE name = 'bench'");
    const tx = db.transaction(() => {
      for (let i = 0; i < STATEMENTS_PER_TX; i++) one.run();
    });
    const serverPid = Number((db.prepare('SELECT pg_backend_pid() AS p').get() as { p: bigint }).p);
    const r: Record<string, number[]> = {};
    const note = (key: string, v: { wall: number; cpu: number }): void => {
      (r[`${key}_wall`] ??= []).push(v.wall);
      (r[`${key}_cpu`] ??= []).push(v.cpu);
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const on of round % 2 === 0 ? [true, false] : [false, true]) {
        triggers(admin, on);
        note(
          `single_${on ? 'on' : 'off'}`,
          usPerOp(() => one.run(), serverPid),
        );
        note(
          `tx_${on ? 'on' : 'off'}`,
          usPerOp(() => tx(), serverPid),
        );
      }
    }
    triggers(admin, true);
    const inTrigger = triggerUs(db, false);
    const inTriggerLater = triggerUs(db, true);
    const m = (k: string): string => median(r[k]).toFixed(1);
    for (const what of ['wall', 'cpu']) {
      const clock = what === 'wall' ? 'wall clock' : 'server CPU';
      process.stdout.write(
        `per transaction, ${clock}, median of ${ROUNDS} rounds of ${OPS} (us): ` +
          `1 UPDATE: fenced ${m(`single_on_${what}`)}, unfenced ${m(`single_off_${what}`)}; ` +
          `${STATEMENTS_PER_TX} UPDATEs: fenced ${m(`tx_on_${what}`)}, unfenced ${m(`tx_off_${what}`)}\n`,
      );
    }
    process.stdout.write(
      `server time in the trigger (EXPLAIN ANALYZE, median of ${EXPLAINS}): a transaction's first write ` +
        `${inTrigger.toFixed(1)} us, a later one ${inTriggerLater.toFixed(1)} us\n`,
    );
    process.stdout.write(
      `rounds: ${JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.map((x) => Math.round(x))])))}\n`,
    );
    db.close();
    admin.close();
    await store.close();
  } finally {
    cluster.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

void main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exitCode = 1;
});
