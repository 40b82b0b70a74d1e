// A real database on the mount (DESIGN §5 "what is durable when"): PostgreSQL 15 keeps its data
// directory on a replica:3 chunkfs mount (page checksums on), pgbench runs against it while an acked
// writer commits one row per transaction, and the mount is killed with kill -9 in the middle. After
// a remount PostgreSQL recovers from its WAL and: every row whose COMMIT returned is there,
// pgbench's own invariant holds (the sums of accounts, tellers, branches and history agree),
// pg_amcheck finds no corrupt page or index, and every table reads whole (checksums verified).
import test from 'ava';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { storeFixture } from '../helpers/mount';
import { PG_BIN_DIR, pgUnavailableReason } from '../helpers/pg-cluster';
import { LibpqConnection, newLibpqConnection } from '../../store/meta/postgres/libpq';

/** Rows the acked writer commits before the mount is killed. */
const ACKS_BEFORE_KILL = 200;
/** Inserts tried after the kill before the writer gives up (the server fails them, or hangs up). */
const INSERTS_AFTER_KILL_MAX = 1000;
/** pgbench's scale: 100,000 accounts, a few MiB over several chunks. */
const PGBENCH_SCALE = 2;
const PG_CTL_WAIT_S = 120;
/** A killed server is waited for (its pid gone) this many times STOP_POLL_MS. */
const STOP_POLLS_MAX = 600;
const STOP_POLL_MS = 100;

const fixture = storeFixture(test, 'postgres-data');
const unavailable = pgUnavailableReason();

function asPostgres(args: string[], timeoutMs = 180_000): string {
  return execFileSync('runuser', ['-u', 'postgres', '--', ...args], { cwd: '/', timeout: timeoutMs }).toString();
}

interface Server {
  data: string;
  socketDir: string;
  log: string;
  /** The postmaster's pid, read when it started. */
  pid: number;
}

function pgCtl(s: Server, action: string[]): void {
  asPostgres([path.join(PG_BIN_DIR, 'pg_ctl'), '-D', s.data, '-w', '-t', String(PG_CTL_WAIT_S), ...action]);
}

