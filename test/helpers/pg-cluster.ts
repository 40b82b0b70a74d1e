// A throwaway PostgreSQL cluster for tests and benchmarks (issue 22: a real PostgreSQL, never a
// mock; DESIGN §9). Debian's initdb and pg_ctl make it in a temporary directory owned by the
// `postgres` user (initdb refuses root), run as that user; it listens on a Unix socket in that
// directory only (no TCP). stop() (also run at process exit, so a failing test leaves nothing)
// stops it and deletes the directory. Connections use the `postgres` role, trusted on the socket.
import type { TestFn } from 'ava';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** Debian's PostgreSQL 15 server binaries (package postgresql-15). */
export const PG_BIN_DIR = process.env.CHUNKFS_PG_BIN ?? '/usr/lib/postgresql/15/bin';
/** pg_ctl waits at most this long for the server to start or stop. */
const PG_CTL_WAIT_SECONDS = 60;
/** The largest pg_dump a test reads (a test store's database is a few MiB). */
const DUMP_BYTES_MAX = 1 << 30;
/** Clusters one process may leave running at once (a bound on what exit must clean up). */
const CLUSTERS_MAX = 8;

/** Why PostgreSQL tests cannot run here, or null when they can. */
export function pgUnavailableReason(): string | null {
  for (const bin of ['initdb', 'pg_ctl']) {
    if (!fs.existsSync(path.join(PG_BIN_DIR, bin))) return `${path.join(PG_BIN_DIR, bin)} is missing (apt-get install postgresql)`;
  }
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
  } catch {
    return 'no `postgres` user (apt-get install postgresql makes it)';
  }
  return null;
}

export interface PgCluster {
  /** The directory the socket is in (libpq's host for a Unix socket). */
  socketDir: string;
  /** A new empty database; its connection string (postgresql:///name?host=socketDir&user=postgres). */
  createDatabase(name: string): string;
  /** A new database holding a copy of database `from` (nobody may be connected to it); its URI. */
  copyDatabase(from: string, name: string): string;
  /** The connection string of database name (made or not). */
  url(name: string): string;
  /** Stops the server (immediate: no checkpoint needed, it is thrown away) and deletes it all. */
  stop(): void;
  /** Stops the server and starts it again on the same data (a server restart under a client). */
  restart(): void;
  /** Stops the server (fast: clients are disconnected), keeping its data for start(). */
  pause(): void;
  /** Starts the server paused by pause(). */
  resume(): void;
  /** The rows of one query on database name, as psql prints them unaligned (fields split by |). */
  query(name: string, sql: string): string;
  /** Every table of database name: its row count and a digest of its rows as pg_dump writes them (same rows, same text); the sequences. */
  dumpRows(name: string): string;
}

const running = new Set<PgCluster>();
let exitHookSet = false;

