// PostgreSQL driver round trips (DESIGN §9, docs/postgres-driver.md): QUERIES simple queries,
// one after another, over a Unix socket to a throwaway cluster (test/helpers/pg-cluster.ts), by
// each candidate driver: libpq (native, synchronous: execParams, and prepare + execPrepared) and
// node-postgres `pg` (pure JS, asynchronous: one await per query, and all queries queued at once).
// better-sqlite3 doing the same in process is the baseline. ROUNDS rounds, drivers interleaved;
// the median per driver as microseconds per query and as a ratio against libpq execPrepared.
// Usage: node dist/scripts/bench/bench-pg-driver.js   env: QUERIES=10000 ROUNDS=5
// (libpq and pg carry no type declarations here: required untyped.)
import Database from 'better-sqlite3';
import { startPgCluster } from '../../test/helpers/pg-cluster';

const QUERIES = Number(process.env.QUERIES ?? 10_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const Libpq = require('libpq');
const pg = require('pg');

type Run = () => Promise<void> | void;

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`bench-pg-driver: ${what}`);
}

async function main(): Promise<void> {
  const cluster = startPgCluster();
  try {
    const url = cluster.createDatabase('bench');
    const pq = new Libpq();
    pq.connectSync(url);
    pq.prepare('q', 'SELECT $1::bigint + 1 AS n', 1);
    check(pq.resultStatus() === 'PGRES_COMMAND_OK', pq.errorMessage());
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const lite = new Database(':memory:');
    const liteQ = lite.prepare('SELECT ? + 1 AS n');
    const drivers: Record<string, Run> = {
      'libpq execPrepared (sync)': () => {
        for (let i = 0; i < QUERIES; i++) {
          pq.execPrepared('q', [String(i)]);
          check(pq.getvalue(0, 0) === String(i + 1), 'libpq answer');
        }
      },
      'libpq execParams (sync)': () => {
        for (let i = 0; i < QUERIES; i++) {
          pq.execParams('SELECT $1::bigint + 1 AS n', [String(i)]);
          check(pq.getvalue(0, 0) === String(i + 1), 'libpq answer');
        }
      },
      'pg, await each (async)': async () => {
        for (let i = 0; i < QUERIES; i++) {
          const r = await client.query({ name: 'q', text: 'SELECT $1::bigint + 1 AS n', values: [i] });
          check(String(r.rows[0].n) === String(i + 1), 'pg answer');
        }
      },
      'pg, all queued (async)': async () => {
        const all = [];
        for (let i = 0; i < QUERIES; i++)
          all.push(client.query({ name: 'q', text: 'SELECT $1::bigint + 1 AS n', values: [i] }));
        const rows = await Promise.all(all);
        check(String(rows[QUERIES - 1].rows[0].n) === String(QUERIES), 'pg answer');
      },
      'better-sqlite3 in process (baseline)': () => {
        for (let i = 0; i < QUERIES; i++) check(Number((liteQ.get(i) as { n: number }).n) === i + 1, 'sqlite answer');
      },
    };
    const names = Object.keys(drivers);
    const us = new Map<string, number[]>(names.map((n) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const n of round % 2 === 0 ? names : [...names].reverse()) {
        const start = process.hrtime.bigint();
        await drivers[n]();
        us.get(n)!.push(Number(process.hrtime.bigint() - start) / 1000 / QUERIES);
      }
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const base = median(us.get(names[0])!);
    console.log(`${QUERIES} queries x ${ROUNDS} rounds, Unix socket, PostgreSQL ${pq.serverVersion()}`);
    console.log('driver\tus/query\tqueries/s\t/libpq execPrepared');
    for (const n of names) {
      const m = median(us.get(n)!);
      console.log(`${n}\t${m.toFixed(1)}\t${Math.round(1e6 / m)}\t${(m / base).toFixed(2)}`);
    }
    await client.end();
    pq.finish();
    lite.close();
  } finally {
    cluster.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
