// `chunkfs meta copy` (issue 22 item 6, DESIGN §9; store/meta-move.ts) through the path users take:
// a store on SQLite written through the mount (cp -a, tar, a large file in chunks, small files in
// containers, symlink, hard link, fifo, xattrs, an ACL (fuse3), and fsync'd writes left in the intent log by kill -9
// of the mount, folded first), moved to a real PostgreSQL (a throwaway cluster) and back: after each move scrub
// is clean and a mount on the new engine shows every file, its bytes, inode number, mode, links,
// times and xattrs as before. Refused: while mounted, into a target holding a store, to a bad
// connection string (named). A copy killed with SIGKILL midway, in both directions, leaves the
// store serving on its old engine and the target reusable. Rows/s of the copy: logged (t.log).
import test from 'ava';
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

if (unavailable !== null) {
  test('meta copy tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial(
    'SQLite -> PostgreSQL -> SQLite: scrub clean and every file as before, pending log records folded first',
    async (t) => {
      cluster = startPgCluster();
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

      const url = cluster.createDatabase('roundtrip');
      // The writes the kill left pending are intent log records (DESIGN §5), not rows: folded first.
      const before = JSON.parse(await chunkfsOk(['status', fixture.store, '--json'])) as {
        intentBacklog: { intents: number };
      };
      t.true(before.intentBacklog.intents > 0, "fsync'd writes pending in the intent log");
      const copied = await chunkfsCli(['meta', 'copy', fixture.store, '--to', url, '--json']);
      t.is(copied.code, 0, copied.stderr);
      t.regex(copied.stderr, /folding the intent log into the shards first/);
      const report = JSON.parse(copied.stdout) as {
        rows: number;
        rowsPerSecond: number;
        tables: Array<{ name: string; rows: number }>;
        leftBehind: string;
      };
      t.log(
        `to PostgreSQL: ${report.rows} rows, ${Math.round(report.rowsPerSecond)} rows/s; ${before.intentBacklog.intents} log records folded first`,
      );
      t.is(report.tables.find((x) => x.name === 'intents')!.rows, 0, 'nothing left pending: the log was folded');
      t.deepEqual(configMeta(), { engine: 'postgres', url });
      t.regex(report.leftBehind, /meta\.db/);
      t.true(fs.existsSync(path.join(fixture.store, 'meta.db')), 'the old metadata left in place');
      await checkStore(t, reference, big, 'postgres', acked);

      // Back: meta.db (the old metadata) is never replaced; moved aside as the refusal says.
      const refused = await chunkfsCli(['meta', 'copy', fixture.store, '--to', 'sqlite']);
      t.is(refused.code, 1);
      t.regex(refused.stderr, /meta\.db: exists already .* move it aside/);
      moveSqliteAside('before-pg');
      const back = JSON.parse(await chunkfsOk(['meta', 'copy', fixture.store, '--to', 'sqlite', '--json'])) as {
        rows: number;
        rowsPerSecond: number;
        leftBehind: string;
      };
      t.log(`back to SQLite: ${back.rows} rows, ${Math.round(back.rowsPerSecond)} rows/s`);
      t.regex(back.leftBehind, /roundtrip/);
      t.is(configMeta(), undefined);
      t.false(fs.existsSync(path.join(fixture.store, 'meta.db.copy')));
      t.is(fs.statSync(path.join(fixture.store, 'meta.db')).mode & 0o777, 0o600);
      await checkStore(t, reference, big, 'sqlite', acked);
    },
  );

  test.serial(
    'refused while mounted, into a database holding a store, and to bad connection strings (named)',
    async (t) => {
      const m = await fixture.mount();
      const url = cluster!.createDatabase('refusals');
      const mounted = await chunkfsCli(['meta', 'copy', fixture.store, '--to', url]);
      await m.stop();
      t.is(mounted.code, 1);
      t.true(mounted.stderr.includes(`is mounted on ${m.mountpoint}`), mounted.stderr);
      const held = await chunkfsCli(['meta', 'copy', fixture.store, '--to', cluster!.url('roundtrip')]);
      t.is(held.code, 1);
      t.regex(held.stderr, /roundtrip.*already holds chunkfs metadata \(schema version \d+/);
      const missing = await chunkfsCli(['meta', 'copy', fixture.store, '--to', cluster!.url('nosuchdb')]);
      t.is(missing.code, 1);
      t.regex(missing.stderr, /nosuchdb.*does not exist/);
      const password = await chunkfsCli(['meta', 'copy', fixture.store, '--to', 'postgres://u:secret@localhost/db']);
      t.regex(password.stderr, /postgres:\/\/u:\*\*\*@localhost\/db.*holds a password/);
      t.false(password.stderr.includes('secret'));
      const scheme = await chunkfsCli(['meta', 'copy', fixture.store, '--to', 'mysql://h/db']);
      t.regex(scheme.stderr, /'mysql:\/\/h\/db'.*scheme/);
      t.is(configMeta(), undefined, 'still on SQLite');
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
      const url = cluster!.createDatabase('killed');
      t.regex(await killCopyAt(url, 'dirents'), /copying inodes: \d+ rows/);
      t.is(configMeta(), undefined, 'the config still names SQLite');
      m = await fixture.mount();
      t.is((await shOk(`ls ${m.mountpoint}/many | wc -l`)).trim(), String(MANY_FILES));
      await m.stop();
      // Nothing half-filled: the killed transaction was rolled back, so the same database takes the copy.
      const to = JSON.parse(await chunkfsOk(['meta', 'copy', fixture.store, '--to', url, '--json'])) as {
        rows: number;
        rowsPerSecond: number;
        seconds: number;
      };
      t.log(
        `${MANY_FILES} more inodes, to PostgreSQL: ${to.rows} rows in ${to.seconds.toFixed(2)} s, ${Math.round(to.rowsPerSecond)} rows/s`,
      );

      moveSqliteAside('before-killed');
      t.regex(await killCopyAt('sqlite', 'dirents'), /copying inodes/);
      t.deepEqual(configMeta(), { engine: 'postgres', url }, 'the config still names PostgreSQL');
      t.false(fs.existsSync(path.join(fixture.store, 'meta.db')), 'no meta.db made by the killed copy');
      m = await fixture.mount();
      t.is((await shOk(`ls ${m.mountpoint}/many | wc -l`)).trim(), String(MANY_FILES));
      await m.stop();
      const back = JSON.parse(await chunkfsOk(['meta', 'copy', fixture.store, '--to', 'sqlite', '--json'])) as {
        rows: number;
        rowsPerSecond: number;
        seconds: number;
      };
      t.log(
        `back to SQLite: ${back.rows} rows in ${back.seconds.toFixed(2)} s, ${Math.round(back.rowsPerSecond)} rows/s`,
      );
      t.false(fs.existsSync(path.join(fixture.store, 'meta.db.copy')), "the killed copy's file removed by the next");
      await chunkfsOk(['scrub', fixture.store]);
      m = await fixture.mount();
      t.is((await shOk(`ls ${m.mountpoint}/many | wc -l`)).trim(), String(MANY_FILES));
      await m.stop();
    },
  );
}
