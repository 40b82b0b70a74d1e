// A store's metadata on PostgreSQL (DESIGN §9), on a real throwaway cluster
// (test/helpers/pg-cluster.ts): mkfs records the engine and connection string (never a password),
// open reads it, bad connection strings and a missing database are refused naming them before
// anything is written, values the SQLite engine round-trips (u64 seeds, blobs, far times, byte
// order of names) round-trip here too, and fsync's full commit is a durable commit on the server.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { Store } from '../../../../store/store';
import { ROOT_INO } from '../../../../store/meta/meta';
import type { Db } from '../../../../store/meta/sql-engine';
import { parseMetaTarget } from '../../../../store/meta/postgres/target';
import { parseConninfo, withKeyword } from '../../../../store/meta/postgres/conninfo';
import { connectPg } from '../../../../store/meta/postgres/connect';
import { pgTestFile, privateCluster, startPgCluster } from '../../../helpers/pg-cluster';
import { REPO_ROOT } from '../../../helpers/root';
import { SMALL, tmpDir, writeBehind } from '../../helpers';

const run = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'dist', 'cli', 'cli.js');
const CLI_TIMEOUT_MS = 60_000;
const { pgTest, freshDb, cluster } = pgTestFile(test, 'pgmeta');

test('a connection string with a password, another scheme or no database is refused, naming it', (t) => {
  t.throws(() => parseMetaTarget('postgres://u:secret@db.example/meta'), {
    message: /holds a password.*PGPASSWORD or ~\/\.pgpass/,
  });
  t.notRegex(
    t.throws(() => parseMetaTarget('postgres://u:secret@db.example/meta'))!.message,
    /secret/,
    'the password is not echoed',
  );
  t.throws(() => parseMetaTarget('postgresql:///meta?host=/run/postgresql&password=secret'), {
    message: /holds a password/,
  });
  t.throws(() => parseMetaTarget('mysql://u@h/db'), { message: /'mysql:\/\/u@h\/db'.*scheme 'mysql:'/ });
  t.throws(() => parseMetaTarget('postgres://u@h/'), { message: /names no database/ });
  t.throws(() => parseMetaTarget('not a uri'), { message: /'not a uri': not a PostgreSQL connection string/ });
  t.throws(() => parseMetaTarget("host=/run/postgresql password='a b' dbname=x"), {
    message: /password=\*\*\* dbname=x'?: holds a password/,
  });
  t.throws(() => parseMetaTarget('postgres://u:@h/meta'), { message: /holds a password/ }, 'an empty one too');
  t.throws(() => parseMetaTarget('host=/run/postgresql user=u'), { message: /names no database \(dbname=DATABASE\)/ });
  t.throws(() => parseMetaTarget('postgresql://h:port/db'), { message: /invalid port 'port'/ });
  t.throws(() => parseMetaTarget("dbname='x"), { message: /unterminated quoted value/ });
  t.is(parseMetaTarget('postgresql:///meta?host=/run/postgresql').url, 'postgresql:///meta?host=/run/postgresql');
});

test('the connection string forms libpq takes parse as libpq parses them', (t) => {
  const parsed = (s: string): Record<string, string> => Object.fromEntries(parseConninfo(s).values);
  t.deepEqual(parsed('postgres://u@/db?host=/socket/dir'), { user: 'u', dbname: 'db', host: '/socket/dir' });
  t.deepEqual(parsed('postgresql://%2Fvar%2Frun%2Fpostgresql/db'), { host: '/var/run/postgresql', dbname: 'db' });
  t.deepEqual(parsed('postgresql://h1:5432,h2:5433/db?target_session_attrs=read-write'), {
    host: 'h1,h2',
    port: '5432,5433',
    dbname: 'db',
    target_session_attrs: 'read-write',
  });
  t.deepEqual(parsed('postgresql://[::1]:5433/d%20b'), { host: '::1', port: '5433', dbname: 'd b' });
  t.deepEqual(parsed("host=/tmp dbname = 'my \\'db\\'' user=x"), { host: '/tmp', dbname: "my 'db'", user: 'x' });
  t.is(withKeyword('postgresql:///db', 'connect_timeout', '10'), 'postgresql:///db?connect_timeout=10');
  t.is(
    withKeyword('postgresql:///db?host=/tmp', 'connect_timeout', '10'),
    'postgresql:///db?host=/tmp&connect_timeout=10',
  );
  t.is(withKeyword('dbname=db', 'connect_timeout', '10'), 'dbname=db connect_timeout=10');
  for (const s of [
    'postgres://u@/db?host=/socket/dir',
    'host=/run/postgresql dbname=meta',
    'postgresql://h1:5432,h2:5433/db?target_session_attrs=any',
  ]) {
    t.is(parseMetaTarget(s).url, s);
  }
});

