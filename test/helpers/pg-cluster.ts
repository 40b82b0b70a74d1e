// A throwaway PostgreSQL cluster for tests and benchmarks (a real PostgreSQL, never a
// mock; DESIGN §9). Debian's initdb and pg_ctl make it in a temporary directory owned by the
// `postgres` user (initdb refuses root), run as that user; it listens on a Unix socket in that
// directory only (no TCP). stop() (also run at process exit, so a failing test leaves nothing)
// stops it and deletes the directory. Connections use the `postgres` role, trusted on the socket.
//
// One cluster per test run: `npm test` (scripts/test/run-tests.ts) starts one and names its socket
// directory in CHUNKFS_TEST_PG_SOCKET; startPgCluster() then hands each caller a view of it (its
// databases named apart per view, dropped by stop()) instead of starting a server per test process
// (one or two seconds each). A test that stops, restarts or pauses the server takes its own with
// privateCluster(): those calls throw on a shared view, which other test processes are using.
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
/** Names the socket directory of the run's shared cluster (set by scripts/test/run-tests.ts). */
export const SHARED_CLUSTER_ENV = 'CHUNKFS_TEST_PG_SOCKET';
/** The socket file of a server listening in a directory (port 5432, the default). */
const SOCKET_FILE = '.s.PGSQL.5432';
/** A database name PostgreSQL keeps whole (NAMEDATALEN - 1 bytes), shared views' suffixes included. */
const DB_NAME_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/** Why PostgreSQL tests cannot run here, or null when they can. */
export function pgUnavailableReason(): string | null {
  for (const bin of ['initdb', 'pg_ctl']) {
    if (!fs.existsSync(path.join(PG_BIN_DIR, bin)))
      return `${path.join(PG_BIN_DIR, bin)} is missing (apt-get install postgresql)`;
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
  /** Starts the server paused by pause() or crashed by crash(). */
  resume(): void;
  /** Stops the server as a crash does (immediate: unflushed WAL is lost), keeping its data for resume(). */
  crash(): void;
  /**
   * A new private cluster streaming from this one (pg_basebackup -R): a hot standby in a socket
   * directory of its own, stopped and deleted by its own stop(). With synchronous_standby_names set
   * on this one (privateCluster's settings), a synchronous commit here waits for it.
   */
  standby(): PgCluster;
  /** A standby made by standby() becomes a primary (pg_ctl promote, waiting until it takes writes). */
  promote(): void;
  /** The rows of one query on database name, as psql prints them unaligned (fields split by |). */
  query(name: string, sql: string): string;
  /** Every table of database name: its row count and a digest of its rows as pg_dump writes them (same rows, same text); the sequences. */
  dumpRows(name: string): string;
}

/** What this process's exit stops: private clusters and shared views. */
const running = new Set<PgCluster>();
/** Servers this process started and has not stopped yet. */
const servers = new Set<PgCluster>();
let exitHookSet = false;

function asPostgres(args: string[]): string {
  return execFileSync('runuser', ['-u', 'postgres', '--', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * A cluster for the caller: a view of the run's shared cluster when there is one ($CHUNKFS_TEST_PG_SOCKET)
 * and no settings are asked for, else a private one (privateCluster). A shared view's restart(),
 * pause() and resume() throw: a test that needs them calls privateCluster().
 * settings: server settings (name -> value), e.g. { wal_writer_delay: '10s' }: a private cluster.
 */
export function startPgCluster(settings: Record<string, string> = {}): PgCluster {
  const shared = process.env[SHARED_CLUSTER_ENV];
  if (shared !== undefined && shared !== '' && Object.keys(settings).length === 0) return sharedCluster(shared);
  return privateCluster(settings);
}

/**
 * A new cluster of the caller's own, whatever the run shares: what a test that stops, restarts or
 * pauses the server needs. stopAtExit false: the caller stops it (scripts/test/run-tests.ts, which
 * waits for its test processes on a signal before stopping the cluster they use).
 */
export function privateCluster(settings: Record<string, string> = {}, stopAtExit = true): PgCluster {
  return newCluster(settings, stopAtExit, null);
}

/** A private cluster: made by initdb, or (primarySocket) copied from a running primary as its standby. */
function newCluster(settings: Record<string, string>, stopAtExit: boolean, primarySocket: string | null): PgCluster {
  const reason = pgUnavailableReason();
  if (reason !== null) throw new Error(`PostgreSQL unavailable: ${reason}`);
  if (servers.size >= CLUSTERS_MAX) throw new Error(`more than ${CLUSTERS_MAX} test clusters at once`);
  // Short: a Unix socket path must fit in 107 bytes.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfspg-'));
  execFileSync('chown', ['postgres:postgres', dir]);
  fs.chmodSync(dir, 0o700);
  const data = path.join(dir, 'data');
  const ctl = path.join(PG_BIN_DIR, 'pg_ctl');
  let started = false;
  const stop = (): void => {
    running.delete(cluster);
    servers.delete(cluster);
    if (started) {
      try {
        asPostgres([ctl, '-D', data, '-m', 'immediate', '-w', '-t', String(PG_CTL_WAIT_SECONDS), 'stop']);
      } catch {
        /* already stopped */
      }
      started = false;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const start = (): void => {
    // listen_addresses '' = no TCP; the socket lives in dir (0700: root and postgres only).
    const extra = Object.entries(settings)
      .map(([k, v]) => ` -c ${k}=${v}`)
      .join('');
    const opts = `-c listen_addresses='' -c unix_socket_directories='${dir}' -c max_connections=40 -c shared_buffers=32MB${extra}`;
    asPostgres([
      ctl,
      '-D',
      data,
      '-o',
      opts,
      '-l',
      path.join(dir, 'server.log'),
      '-w',
      '-t',
      String(PG_CTL_WAIT_SECONDS),
      'start',
    ]);
    started = true;
  };
  const url = (name: string): string => clusterUrl(dir, checkedName(name));
  const cluster: PgCluster = {
    socketDir: dir,
    url,
    createDatabase(name: string): string {
      asPostgres(psqlArgs(dir, 'postgres', `CREATE DATABASE ${checkedName(name)}`));
      return url(name);
    },
    copyDatabase(from: string, name: string): string {
      asPostgres(psqlArgs(dir, 'postgres', `CREATE DATABASE ${checkedName(name)} TEMPLATE ${checkedName(from)}`));
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
    crash(): void {
      asPostgres([ctl, '-D', data, '-m', 'immediate', '-w', '-t', String(PG_CTL_WAIT_SECONDS), 'stop']);
      started = false;
    },
    standby: () => newCluster({}, true, dir),
    promote(): void {
      asPostgres([ctl, '-D', data, '-w', '-t', String(PG_CTL_WAIT_SECONDS), 'promote']);
    },
    query: (name: string, sql: string): string => query(dir, name, sql),
    dumpRows: (name: string): string => dumpRows(dir, name),
  };
  servers.add(cluster);
  if (stopAtExit) stopAtProcessExit(cluster);
  try {
    if (primarySocket !== null) {
      // -R: standby.signal and primary_conninfo (the primary's socket), so it starts as a streaming standby.
      asPostgres([path.join(PG_BIN_DIR, 'pg_basebackup'), '-h', primarySocket, '-U', 'postgres', '-D', data, '-R']);
      start();
      return cluster;
    }
    // C locale: names sort by bytes, as SQLite's BINARY collation does; UTF8 for any file name.
    asPostgres([
      path.join(PG_BIN_DIR, 'initdb'),
      '-D',
      data,
      '-A',
      'trust',
      '-U',
      'postgres',
      '--no-sync',
      '--locale=C',
      '--encoding=UTF8',
    ]);
    start();
  } catch (err) {
    stop();
    throw err;
  }
  return cluster;
}

/**
 * A view of the run's shared cluster listening in socketDir: the names of its databases end with a
 * suffix of this view's (process id and a count), so test processes never meet (a name that has it,
 * read back from a URL the view gave, is kept). stop() drops the databases it made; the server runs on.
 */
function sharedCluster(socketDir: string): PgCluster {
  if (!fs.existsSync(path.join(socketDir, SOCKET_FILE))) {
    const what = `${SHARED_CLUSTER_ENV}=${socketDir}`;
    throw new Error(`${what}: no PostgreSQL server listens there (unset it to start a cluster per test file)`);
  }
  const suffix = `_p${process.pid}v${++sharedViews}`;
  const own = (name: string): string => checkedName(name.endsWith(suffix) ? name : name + suffix);
  const refuse = (what: string) => (): never => {
    throw new Error(
      `${what} on the run's shared PostgreSQL cluster, which other tests use: take privateCluster() for it`,
    );
  };
  const made = new Set<string>();
  const cluster: PgCluster = {
    socketDir,
    url: (name: string): string => clusterUrl(socketDir, own(name)),
    createDatabase(name: string): string {
      asPostgres(psqlArgs(socketDir, 'postgres', `CREATE DATABASE ${own(name)}`));
      made.add(own(name));
      return cluster.url(name);
    },
    copyDatabase(from: string, name: string): string {
      asPostgres(psqlArgs(socketDir, 'postgres', `CREATE DATABASE ${own(name)} TEMPLATE ${own(from)}`));
      made.add(own(name));
      return cluster.url(name);
    },
    stop(): void {
      running.delete(cluster);
      // All in one psql (a run makes some 600 databases, 5 GB if kept). FORCE: a test that failed
      // may have left a connection open; its database goes all the same.
      const drops = [...made].flatMap((name) => ['-c', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
      made.clear();
      if (drops.length === 0) return;
      try {
        asPostgres([path.join(PG_BIN_DIR, 'psql'), '-h', socketDir, '-d', 'postgres', '-q', ...drops]);
      } catch {
        /* the run's cluster is gone: nothing to drop */
      }
    },
    restart: refuse('restart()'),
    pause: refuse('pause()'),
    resume: refuse('resume()'),
    crash: refuse('crash()'),
    standby: refuse('standby()'),
    promote: refuse('promote()'),
    query: (name: string, sql: string): string => query(socketDir, own(name), sql),
    dumpRows: (name: string): string => dumpRows(socketDir, own(name)),
  };
  stopAtProcessExit(cluster);
  return cluster;
}

let sharedViews = 0;

function checkedName(name: string): string {
  if (!DB_NAME_RE.test(name)) {
    throw new Error(`test database name '${name}': lower case letters, digits and _, at most 63`);
  }
  return name;
}

function clusterUrl(socketDir: string, name: string): string {
  return `postgresql:///${name}?host=${encodeURIComponent(socketDir)}&user=postgres`;
}

function psqlArgs(socketDir: string, database: string, sql: string): string[] {
  return [path.join(PG_BIN_DIR, 'psql'), '-h', socketDir, '-d', database, '-q', '-c', sql];
}

function query(socketDir: string, name: string, sql: string): string {
  return asPostgres([path.join(PG_BIN_DIR, 'psql'), '-h', socketDir, '-d', name, '-qAt', '-c', sql]);
}

function dumpRows(socketDir: string, name: string): string {
  const dump = execFileSync(
    'runuser',
    ['-u', 'postgres', '--', path.join(PG_BIN_DIR, 'pg_dump'), '-h', socketDir, '-d', name, '--data-only'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: DUMP_BYTES_MAX },
  );
  // Per table: rows and a digest (the intents' spans make a whole dump megabytes long); then the sequences.
  const tables = [...dump.matchAll(/^COPY (\S+) .*FROM stdin;\n([\s\S]*?)^\\\.$/gm)].map(
    (m) =>
      `${m[1]} ${m[2].split('\n').length - 1} rows ${createHash('sha256').update(m[2]).digest('hex').slice(0, 16)}`,
  );
  return [...tables, ...dump.split('\n').filter((l) => l.startsWith('SELECT pg_catalog.setval'))].join('\n');
}

/** Stopped at this process's exit, or when a signal (Ctrl-C, a runner's timeout) kills it. */
function stopAtProcessExit(cluster: PgCluster): void {
  running.add(cluster);
  if (!exitHookSet) {
    exitHookSet = true;
    process.on('exit', () => {
      for (const c of [...running]) c.stop();
    });
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
}

/**
 * The usual frame of a PostgreSQL test file: pgTest (serial, or skipped with a logged reason when
 * the server binaries are missing), freshDb() (a new database named prefix + a number on one
 * cluster taken on first use: startPgCluster's), and the cluster stopped after the file's tests.
 */
export function pgTestFile(
  test: TestFn,
  prefix: string,
): { pgTest: TestFn['serial'] | TestFn['skip']; freshDb: () => string; cluster: () => PgCluster } {
  const unavailable = pgUnavailableReason();
  const pgTest: TestFn['serial'] | TestFn['skip'] = unavailable === null ? test.serial : test.skip;
  if (unavailable !== null)
    test('PostgreSQL tests skipped', (t) => {
      t.log(`skipped: ${unavailable}`);
      t.pass();
    });
  let cluster: PgCluster | null = null;
  let databases = 0;
  test.after.always(() => cluster?.stop());
  const started = (): PgCluster => (cluster ??= startPgCluster());
  return { pgTest, freshDb: () => started().createDatabase(`${prefix}${++databases}`), cluster: started };
}
