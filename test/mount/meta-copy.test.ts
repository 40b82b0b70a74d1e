// `chunkfs meta copy` (DESIGN §9; store/meta-move.ts) through the path users take:
// a store on SQLite (on PostgreSQL with CHUNKFS_TEST_META=postgres) written through the mount (cp -a,
// tar, a large file in chunks, small files in containers, symlink, hard link, fifo, xattrs, an ACL
// (fuse3), and fsync'd writes left pending by kill -9 of the mount: SQLite's intent log is folded
// first, PostgreSQL's intent rows move with the rest), moved to the other engine (PostgreSQL: a
// throwaway cluster) and back: after each move scrub is clean and a mount on the new engine shows
// every file, its bytes, inode number, mode, links, times and xattrs as before. Refused: while
// mounted, into a target holding a store, to a bad connection string (named). A copy killed with
// SIGKILL midway, in both directions, leaves the store serving on its old engine and the target
// reusable. Rows/s of the copy: logged (t.log).
import test, { ExecutionContext } from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { storeFixture, shOk, run, chunkfsCli, chunkfsOk, CLI_JS, PYTHON, TRANSPORT } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';
import { badRecords, writeRecordsUntilKilled } from '../helpers/acked-writer';
import { PgCluster, pgUnavailableReason, startPgCluster } from '../helpers/pg-cluster';

const unavailable = pgUnavailableReason();
/** POSIX ACLs are libfuse3's (fuse-native answers setfacl with EOPNOTSUPP). */
const ACL = TRANSPORT !== 'fuse-native';
/** Records the pending-intent writer fsyncs before the mount is killed: a few, well within the 5 s an EC chunk's intents gather. */
const ACKS_BEFORE_KILL = 12;
const WRITER_WAIT_MS = 120_000;
/** Empty files for the timing and kill tests (~10,000 inodes). */
const MANY_FILES = 10_000;

// Every path under a root: relative path, inode, mode, uid, gid, links, mtime, and by type the
// size and sha256 of the bytes, the symlink target; xattrs (ACLs among them) with their values.
const MANIFEST_PY = `
import hashlib, json, os, stat, sys
root = sys.argv[1]
out = []
for d, dirs, files in os.walk(root):
    dirs.sort()
    for n in sorted(dirs + files):
        p = os.path.join(d, n)
        st = os.lstat(p)
        e = [os.path.relpath(p, root), st.st_ino, st.st_mode, st.st_uid, st.st_gid, st.st_nlink, st.st_mtime_ns]
        if stat.S_ISREG(st.st_mode):
            e += [st.st_size, hashlib.sha256(open(p, 'rb').read()).hexdigest()]
        if stat.S_ISLNK(st.st_mode):
            e.append(os.readlink(p))
        else:
            e.append(sorted([k, os.getxattr(p, k).hex()] for k in os.listxattr(p)))
        out.append(e)
print(json.dumps(out))
`;

let cluster: PgCluster | null = null;
const fixture = storeFixture(test, 'metacopy', {
  mkfs: ['--disks', '4', '--layout', 'replica:2', '--chunk-size', '1M'],
});
test.after.always(() => cluster?.stop());

async function manifest(root: string): Promise<unknown[]> {
  const r = await run(PYTHON, ['-c', MANIFEST_PY, root], { timeoutMs: 120_000 });
  if (r.code !== 0) throw new Error(`manifest of ${root}: ${r.stderr}`);
  return JSON.parse(r.stdout) as unknown[];
}

function configMeta(): unknown {
  return (JSON.parse(fs.readFileSync(path.join(fixture.store, 'chunkfs.json'), 'utf8')) as { meta?: unknown }).meta;
}

/** The old SQLite metadata moved aside, as the copy back to SQLite asks (meta.db is never replaced). */
function moveSqliteAside(tag: string): void {
  for (const s of ['', '-wal', '-shm']) {
    const f = path.join(fixture.store, `meta.db${s}`);
    if (fs.existsSync(f)) fs.renameSync(f, path.join(fixture.store, `meta.db.${tag}${s}`));
  }
}