pgTest(
  'mkfs records the engine and URI; open reads them; names, bytes, u64 seeds, xattr blobs and far times round-trip',
  async (t) => {
    const url = freshDb();
    const dir = path.join(tmpDir(), 'store');
    const store = await Store.create(dir, { disks: 3, layout: 'replica:2', ...SMALL, meta: url });
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'chunkfs.json'), 'utf8'));
    t.deepEqual(config.meta, { engine: 'postgres', url });
    t.false(fs.existsSync(path.join(dir, 'meta.db')), 'no SQLite database beside a PostgreSQL one');
    const names = ['b', 'B', 'a_b', 'ä', 'a%'];
    const files = names.map((n, i) => ({
      n,
      ino: store.ns.create(ROOT_INO, n, 0o644, 1000, 1000).ino,
      data: Buffer.alloc(70_000 + i, i + 1),
    }));
    // Seeds past 2^63 are stored signed (u64ToDb): the placement of the first file's chunks depends on it.
    const db = (store as unknown as { db: Db }).db;
    const setSeed = db.prepare('UPDATE inodes SET placement_seed = ? WHERE ino = ?');
    writeBehind(db, () => setSeed.run(-2n, files[0].ino));
    for (const f of files) await store.write(f.ino, 0, f.data);
    store.ns.setxattr(files[0].ino, 'user.blob', Buffer.from([0, 1, 255, 0x5c, 0x78]));
    store.ns.setattr(files[1].ino, { mtimeNs: 10n ** 20n }); // past 2262: a far time (store/meta/far-times.ts)
    await store.close();
    const again = await Store.open(dir);
    t.deepEqual(
      again.ns.readdir(ROOT_INO).map((e) => e.name),
      [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
      'byte order, as SQLite',
    );
    for (const f of files) t.true((await again.read(f.ino, 0, f.data.length)).equals(f.data), f.n);
    const seed = (again as unknown as { db: Db }).db
      .prepare('SELECT placement_seed AS s FROM inodes WHERE ino = ?')
      .get(files[0].ino) as { s: bigint };
    t.is(seed.s, -2n, 'the seed 2^64 - 2 as its signed BIGINT');
    t.deepEqual([...again.ns.getxattr(files[0].ino, 'user.blob')], [0, 1, 255, 0x5c, 0x78]);
    t.is(again.ns.attr(files[1].ino).mtimeNs, 10n ** 20n);
    t.deepEqual(
      again.ns.unlinkByPrefix('a_', 10).map((r) => r.name),
      ['a_b'],
      "'_' is no wildcard",
    );
    await again.close();
  },
);

pgTest('a missing database or an unreachable server is refused before anything is written, naming it', async (t) => {
  freshDb(); // the cluster runs
  const missing = cluster().url('no_such_db');
  const dir = path.join(tmpDir(), 'store');
  const err = await t.throwsAsync(Store.create(dir, { disks: 3, layout: 'replica:2', meta: missing }));
  t.regex(err!.message, /no_such_db/);
  t.regex(err!.message, /does not exist.*create it first/);
  t.false(fs.existsSync(path.join(dir, 'chunkfs.json')), 'no store made');
  const nowhere = `postgresql:///meta?host=${encodeURIComponent(path.join(tmpDir(), 'no-server'))}&user=postgres`;
  const err2 = await t.throwsAsync(
    Store.create(path.join(tmpDir(), 'store'), { disks: 3, layout: 'replica:2', meta: nowhere }),
  );
  t.regex(err2!.message, /no-server.*cannot connect to the PostgreSQL metadata database/);
});