function asPostgres(args: string[]): string {
  return execFileSync('runuser', ['-u', 'postgres', '--', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** settings: server settings for this cluster (name -> value), e.g. { wal_writer_delay: '10s' }. */
export function startPgCluster(settings: Record<string, string> = {}): PgCluster {
  const reason = pgUnavailableReason();
  if (reason !== null) throw new Error(`PostgreSQL unavailable: ${reason}`);
  if (running.size >= CLUSTERS_MAX) throw new Error(`more than ${CLUSTERS_MAX} test clusters at once`);
  // Short: a Unix socket path must fit in 107 bytes.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfspg-'));
  execFileSync('chown', ['postgres:postgres', dir]);
  fs.chmodSync(dir, 0o700);
  const data = path.join(dir, 'data');
  const ctl = path.join(PG_BIN_DIR, 'pg_ctl');
  let started = false;
  const stop = (): void => {
    running.delete(cluster);
    if (started) {
      try {
        asPostgres([ctl, '-D', data, '-m', 'immediate', '-w', '-t', String(PG_CTL_WAIT_SECONDS), 'stop']);
      } catch { /* already stopped */ }
      started = false;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const start = (): void => {
    // listen_addresses '' = no TCP; the socket lives in dir (0700: root and postgres only).
    const extra = Object.entries(settings).map(([k, v]) => ` -c ${k}=${v}`).join('');
    const opts = `-c listen_addresses='' -c unix_socket_directories='${dir}' -c max_connections=40 -c shared_buffers=32MB${extra}`;
    asPostgres([ctl, '-D', data, '-o', opts, '-l', path.join(dir, 'server.log'), '-w', '-t', String(PG_CTL_WAIT_SECONDS), 'start']);
    started = true;
  };
  const url = (name: string): string => `postgresql:///${name}?host=${encodeURIComponent(dir)}&user=postgres`;
  const cluster: PgCluster = {
    socketDir: dir,
    url,
    createDatabase(name: string): string {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`test database name '${name}': lower case letters, digits and _`);
      asPostgres([path.join(PG_BIN_DIR, 'psql'), '-h', dir, '-d', 'postgres', '-q', '-c', `CREATE DATABASE ${name}`]);
      return url(name);
    },
    copyDatabase(from: string, name: string): string {
      for (const n of [from, name]) if (!/^[a-z_][a-z0-9_]{0,62}$/.test(n)) throw new Error(`test database name '${n}': lower case letters, digits and _`);
      asPostgres([path.join(PG_BIN_DIR, 'psql'), '-h', dir, '-d', 'postgres', '-q', '-c', `CREATE DATABASE ${name} TEMPLATE ${from}`]);
      return url(name);
    },
    stop,
    restart(): void {
      cluster.pause();
      start();
    },
    pause(): void {
      asPostgres([ctl, '-D', data, '-m', 'fast', '-w', '-t', String(PG_CTL_WAIT_SECONDS), 'stop']);
      started = false;
    },
    resume: () => start(),
    query(name: string, sql: string): string {
      return asPostgres([path.join(PG_BIN_DIR, 'psql'), '-h', dir, '-d', name, '-qAt', '-c', sql]);
    },
    dumpRows(name: string): string {
      const dump = execFileSync('runuser', ['-u', 'postgres', '--', path.join(PG_BIN_DIR, 'pg_dump'), '-h', dir, '-d', name, '--data-only'],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: DUMP_BYTES_MAX });
      // Per table: rows and a digest (the intents' spans make a whole dump megabytes long); then the sequences.
      const tables = [...dump.matchAll(/^COPY (\S+) .*FROM stdin;\n([\s\S]*?)^\\\.$/gm)]
        .map((m) => `${m[1]} ${m[2].split('\n').length - 1} rows ${createHash('sha256').update(m[2]).digest('hex').slice(0, 16)}`);
      return [...tables, ...dump.split('\n').filter((l) => l.startsWith('SELECT pg_catalog.setval'))].join('\n');
    },
  };
  running.add(cluster);
  if (!exitHookSet) {
    exitHookSet = true;
    process.on('exit', () => { for (const c of [...running]) c.stop(); });
    // A test process killed by a signal (Ctrl-C, a runner's timeout) stops its servers too, then dies of it.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const onSignal = (): void => {
        for (const c of [...running]) c.stop();
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      };
      process.on(signal, onSignal);
    }
  }
  try {
    // C locale: names sort by bytes, as SQLite's BINARY collation does; UTF8 for any file name.
    asPostgres([path.join(PG_BIN_DIR, 'initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--locale=C', '--encoding=UTF8']);
    start();
  } catch (err) {
    stop();
    throw err;
  }
  return cluster;
}

/**
 * The usual frame of a PostgreSQL test file: pgTest (serial, or skipped with a logged reason when
 * the server binaries are missing), freshDb() (a new database named prefix + a number on one
 * cluster started on first use), and the cluster stopped after the file's tests.
 */
export function pgTestFile(test: TestFn, prefix: string): { pgTest: TestFn['serial'] | TestFn['skip']; freshDb: () => string; cluster: () => PgCluster } {
  const unavailable = pgUnavailableReason();
  const pgTest: TestFn['serial'] | TestFn['skip'] = unavailable === null ? test.serial : test.skip;
  if (unavailable !== null) test('PostgreSQL tests skipped', (t) => { t.log(`skipped: ${unavailable}`); t.pass(); });
  let cluster: PgCluster | null = null;
  let databases = 0;
  test.after.always(() => cluster?.stop());
  const started = (): PgCluster => (cluster ??= startPgCluster());
  return { pgTest, freshDb: () => started().createDatabase(`${prefix}${++databases}`), cluster: started };
}