const RMW_PATH = 'ec/rmw.bin';

function withoutRmw(entries: unknown[]): unknown[] {
  return entries.filter((e) => (e as unknown[])[0] !== RMW_PATH);
}

/**
 * Scrub clean (it replays what the intent log holds), then a mount shows the reference manifest,
 * every fsync'd record of the overwritten file, and the trees equal to their sources.
 */
async function checkStore(
  t: { deepEqual: (a: unknown, b: unknown, m?: string) => void; is: (a: unknown, b: unknown, m?: string) => void },
  reference: unknown[],
  bigSource: string,
  engine: string,
  acked: number,
): Promise<void> {
  await chunkfsOk(['scrub', fixture.store]);
  const m = await fixture.mount();
  try {
    const status = await chunkfsOk(['status', fixture.store]);
    if (!status.includes(`metadata: ${engine}`)) throw new Error(`status does not name ${engine}: ${status}`);
    t.deepEqual(withoutRmw(await manifest(m.mountpoint)), reference, `every file on ${engine} as before`);
    t.is(
      await badRecords(path.join(m.mountpoint, RMW_PATH), acked, 'overwrite'),
      '0 []',
      `every fsync'd record on ${engine}`,
    );
    await shOk(
      `diff -r ${REPO_ROOT}/store ${m.mountpoint}/tree && diff -r ${REPO_ROOT}/docs ${m.mountpoint}/docs && cmp ${bigSource} ${m.mountpoint}/big.bin`,
    );
  } finally {
    await m.stop();
  }
}

/** Start a copy with one row per batch; SIGKILL it once it says it copies `table`. Its stderr. */
async function killCopyAt(to: string, table: string): Promise<string> {
  const child = spawn(process.execPath, [CLI_JS, 'meta', 'copy', fixture.store, '--to', to, '--batch-rows', '1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`copy did not reach ${table}: ${err}`));
    }, WRITER_WAIT_MS);
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
      if (err.includes(`copying ${table}:`)) child.kill('SIGKILL');
    });
    child.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return err;
}

/** The metadata the store's config names now: undefined (SQLite, meta.db) or a PostgreSQL database. */
type MetaNamed = { engine: string; url: string } | undefined;

/**
 * A target on the engine the store is not on now: a new database of the test cluster, or SQLite
 * (meta.db of an earlier move moved aside, as meta copy asks).
 */
function otherEngine(tag: string): string {
  if (configMeta() === undefined) return cluster!.createDatabase(tag);
  moveSqliteAside(`before-${tag}`);
  return 'sqlite';
}

function engineOf(to: string): string {
  return to === 'sqlite' ? 'sqlite' : 'postgres';
}

/** The config's meta once a copy to `to` is done. */
function namedOf(to: string): MetaNamed {
  return to === 'sqlite' ? undefined : { engine: 'postgres', url: to };
}