pgTest(
  'opening a store whose database is gone, or whose config names a bad connection string, is refused naming it (read-write, read-only and following)',
  async (t) => {
    const dir = path.join(tmpDir(), 'store');
    await (await Store.create(dir, { disks: 3, layout: 'replica:2', meta: freshDb() })).close();
    const configFile = path.join(dir, 'chunkfs.json');
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
    const setUrl = (url: string): void =>
      fs.writeFileSync(configFile, JSON.stringify({ ...config, meta: { engine: 'postgres', url } }), { mode: 0o600 });
    const opens = [{}, { readOnly: true }, { readOnly: true, follow: true }];
    setUrl(cluster().url('gone_db'));
    for (const o of opens) {
      const err = await t.throwsAsync(Store.open(dir, o));
      t.regex(err!.message, /gone_db.*does not exist.*create it first/, JSON.stringify(o));
    }
    setUrl('postgresql:///x?host=/nonexistent/sockets');
    for (const o of opens) {
      const err = await t.throwsAsync(Store.open(dir, o));
      t.regex(err!.message, /postgresql:\/\/\/x\?host=\/nonexistent\/sockets.*cannot connect/, JSON.stringify(o));
    }
    setUrl('mysql://u@h/db');
    const err = await t.throwsAsync(Store.open(dir, {}));
    t.regex(err!.message, /'mysql:\/\/u@h\/db'.*scheme 'mysql:'/);
    const cli = (await t.throwsAsync(
      run(process.execPath, [CLI, 'status', dir], { timeout: CLI_TIMEOUT_MS }),
    )) as Error & { stderr: string };
    t.regex(cli.stderr, /mysql:\/\/u@h\/db/);
  },
);

pgTest('a database that holds a store already is refused by mkfs', async (t) => {
  const url = freshDb();
  (await Store.create(path.join(tmpDir(), 'store'), { disks: 3, layout: 'replica:2', meta: url })).close();
  const err = await t.throwsAsync(
    Store.create(path.join(tmpDir(), 'store'), { disks: 3, layout: 'replica:2', meta: url }),
  );
  t.regex(err!.message, /already holds chunkfs metadata/);
});

pgTest(
  'chunkfs mkfs --meta: the CLI makes a store on PostgreSQL, refuses a password and a missing database, naming them',
  async (t) => {
    const url = freshDb();
    const dir = path.join(tmpDir(), 'store');
    const ok = await run(process.execPath, [CLI, 'mkfs', dir, '--disks', '3', '--layout', 'replica:2', '--meta', url], {
      timeout: CLI_TIMEOUT_MS,
    });
    t.regex(ok.stdout, /metadata in postgresql:\/\/\/pgmeta/);
    const status = await run(process.execPath, [CLI, 'status', dir, '--json'], { timeout: CLI_TIMEOUT_MS });
    t.is(JSON.parse(status.stdout).openIntents, 0, 'status opens the store through the recorded engine');
    const text = await run(process.execPath, [CLI, 'status', dir], { timeout: CLI_TIMEOUT_MS });
    t.regex(
      text.stdout,
      /^metadata: postgres postgresql:\/\/\/pgmeta\d+(_p\d+v\d+)?\?host=.*; lease: not held$/m,
      'read-only: no lease taken',
    );
    const bad = (await t.throwsAsync(
      run(process.execPath, [CLI, 'mkfs', path.join(tmpDir(), 's'), '--meta', 'postgres://u:pw@localhost/x'], {
        timeout: CLI_TIMEOUT_MS,
      }),
    )) as Error & { stderr: string };
    t.regex(bad.stderr, /postgres:\/\/u:\*\*\*@localhost\/x.*holds a password/);
    const missing = (await t.throwsAsync(
      run(process.execPath, [CLI, 'mkfs', path.join(tmpDir(), 's'), '--meta', cluster().url('nope')], {
        timeout: CLI_TIMEOUT_MS,
      }),
    )) as Error & { stderr: string };
    t.regex(missing.stderr, /nope.*does not exist/);
  },
);