function startServer(s: Server): void {
  const opts = `-k ${s.socketDir} -c listen_addresses='' -c fsync=on -c synchronous_commit=on -c full_page_writes=on`;
  try {
    pgCtl(s, ['-l', s.log, '-o', opts, 'start']);
  } catch (err) {
    const log = fs.existsSync(s.log) ? fs.readFileSync(s.log, 'utf8').slice(-4000) : '(no log)';
    throw new Error(`PostgreSQL did not start on ${s.data}: ${String(err)}\n${log}`);
  }
  s.pid = Number(fs.readFileSync(path.join(s.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/**
 * Stops the server however it can: it may be in the middle of a crash of its own (a PANIC when the
 * mount went away), and its data directory may be unreadable then, so its pid is the one read at start.
 */
async function stopServer(s: Server): Promise<void> {
  try {
    pgCtl(s, ['-m', 'immediate', 'stop']);
  } catch {
    if (s.pid > 0) spawn('pkill', ['-KILL', '-P', String(s.pid)]).on('error', () => undefined);
    try {
      if (s.pid > 0) process.kill(s.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  for (let i = 0; i < STOP_POLLS_MAX && s.pid > 0 && fs.existsSync(`/proc/${s.pid}`); i++) {
    await new Promise((r) => setTimeout(r, STOP_POLL_MS));
  }
}

function connect(s: Server): LibpqConnection {
  const c = newLibpqConnection();
  c.connectSync(`host=${s.socketDir} user=postgres dbname=postgres`);
  return c;
}

function query(c: LibpqConnection, sql: string): string[][] {
  c.exec(sql);
  const status = c.resultStatus();
  if (status !== 'PGRES_TUPLES_OK' && status !== 'PGRES_COMMAND_OK')
    throw new Error(`${sql}: ${c.resultErrorMessage()}`);
  const rows: string[][] = [];
  for (let r = 0; r < c.ntuples(); r++) {
    const row: string[] = [];
    for (let f = 0; f < c.nfields(); f++) row.push(c.getvalue(r, f));
    rows.push(row);
  }
  return rows;
}

const run = unavailable === null ? test.serial : test.serial.skip;

run(
  'PostgreSQL on the mount, pgbench and an acked writer, kill -9 of the mount: recovery keeps every commit',
  async (t) => {
    const socketDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-pgdata-sock-'));
    execFileSync('chown', ['postgres:postgres', socketDir]);
    const s: Server = { data: '', socketDir, log: path.join(socketDir, 'server.log'), pid: 0 };
    let bench: ChildProcess | null = null;
    try {
      let m = await fixture.mount();
      s.data = path.join(m.mountpoint, 'pgdata');
      fs.mkdirSync(s.data, { mode: 0o700 });
      execFileSync('chown', ['postgres:postgres', s.data]);
      asPostgres([path.join(PG_BIN_DIR, 'initdb'), '-D', s.data, '-A', 'trust', '-U', 'postgres', '--data-checksums']);
      startServer(s);
      asPostgres([
        path.join(PG_BIN_DIR, 'pgbench'),
        '-h',
        socketDir,
        '-U',
        'postgres',
        '-i',
        '-q',
        '-s',
        String(PGBENCH_SCALE),
        'postgres',
      ]);
      const c = connect(s);
      query(c, 'CREATE TABLE acks (i integer PRIMARY KEY, pad text)');
      query(c, 'CHECKPOINT');
      bench = spawn(
        'runuser',
        [
          '-u',
          'postgres',
          '--',
          path.join(PG_BIN_DIR, 'pgbench'),
          '-h',
          socketDir,
          '-U',
          'postgres',
          '-c',
          '2',
          '-T',
          '300',
          'postgres',
        ],
        { cwd: '/', stdio: 'ignore' },
      );

      // One row per transaction; `acked` counts the COMMITs that returned.
      let acked = 0;
      for (let i = 1; i <= ACKS_BEFORE_KILL + INSERTS_AFTER_KILL_MAX; i++) {
        if (i === ACKS_BEFORE_KILL + 1) await m.kill9();
        try {
          query(c, `INSERT INTO acks VALUES (${i}, repeat('x', 200))`);
        } catch {
          break;
        }
        acked = i;
      }
      c.finish();
      t.true(acked >= ACKS_BEFORE_KILL, `${acked} commits acknowledged before the kill`);
      bench.kill('SIGKILL');
      await stopServer(s);

      m = await fixture.mount(); // the CLI recovers the stale mount point
      startServer(s);
      const d = connect(s);
      try {
        const [[n]] = query(d, `SELECT count(*) FROM acks WHERE i <= ${acked}`);
        t.is(Number(n), acked, 'every acknowledged commit survived');
        const [[a, tl, b, h]] = query(
          d,
          `SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers),
                (SELECT sum(bbalance) FROM pgbench_branches), (SELECT coalesce(sum(delta), 0) FROM pgbench_history)`,
        );
        t.deepEqual([a, tl, b], [h, h, h], 'pgbench: accounts, tellers, branches and history agree');
        const [[accounts]] = query(d, 'SELECT count(*) FROM pgbench_accounts');
        t.is(Number(accounts), PGBENCH_SCALE * 100_000, 'every account reads back (page checksums verified)');
      } finally {
        d.finish();
      }
      const check = asPostgres([
        path.join(PG_BIN_DIR, 'pg_amcheck'),
        '-h',
        socketDir,
        '-U',
        'postgres',
        '--heapallindexed',
        '--install-missing',
        'postgres',
      ]);
      t.is(check.trim(), '', 'pg_amcheck reports nothing');
      t.truthy(m);
    } finally {
      bench?.kill('SIGKILL');
      if (s.data !== '') await stopServer(s);
      fs.rmSync(socketDir, { recursive: true, force: true });
    }
  },
);