/** Where the store's metadata stays after a move away from `from`: meta.db, or that database. */
function leftBehindPattern(from: MetaNamed): RegExp {
  return from === undefined ? /meta\.db/ : new RegExp(new URL(from.url).pathname.replace(/^\//, ''));
}

/** After a completed copy to `to`: the config names it; a SQLite target is meta.db, private, no .copy left. */
function checkSwitched(t: ExecutionContext, to: string): void {
  t.deepEqual(configMeta(), namedOf(to), `the config names ${engineOf(to)}`);
  if (to !== 'sqlite') return;
  t.false(fs.existsSync(path.join(fixture.store, 'meta.db.copy')), 'no meta.db.copy left');
  t.is(fs.statSync(path.join(fixture.store, 'meta.db')).mode & 0o777, 0o600);
}

/** The database left holding the store by the first test's moves (the refusal of the second). */
let heldDatabase = '';

if (unavailable !== null) {
  test('meta copy tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial(
    'to the other engine and back: scrub clean and every file as before, pending log records moved',
    async (t) => {
      cluster = startPgCluster();
      const home = configMeta() as MetaNamed;
      const big = path.join(fixture.dir, 'big.bin');
      await shOk(`head -c 3500000 /dev/urandom > ${big}`);
      const m = await fixture.mount();
      const mp = m.mountpoint;
      await shOk(
        `cp -a ${REPO_ROOT}/store ${mp}/tree && mkdir ${mp}/docs && tar -C ${REPO_ROOT}/docs -cf - . | tar -C ${mp}/docs -xf - && ` +
          `cp ${big} ${mp}/big.bin && mkdir ${mp}/ec && setfattr -n user.chunkfs.layout -v ec:2+1 ${mp}/ec && cp ${big} ${mp}/${RMW_PATH} && echo small > ${mp}/small.txt && ln -s tree/store.ts ${mp}/link && ` +
          `ln ${mp}/big.bin ${mp}/big.hard && mkfifo ${mp}/fifo && setfattr -n user.color -v blue ${mp}/big.bin && ` +
          `${ACL ? `setfacl -m u:65534:rx ${mp}/tree && ` : ''}mkdir ${mp}/empty`,
      );
      // The reference, before the writer: every path but the file it overwrites, checked by its records.
      const reference = withoutRmw(await manifest(mp));
      t.true(reference.length > 100, `${reference.length} paths`);
      const acked = await writeRecordsUntilKilled(m, path.join(mp, RMW_PATH), ACKS_BEFORE_KILL, 'overwrite');
      t.true(acked >= ACKS_BEFORE_KILL, `acks ${acked}`);

      const before = JSON.parse(await chunkfsOk(['status', fixture.store, '--json'])) as {
        intentBacklog: { intents: number };
      };
      t.true(before.intentBacklog.intents > 0, "fsync'd writes pending");
      const away = otherEngine('roundtrip');
      const copied = await chunkfsCli(['meta', 'copy', fixture.store, '--to', away, '--json']);
      t.is(copied.code, 0, copied.stderr);
      const report = JSON.parse(copied.stdout) as {
        rows: number;
        rowsPerSecond: number;
        tables: Array<{ name: string; rows: number }>;
        leftBehind: string;
      };
      t.log(
        `to ${engineOf(away)}: ${report.rows} rows, ${Math.round(report.rowsPerSecond)} rows/s; ` +
          `${before.intentBacklog.intents} intents pending`,
      );
      const intentRows = report.tables.find((x) => x.name === 'intents')!.rows;
      if (home === undefined) {
        // SQLite's pending writes are intent log records (DESIGN §5), not rows: folded first.
        t.regex(copied.stderr, /folding the intent log into the shards first/);
        t.is(intentRows, 0, 'nothing left pending: the log was folded');
        t.true(fs.existsSync(path.join(fixture.store, 'meta.db')), 'the old metadata left in place');
      } else {
        // PostgreSQL keeps them as rows (DESIGN §5): they move with the metadata; the next open replays them.
        t.false(copied.stderr.includes('folding'), copied.stderr);
        t.true(intentRows > 0, `${intentRows} intent rows moved`);
      }
      t.regex(report.leftBehind, leftBehindPattern(home));
      checkSwitched(t, away);
      await checkStore(t, reference, big, engineOf(away), acked);

      // Back: meta.db (the old metadata) is never replaced; moved aside as the refusal says.
      let back = home?.url ?? 'sqlite';
      if (home === undefined) {
        const refused = await chunkfsCli(['meta', 'copy', fixture.store, '--to', 'sqlite']);
        t.is(refused.code, 1);
        t.regex(refused.stderr, /meta\.db: exists already .* move it aside/);
        moveSqliteAside('before-pg');
        heldDatabase = away;
      } else {
        heldDatabase = home.url; // still holds the store: back into a new database
        back = cluster.createDatabase('back');
      }
      const returned = JSON.parse(await chunkfsOk(['meta', 'copy', fixture.store, '--to', back, '--json'])) as {
        rows: number;
        rowsPerSecond: number;
        leftBehind: string;
      };
      t.log(`back to ${engineOf(back)}: ${returned.rows} rows, ${Math.round(returned.rowsPerSecond)} rows/s`);
      t.regex(returned.leftBehind, leftBehindPattern(namedOf(away)));
      checkSwitched(t, back);
      await checkStore(t, reference, big, engineOf(back), acked);
    },
  );

  test.serial(
    'refused while mounted, into a database holding a store, and to bad connection strings (named)',
    async (t) => {
      const now = configMeta();
      const m = await fixture.mount();
      const url = cluster!.createDatabase('refusals');
      const mounted = await chunkfsCli(['meta', 'copy', fixture.store, '--to', url]);
      await m.stop();
      t.is(mounted.code, 1);
      t.true(mounted.stderr.includes(`is mounted on ${m.mountpoint}`), mounted.stderr);
      const held = await chunkfsCli(['meta', 'copy', fixture.store, '--to', heldDatabase]);
      t.is(held.code, 1);
      const heldName = new URL(heldDatabase).pathname.replace(/^\//, '');
      t.regex(held.stderr, new RegExp(`${heldName}.*already holds chunkfs metadata \\(schema version \\d+`));
      const missing = await chunkfsCli(['meta', 'copy', fixture.store, '--to', cluster!.url('nosuchdb')]);
      t.is(missing.code, 1);
      t.regex(missing.stderr, /nosuchdb.*does not exist/);
      const password = await chunkfsCli(['meta', 'copy', fixture.store, '--to', 'postgres://u:secret@localhost/db']);
      t.regex(password.stderr, /postgres:\/\/u:\*\*\*@localhost\/db.*holds a password/);
      t.false(password.stderr.includes('secret'));
      const scheme = await chunkfsCli(['meta', 'copy', fixture.store, '--to', 'mysql://h/db']);
      t.regex(scheme.stderr, /'mysql:\/\/h\/db'.*scheme/);
      t.deepEqual(configMeta(), now, 'still on its engine');
      const again = await fixture.mount();
      await shOk(`cmp ${fixture.dir}/big.bin ${again.mountpoint}/big.bin`);
      await again.stop();
    },
  );

  test.serial(
    'SIGKILL midway, both directions: the store serves on its old engine, the target is reused',
    async (t) => {
      let m = await fixture.mount();
      await run(
        PYTHON,
        [
          '-c',
          `
import os, sys
os.mkdir(sys.argv[1])
for i in range(${MANY_FILES}):
    os.close(os.open(os.path.join(sys.argv[1], 'f%05d' % i), os.O_CREAT | os.O_WRONLY, 0o644))
`,
          path.join(m.mountpoint, 'many'),
        ],
        { timeoutMs: 300_000 },
      );
      await m.stop();
      for (const leg of ['there', 'back']) {
        const from = configMeta();
        const to = otherEngine(`killed_${leg}`);
        t.regex(await killCopyAt(to, 'dirents'), /copying inodes: \d+ rows/);
        t.deepEqual(configMeta(), from, `${leg}: the config still names the old engine`);
        if (to === 'sqlite')
          t.false(fs.existsSync(path.join(fixture.store, 'meta.db')), 'no meta.db made by the killed copy');
        m = await fixture.mount();
        t.is((await shOk(`ls ${m.mountpoint}/many | wc -l`)).trim(), String(MANY_FILES));
        await m.stop();
        // Nothing half-filled: the killed transaction was rolled back (PostgreSQL) or its meta.db.copy
        // is removed by the next attempt (SQLite), so the same target takes the copy.
        const done = JSON.parse(await chunkfsOk(['meta', 'copy', fixture.store, '--to', to, '--json'])) as {
          rows: number;
          rowsPerSecond: number;
          seconds: number;
        };
        t.log(
          `${leg}: ${MANY_FILES} more inodes, to ${engineOf(to)}: ${done.rows} rows in ` +
            `${done.seconds.toFixed(2)} s, ${Math.round(done.rowsPerSecond)} rows/s`,
        );
        checkSwitched(t, to);
      }
      await chunkfsOk(['scrub', fixture.store]);
      m = await fixture.mount();
      t.is((await shOk(`ls ${m.mountpoint}/many | wc -l`)).trim(), String(MANY_FILES));
      await m.stop();
    },
  );
}