pgTest(
  "fsync is the commit point (DESIGN §5): metadata commits are not flushed one by one; sync flushes the server's WAL past them, once",
  async (t) => {
    // The WAL writer flushes asynchronous commits only every 10 s here, so only the commit point can.
    const slow = startPgCluster({ wal_writer_delay: '10s', autovacuum: 'off' });
    try {
      const store = await Store.create(path.join(tmpDir(), 'store'), {
        disks: 3,
        layout: 'replica:2',
        ...SMALL,
        meta: slow.createDatabase('commits'),
      });
      const db = (store as unknown as { db: Db }).db;
      // Bytes of WAL up to lsn that are not flushed yet (the server's own background records may follow it).
      const unflushedUpTo = (lsn: string): bigint =>
        BigInt(
          (
            db.prepare('SELECT pg_wal_lsn_diff(CAST(? AS pg_lsn), pg_current_wal_flush_lsn()) AS n').get(lsn) as {
              n: bigint;
            }
          ).n,
        );
      const insertLsn = (): string =>
        (db.prepare('SELECT CAST(pg_current_wal_insert_lsn() AS text) AS l').get() as { l: string }).l;
      await store.sync();
      const flushes = (await store.status()).metadataFlushes;
      const d = store.ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0);
      for (let i = 0; i < 20; i++) store.ns.create(d.ino, `f${i}`, 0o644, 0, 0);
      const committed = insertLsn();
      t.true(unflushedUpTo(committed) > 0n, 'committed (visible) but not yet flushed: no device flush per operation');
      t.is((await store.status()).metadataFlushes, flushes, 'no full commit before the sync');
      await store.sync();
      t.true(unflushedUpTo(committed) <= 0n, 'after sync every commit before it is in the flushed WAL');
      t.is((await store.status()).metadataFlushes, flushes + 1, 'one full commit');
      await store.sync();
      t.is((await store.status()).metadataFlushes, flushes + 1, 'none when nothing changed');
      await store.close();
    } finally {
      slow.stop();
    }
  },
);

/** Opens the store read-write in a child process with a short lease, writes and fsyncs a file, then waits to be killed. */
function leaseHolder(dir: string, leaseMs: number): { child: ReturnType<typeof spawn>; ready: Promise<void> } {
  // Another machine: the holder's host name differs from this process's (a dead holder on this host
  // is taken over at once, store/meta/postgres/lease.ts).
  const child = spawn(
    process.execPath,
    [
      '-e',
      `
require('node:os').hostname = () => 'machine-a';
const { Store } = require(${JSON.stringify(path.join(REPO_ROOT, 'dist', 'store', 'store'))});
(async () => {
  const s = await Store.open(process.argv[1], { leaseMs: ${leaseMs}, lockNote: 'lease test holder' });
  const f = s.ns.create(1, 'held', 0o644, 0, 0);
  await s.write(f.ino, 0, Buffer.alloc(100000, 7));
  await s.sync();
  process.stdout.write('ready\\n');
  setInterval(() => undefined, 1000);
})().catch((e) => { console.error(e); process.exit(1); });
`,
      dir,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (b: Buffer) => {
      if (b.toString().includes('ready')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`lease holder exited (${code}) before it was ready`)));
  });
  return { child, ready };
}

const LEASE_TEST_MS = 2000;
/** Fail-over waits for expiry: tries at most this many times, LEASE_TEST_MS / 4 apart. */
const TAKEOVER_TRIES_MAX = 40;

pgTest(
  "lease (DESIGN §9): a second read-write opener is refused naming the holder; after kill -9 of the holder it takes over once the lease expires, with every fsync'd byte",
  async (t) => {
    const url = freshDb();
    const dir = path.join(tmpDir(), 'store');
    await (await Store.create(dir, { disks: 3, layout: 'replica:2', ...SMALL, meta: url })).close();
    // "Another machine that sees the same disk directories": a second store directory naming the same
    // disks (absolute paths) and the same database.
    const other = path.join(tmpDir(), 'other');
    fs.mkdirSync(other, { mode: 0o700 });
    for (const f of ['chunkfs.json', 'bitrot.key', 'data.key'])
      if (fs.existsSync(path.join(dir, f))) fs.copyFileSync(path.join(dir, f), path.join(other, f));
    const config = JSON.parse(fs.readFileSync(path.join(other, 'chunkfs.json'), 'utf8'));
    for (const d of config.disks) d.path = path.resolve(dir, d.path);
    fs.writeFileSync(path.join(other, 'chunkfs.json'), JSON.stringify(config, null, 2));

    const holder = leaseHolder(dir, LEASE_TEST_MS);
    try {
      await holder.ready;
      const refused = await t.throwsAsync(Store.open(other));
      t.regex(
        refused!.message,
        new RegExp(`open read-write by machine-a pid ${holder.child.pid} \\(lease test holder\\)`),
      );
      const status = await Store.open(other, { readOnly: true });
      t.is((await status.status()).metadata.lease?.pid, holder.child.pid, 'status shows the holder');
      await status.close();
      holder.child.kill('SIGKILL');
      const refusedAgain = await t.throwsAsync(
        Store.open(other),
        undefined,
        "the dead holder's lease has not expired yet",
      );
      t.regex(refusedAgain!.message, /expires in/);
      let taken: Store | null = null;
      for (let i = 0; i < TAKEOVER_TRIES_MAX && taken === null; i++) {
        await new Promise((resolve) => setTimeout(resolve, LEASE_TEST_MS / 4));
        taken = await Store.open(other).catch(() => null);
      }
      t.not(taken, null, 'taken over after expiry');
      const held = taken!.ns.lookup(ROOT_INO, 'held');
      t.true((await taken!.read(held!.ino, 0, 100000)).equals(Buffer.alloc(100000, 7)), "the fsync'd bytes are there");
      t.is((await taken!.status()).metadata.lease?.pid, process.pid);
      await taken!.close();
      const after = await Store.open(other, { readOnly: true });
      t.is((await after.status()).metadata.lease, null, 'close gives the lease back');
      await after.close();
    } finally {
      holder.child.kill('SIGKILL');
    }
  },
);

