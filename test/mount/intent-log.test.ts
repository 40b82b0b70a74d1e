// The intent log through the mount (DESIGN §5): sqlite3 with synchronous=EXTRA commits
// random inserts into a database on replica:3 and on ec:4+2 (every commit an fsync'd partial write,
// acknowledged at the log), the mount is killed with kill -9, remounted, and every acknowledged row
// is there and `PRAGMA integrity_check` says ok; `chunkfs status` shows the intent log's backlog.
// EXTRA, not FULL: a commit's last step is the unlink of its rollback journal, which FULL does not
// follow with a directory fsync; a kill -9 of the mount may take that unlink with the last group of
// metadata operations (DESIGN §5 "Group commit"), as a power loss may on any file system, and the
// hot journal then rolls the acknowledged commit back. EXTRA fsyncs the directory after the unlink.
// A commit is acknowledged only after an fsync of the database's directory through a descriptor
// opened before the first commit: SQLite opens the directory by name for its own fsync, and a mount
// killed between the unlink's answer and that open is either gone (SQLite skips the fsync when the
// open fails, and reports the commit) or already unmounted by fusermount3 (the name is the empty
// directory below, whose fsync succeeds). Either way SQLite acknowledged a commit whose unlink was
// in the last group, which the kill lost: the hot journal rolled it back (2 loaded runs in 100).
import test from 'ava';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { storeFixture, ChunkfsMount, shOk, run, PYTHON } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';

const ACKS_BEFORE_KILL = 150;
/**
 * A row this large first: each database is then stored in chunks before the first acknowledged
 * commit. Below small_file_max (64 KiB, about 155 commits here) a file is a needle (DESIGN §5 "Small
 * files"), and its commits rewrite the needle instead of reaching the intent log.
 */
const PAD_BYTES = 256 * 1024;
const WRITER_WAIT_MS = 120_000;

const fixture = storeFixture(test, 'intent-log');

const WRITER = `
import os, random, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute('PRAGMA synchronous=EXTRA')
db.execute('CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY, v BLOB)')
db.execute('CREATE TABLE IF NOT EXISTS pad(b BLOB)')
if db.execute('SELECT count(*) FROM pad').fetchone()[0] == 0:
    db.execute('INSERT INTO pad VALUES (zeroblob(${PAD_BYTES}))')
rng = random.Random(int(sys.argv[2]))
# Held open: its fsync fails once the mount is dead, also after the mount point was unmounted.
dir_fd = os.open(os.path.dirname(sys.argv[1]), os.O_RDONLY | os.O_DIRECTORY)
for i in range(1_000_000):
    try:
        db.execute('BEGIN')
        db.execute('INSERT OR REPLACE INTO t VALUES (?, ?)', (rng.randrange(1 << 40), rng.randbytes(300)))
        db.execute('INSERT INTO t VALUES (?, ?)', (-(i + 1), b'%d' % i))
        db.execute('COMMIT')
        os.fsync(dir_fd)
    except Exception as e:
        print('stop', e, flush=True)
        break
    print('ack', i + 1, flush=True)
`;

/** Run the writer on each database; kill -9 the mount once every writer has ACKS_BEFORE_KILL acks; their acks. */
async function writeUntilKilled(mount: ChunkfsMount, dbs: string[]): Promise<number[]> {
  const acks = dbs.map(() => 0);
  let killed: Promise<void> | null = null;
  const runs = dbs.map(
    (db, i) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(PYTHON, ['-c', WRITER, db, String(i + 1)], { stdio: ['ignore', 'pipe', 'inherit'] });
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`writer ${db} did not stop`));
        }, WRITER_WAIT_MS);
        child.stdout.on('data', (b: Buffer) => {
          for (const mm of b.toString().matchAll(/^ack (\d+)$/gm)) acks[i] = Math.max(acks[i], Number(mm[1]));
          if (killed === null && acks.every((n) => n >= ACKS_BEFORE_KILL)) killed = mount.kill9();
        });
        child.on('exit', () => {
          clearTimeout(timer);
          resolve();
        });
      }),
  );
  await Promise.all(runs);
  await killed;
  return acks;
}

test.serial(
  'sqlite3 synchronous=EXTRA on replica:3 and ec:4+2, kill -9 of the mount: every committed row survives, integrity ok',
  async (t) => {
    let m = await fixture.mount();
    await shOk(`mkdir ${m.mountpoint}/ec && setfattr -n user.chunkfs.layout -v ec:4+2 ${m.mountpoint}/ec`);
    const dbs = ['r3.db', 'ec/ec.db'];
    const acks = await writeUntilKilled(
      m,
      dbs.map((d) => path.join(m.mountpoint, d)),
    );
    t.true(
      acks.every((n) => n >= ACKS_BEFORE_KILL),
      `acks ${acks.join(', ')}`,
    );

    m = await fixture.mount(); // the CLI recovers the stale mount point
    for (let i = 0; i < dbs.length; i++) {
      const check = await run(
        PYTHON,
        [
          '-c',
          `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ok = db.execute('PRAGMA integrity_check').fetchone()[0]
n = db.execute('SELECT count(*) FROM t WHERE k < 0').fetchone()[0]
missing = db.execute('SELECT count(*) FROM t WHERE k < 0 AND -k <= ?', (int(sys.argv[2]),)).fetchone()[0]
print(ok, n >= int(sys.argv[2]), missing == int(sys.argv[2]))
`,
          path.join(m.mountpoint, dbs[i]),
          String(acks[i]),
        ],
        { timeoutMs: 60_000 },
      );
      t.is(check.code, 0, check.stderr);
      t.is(check.stdout.trim(), 'ok True True', `${dbs[i]}: integrity, and all ${acks[i]} committed rows`);
    }
    const status = await run('node', [path.join(REPO_ROOT, 'dist', 'cli', 'cli.js'), 'status', m.mountpoint], {
      timeoutMs: 60_000,
    });
    t.is(status.code, 0, status.stderr);
    t.regex(
      status.stdout,
      /intent log: \d+ intents? \(.*\) waiting to be applied, bound 4096 intents \/ 32\.0 MiB; applied \d+/,
    );
  },
);