/** Operations tried after a server restart until one succeeds (the first may fail with the old connection). */
const AFTER_RESTART_TRIES_MAX = 200; // x 300 ms: a bound far past a loaded machine's reconnection

pgTest(
  'the server restarted under an open store: an operation may fail, the next ones run on a new connection; nothing committed is lost',
  async (t) => {
    const restartable = privateCluster(); // restarted: not the run's shared cluster
    try {
      const store = await Store.create(path.join(tmpDir(), 'store'), {
        disks: 3,
        layout: 'replica:2',
        ...SMALL,
        meta: restartable.createDatabase('restart'),
      });
      const before = store.ns.create(ROOT_INO, 'before', 0o644, 0, 0);
      await store.write(before.ino, 0, Buffer.alloc(50_000, 3));
      await store.sync();
      store.ns.mkdir(ROOT_INO, 'committed-not-synced', 0o755, 0, 0); // a fast shutdown flushes it too
      restartable.restart();
      let failures = 0;
      let after = null;
      for (let i = 0; i < AFTER_RESTART_TRIES_MAX && after === null; i++) {
        try {
          after = store.ns.create(ROOT_INO, 'after', 0o644, 0, 0);
        } catch (err) {
          failures++;
          t.regex((err as Error).message, /connection|terminat|server closed/i, 'a connection error, not another one');
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
      }
      t.not(after, null, `served again after ${failures} failed tries`);
      await store.write(after!.ino, 0, Buffer.alloc(20_000, 4));
      await store.sync();
      t.deepEqual(
        store.ns.readdir(ROOT_INO).map((e) => e.name),
        ['after', 'before', 'committed-not-synced'],
      );
      t.true((await store.read(before.ino, 0, 50_000)).equals(Buffer.alloc(50_000, 3)));
      t.true((await store.read(after!.ino, 0, 20_000)).equals(Buffer.alloc(20_000, 4)));
      await store.close();
    } finally {
      restartable.stop();
    }
  },
);

pgTest(
  "a new store's keyed statements keep index plans as its tables grow: the session turns sequential scans and JIT off",
  async (t) => {
    const url = freshDb();
    const store = await Store.create(path.join(tmpDir(), 'store'), {
      disks: 1,
      layout: 'replica:1',
      ...SMALL,
      meta: url,
    });
    await store.close();
    const db = connectPg(url);
    try {
      const setting = (name: string): string =>
        (db.prepare(`SELECT current_setting('${name}') AS v`).get() as { v: string }).v;
      t.is(setting('enable_seqscan'), 'off');
      t.is(setting('jit'), 'off');
      // The plan a prepared statement keeps (generic), made while inodes fits in one page.
      db.exec('SET plan_cache_mode = force_generic_plan');
      db.exec('PREPARE touch_ino(bigint, bigint) AS UPDATE inodes SET mtime_ns = $1 WHERE ino = $2');
      const plan = (db.prepare('EXPLAIN EXECUTE touch_ino(1, 1)').all() as Array<Record<string, string>>)
        .map((r) => Object.values(r)[0])
        .join('\n');
      t.regex(plan, /Index Scan using inodes_pkey/, plan);
      t.notRegex(plan, /Seq Scan/);
      // A read of a whole table (no index serves it) still runs, without JIT compiling.
      const all = (
        db.prepare('EXPLAIN SELECT * FROM reclaim ORDER BY queued_ns LIMIT 10').all() as Array<Record<string, string>>
      )
        .map((r) => Object.values(r)[0])
        .join('\n');
      t.regex(all, /Seq Scan on reclaim/);
      t.notRegex(all, /JIT/);
    } finally {
      db.close();
    }
  },
);
