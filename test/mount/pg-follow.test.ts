// Read-only mounts that follow the writer (DESIGN §9 "Followers"): a store whose metadata is
// on PostgreSQL, written through one mount, and mounted -o ro from "another machine" (its own store
// directory naming the same disks and database, test/helpers/other-machine.ts), all through the CLI
// and real tools. The follower takes no lease and writes nothing (the disks and every database row
// are the same before and after it, even over an intent log a killed writer left unapplied, which it
// serves from the log rows); it shows what the writer writes and closes (the latency is logged; the
// bound is a second); while the writer replaces, overwrites and appends to files, every
// read on the follower is one of the versions written, never stale (no block goes back to an older
// version) and never zeros inside the size; it survives the writer's kill -9 and serves what a
// third process, taking over the lease, replays. The cluster is a throwaway one
// (test/helpers/pg-cluster.ts), stopped at the end, pass or fail, after every mount.
import test from 'ava';
import * as path from 'node:path';
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { storeFixture, mkfs, run, sh, shOk, chunkfsOk, CLI_JS, PYTHON, ChunkfsMount } from '../helpers/mount';
import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../helpers/root';
import { badRecords, badRecordsPy, writeRecordsUntilKilled } from '../helpers/acked-writer';
import { PgCluster, pgUnavailableReason, privateCluster } from '../helpers/pg-cluster';
import { otherMachineStoreDir } from '../helpers/other-machine';

const DATABASE = 'follow';
/** How long the follower may take to show a change before the test gives up (the latency is logged). */
const SEE_WAIT_S = 30;
const ACKS_BEFORE_KILL = 40;
const unavailable = pgUnavailableReason();

let cluster: PgCluster | null = null;
// Declared first: its after hook stops every mount before the cluster below is stopped.
const fixture = storeFixture(test, 'pgfollow', { mkfs: false });
test.after.always(() => cluster?.stop());

const dirs = {
  get other() {
    return path.join(fixture.dir, 'other');
  },
  get third() {
    return path.join(fixture.dir, 'third');
  },
  get src() {
    return path.join(fixture.dir, 'src.bin');
  },
};

/** The writer's mount (the fixture's store on <dir>/mnt), made anew after a kill. */
let writer: ChunkfsMount | null = null;
/** The follower: the other store directory mounted -o ro on <dir>/mnt2. */
let follower: ChunkfsMount | null = null;

function followerMount(): Promise<ChunkfsMount> {
  return fixture.mountAt(dirs.other, path.join(fixture.dir, 'mnt2'), ['-o', 'ro']);
}

/** The disk directories (names, types, sizes, times, modes, contents) and every row of the database. */
async function storeState(): Promise<{ disks: string; rows: string }> {
  const disks = await shOk(
    `cd ${fixture.store} && find . ! -name '*.sock' -printf '%p %y %s %T@ %m\\n' | LC_ALL=C sort && find . -type f | LC_ALL=C sort | xargs sha256sum`,
  );
  return { disks, rows: cluster!.dumpRows(DATABASE) };
}

/** Whether the writer's change triggers fire now ('t' or 'f'). */
function announcing(): string {
  return cluster!
    .query(
      DATABASE,
      "SELECT tgenabled = 'O' FROM pg_trigger WHERE tgname = 'chunkfs_note_insert' AND tgrelid = 'inodes'::regclass",
    )
    .trim();
}

/** Runs op (shell) after nothing, then waits until check (shell, run on the follower) passes; ms waited. */
async function followerSees(op: string, check: string): Promise<number> {
  const r = await sh(
    `${op} && t0=$(date +%s%N) && timeout ${SEE_WAIT_S} bash -c 'until ${check.replace(/'/g, "'\\''")}; do sleep 0.01; done' && echo $(( ($(date +%s%N) - t0) / 1000000 ))`,
    { timeoutMs: (SEE_WAIT_S + 30) * 1000 },
  );
  if (r.code !== 0)
    throw new Error(
      `the follower did not show it within ${SEE_WAIT_S} s: ${check}\n${r.stderr}\n${follower?.output()}`,
    );
  return Number(r.stdout.trim().split('\n').pop());
}

if (unavailable !== null) {
  test('follower tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial.before(async () => {
    cluster = privateCluster(); // paused and resumed below: not the run's shared cluster
    // ec:2+1 on 4 disks: partial writes of large files go through the log and are applied as new
    // EC versions (the old one reclaimed); small files (up to 64 KiB) are needles in replica containers.
    await mkfs(fixture.store, ['--disks', '4', '--layout', 'ec:2+1', '--meta', cluster.createDatabase(DATABASE)]);
    await otherMachineStoreDir(fixture.store, dirs.other);
    await otherMachineStoreDir(fixture.store, dirs.third);
    writeFileSync(dirs.src, randomBytes(3 << 20));
  });

  test.serial(
    'the follower takes no lease and writes nothing, and serves an intent log the writer left unapplied from its rows',
    async (t) => {
      writer = await fixture.mount();
      const w = writer.mountpoint;
      await shOk(
        `cp ${dirs.src} ${w}/big && mkdir ${w}/d && echo hello > ${w}/d/small && setfattr -n user.k -v v ${w}/d/small && ln -s d/small ${w}/link`,
      );
      const writerPid = writer.child.pid;
      await shOk(`cp ${dirs.src} ${w}/log.bin`);
      const acked = await writeRecordsUntilKilled(writer, path.join(w, 'log.bin'), ACKS_BEFORE_KILL, 'overwrite');
      const before = await storeState();
      follower = await followerMount();
      t.regex(follower.readyLine, /, read-only\)$/);
      const f = follower.mountpoint;
      t.is(
        await badRecords(path.join(f, 'log.bin'), acked, 'overwrite'),
        '0 []',
        'every acknowledged record, served from the log rows',
      );
      await shOk(
        `cmp ${dirs.src} ${f}/big && [ "$(cat ${f}/link)" = hello ] && [ "$(getfattr --only-values -n user.k ${f}/d/small)" = v ]`,
      );
      for (const c of [
        'touch new',
        'echo x >> big',
        'rm big',
        'mkdir e',
        'mv big b2',
        'setfattr -n user.x -v 1 big',
        'chmod 600 big',
      ]) {
        const r = await sh(`cd ${f} && ${c}`);
        t.regex(r.stderr, /Read-only file system/, c);
      }
      // The lease is still the killed writer's: the follower never took it.
      t.regex(await chunkfsOk(['status', dirs.other]), new RegExp(`lease: \\S+ pid ${writerPid} \\(mount `));
      await follower.stop();
      const after = await storeState();
      t.is(after.disks, before.disks, 'the disks are untouched');
      t.is(after.rows, before.rows, 'every database row is untouched');
      t.regex(before.rows, /^public\.intents [1-9]\d* rows/m, 'the log held intents');
    },
  );

  test.serial(
    'the follower shows what the writer writes and closes: new, renamed, removed, appended and overwritten files, modes',
    async (t) => {
      writer = await fixture.mount(); // takes over the killed writer's lease and replays its log
      // The change triggers fire only while a follower listens (store/meta/postgres/announce.ts): they cost the writer.
      t.is(announcing(), 'f', 'no follower, no announcements');
      follower = await followerMount();
      t.is(announcing(), 't', 'a follower listens: the writer announces');
      const w = writer.mountpoint;
      const f = follower.mountpoint;
      await shOk(`ls ${f}/new.bin ${f}/d/small2 || true`); // a lookup that misses: nothing of it may stay cached
      const ms = {
        newFile: await followerSees(`cp ${dirs.src} ${w}/new.bin`, `cmp -s ${dirs.src} ${f}/new.bin`),
        smallFile: await followerSees(`echo small2 > ${w}/d/small2`, `[ "$(cat ${f}/d/small2 2>/dev/null)" = small2 ]`),
        rename: await followerSees(
          `mv ${w}/new.bin ${w}/d/moved.bin`,
          `[ ! -e ${f}/new.bin ] && cmp -s ${dirs.src} ${f}/d/moved.bin`,
        ),
        remove: await followerSees(`rm ${w}/d/small2`, `[ ! -e ${f}/d/small2 ]`),
        append: await followerSees(
          `echo more >> ${w}/d/small && sync ${w}/d/small`,
          `[ "$(cat ${f}/d/small)" = "$(printf 'hello\\nmore')" ]`,
        ),
        overwrite: await followerSees(
          `printf 'ABCDEFGH' | dd of=${w}/d/moved.bin bs=1 seek=1000000 conv=notrunc 2>/dev/null`,
          `[ "$(dd if=${f}/d/moved.bin bs=1 skip=1000000 count=8 2>/dev/null)" = ABCDEFGH ]`,
        ),
        chmod: await followerSees(`chmod 600 ${w}/d/moved.bin`, `[ "$(stat -c %a ${f}/d/moved.bin)" = 600 ]`),
      };
      t.log(`follower latency, ms from the writer's close to the follower showing it: ${JSON.stringify(ms)}`);
      await shOk(
        `cd ${w} && find . -printf '%p %s %m\\n' | sort > ${fixture.dir}/w.txt && cd ${f} && find . -printf '%p %s %m\\n' | sort > ${fixture.dir}/f.txt && diff ${fixture.dir}/w.txt ${fixture.dir}/f.txt`,
      );
      t.pass();
    },
  );

  test.serial(
    'never stale: while the writer replaces, overwrites in place and appends, every follower read is a version written, never older than one it read before, never zeros',
    async (t) => {
      const w = writer!.mountpoint;
      const f = follower!.mountpoint;
      const initial = await run(PYTHON, ['-c', `${STALE_COMMON}\nwrite_state(sys.argv[1], 0)`, w], {
        timeoutMs: 60_000,
      });
      t.is(initial.code, 0, initial.stderr);
      await followerSees('true', `[ -e ${f}/doc ] && [ -e ${f}/blocks ]`);
      const checker = run(PYTHON, ['-c', STALE_COMMON + STALE_CHECKER, f], { timeoutMs: 300_000 });
      const written = await run(PYTHON, ['-c', STALE_COMMON + STALE_WRITER, w], { timeoutMs: 300_000 });
      t.is(written.code, 0, written.stderr);
      const checked = await checker;
      t.is(checked.code, 0, `${checked.stderr}\nthe follower's log:\n${follower!.output().slice(-4000)}`);
      const report = JSON.parse(checked.stdout) as {
        reads: number;
        bad: unknown[];
        final: boolean;
        stale: { open: number; read: number; empty: number };
      };
      t.log(
        `follower reads while the writer wrote: ${report.reads}; ESTALE at open ${report.stale.open}, at read of a replaced file ${report.stale.read}; doc renamed before its bytes were committed ${report.stale.empty}`,
      );
      t.is(report.stale.open, 0, 'an open finds what the name holds now (the kernel looks it up again on ESTALE)');
      t.deepEqual(report.bad, []);
      t.true(report.final, "the follower reached the writer's last versions");
      t.true(report.reads >= 3);
    },
  );

  test.serial(
    'the server restarted under the writer and the follower: reads fail with EIO while it is down, then the follower follows again',
    async (t) => {
      const w = writer!.mountpoint;
      const f = follower!.mountpoint;
      cluster!.pause();
      try {
        const r = await sh(`cmp ${dirs.src} ${f}/d/moved.bin; ls ${f}/d`, { timeoutMs: 120_000 });
        if (r.code !== 0) t.regex(r.stderr, /Input\/output error/);
      } finally {
        cluster!.resume();
      }
      const ms = await followerSees(
        `timeout 60 bash -c 'until echo back > ${w}/back.txt 2>/dev/null; do sleep 0.05; done'`,
        `[ "$(cat ${f}/back.txt 2>/dev/null)" = back ]`,
      );
      t.log(`ms from the writer's first change after the restart to the follower showing it: ${ms}`);
      t.false(follower!.exited());
    },
  );

  test.serial(
    "the follower survives the writer's kill -9 and follows a third process that takes the lease over and replays",
    async (t) => {
      const f = follower!.mountpoint;
      const acked = await writeRecordsUntilKilled(
        writer!,
        path.join(writer!.mountpoint, 'failover.bin'),
        ACKS_BEFORE_KILL,
      );
      await shOk(`cmp ${dirs.src} ${f}/d/moved.bin || true; ls ${f}/d`); // still serving
      const third = await fixture.mountAt(dirs.third, path.join(fixture.dir, 'mnt3'));
      t.regex(await chunkfsOk(['status', dirs.third]), new RegExp(`lease: \\S+ pid ${third.child.pid} \\(mount `));
      writeFileSync(path.join(fixture.dir, 'bad.py'), badRecordsPy());
      await followerSees('true', `[ "$(${PYTHON} ${fixture.dir}/bad.py ${f}/failover.bin ${acked})" = "0 []" ]`);
      t.is(await badRecords(path.join(f, 'failover.bin'), acked), '0 []');
      await followerSees(
        `echo third > ${third.mountpoint}/third.txt`,
        `[ "$(cat ${f}/third.txt 2>/dev/null)" = third ]`,
      );
      await third.stop();
      await follower!.stop();
    },
  );
}

test.serial(
  'SQLite: a read-only mount while another process writes the store is refused, saying that only a store on PostgreSQL can be followed',
  async (t) => {
    const store = path.join(fixture.dir, 'sqlite-store');
    await shOk(`${process.execPath} ${CLI_JS} mkfs ${store} --disks 3 --layout replica:2`);
    // A writer that is no mount here (a tool, or a mount in another mount namespace): it holds the store lock.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(path.join(REPO_ROOT, 'dist', 'store', 'store'))}).Store.open(${JSON.stringify(store)}).then(() => { console.log('open'); setInterval(() => undefined, 1000) })`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on('data', (b: Buffer) => {
          if (b.toString().includes('open')) resolve();
        });
        holder.on('exit', (code) => reject(new Error(`the holder exited (${code})`)));
      });
      const r = await run(
        process.execPath,
        [CLI_JS, 'mount', store, path.join(fixture.dir, 'mnt-sqlite'), '-o', 'ro'],
        { timeoutMs: 60_000 },
      );
      t.not(r.code, 0);
      t.regex(
        r.stderr,
        new RegExp(
          `open read-write by pid ${holder.pid}.*cannot follow that writer: this store's metadata is in SQLite`,
        ),
      );
    } finally {
      holder.kill('SIGKILL');
      await sh(`fusermount -uz ${fixture.dir}/mnt-sqlite`); // had it mounted after all
    }
  },
);

/** Python shared by the writer and the checker: the versions of each file. */
const STALE_COMMON = `
import os, sys, time, json, hashlib, errno
BLK = 4096
NB = 64
V = 30
APPENDS = 3
def doc(v):
    return hashlib.sha256(b'doc%d' % v).digest() * (1875 + v)
def block(i, v):
    return (b'%06d:%06d|' % (i, v)) * 292 + b'\\n' * 8
def rec(j):
    return (b'%08d' % j) * (BLK // 8)
def write_state(d, v):
    with open(d + '/doc.tmp', 'wb') as f:
        f.write(doc(v))
    os.rename(d + '/doc.tmp', d + '/doc')
    fd = os.open(d + '/blocks', os.O_WRONLY | os.O_CREAT, 0o644)
    for i in range(NB):
        os.pwrite(fd, block(i, v), i * BLK)
    os.fsync(fd)
    os.close(fd)
    fd = os.open(d + '/append', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    n = os.fstat(fd).st_size // BLK
    for j in range(n, n + (APPENDS if v > 0 else 0)):
        os.write(fd, rec(j))
    os.fsync(fd)
    os.close(fd)
`;

const STALE_WRITER = `
for v in range(1, V + 1):
    write_state(sys.argv[1], v)
    time.sleep(0.03)
`;

const STALE_CHECKER = `
d = sys.argv[1]
docs = {hashlib.sha256(doc(v)).hexdigest(): v for v in range(V + 1)}
last_doc, last_blk, last_len, reads, bad = -1, [0] * NB, 0, 0, []
final = False
deadline = time.time() + 240
stale = {'open': 0, 'read': 0, 'empty': 0}
def rd(name):
    # A file the writer replaced while this read it: its old inode is gone (deleted there), and a
    # read of it through a descriptor says ESTALE, as on NFS; opening the name again finds the new one.
    for attempt in range(100):
        try:
            f = open(d + '/' + name, 'rb')
        except OSError as e:
            if e.errno != errno.ESTALE: raise
            stale['open'] += 1
            continue
        try:
            return f.read()
        except OSError as e:
            if e.errno != errno.ESTALE: raise
            stale['read'] += 1
        finally:
            f.close()
    raise Exception('ESTALE 100 times')
while time.time() < deadline and len(bad) < 20:
    x = rd('doc')
    v = docs.get(hashlib.sha256(x).hexdigest())
    # The writer commits a rename at once and the bytes of the file closed before it a moment later
    # (its close batch): the follower may see the new name empty meanwhile, as a crash then would.
    if len(x) == 0: stale['empty'] += 1
    elif v is None: bad.append('doc of %d bytes is no version written: %r' % (len(x), x[:16]))
    elif v < last_doc: bad.append('doc went back from %d to %d' % (last_doc, v))
    else: last_doc = v
    b = rd('blocks')
    if len(b) != NB * BLK: bad.append('blocks is %d bytes' % len(b))
    for i in range(min(NB, len(b) // BLK)):
        x = b[i * BLK:(i + 1) * BLK]
        try: bv = int(x[7:13])
        except ValueError: bv = -1
        if bv < 0 or bv > V or x != block(i, bv): bad.append('block %d is no version written: %r' % (i, x[:16]))
        elif bv < last_blk[i]: bad.append('block %d went back from %d to %d' % (i, last_blk[i], bv))
        else: last_blk[i] = bv
    a = rd('append')
    if len(a) < last_len: bad.append('append shrank from %d to %d' % (last_len, len(a)))
    last_len = max(last_len, len(a))
    for j in range(len(a) // BLK):
        if a[j * BLK:(j + 1) * BLK] != rec(j): bad.append('append record %d inside the size reads %r' % (j, a[j * BLK:j * BLK + 16])); break
    tail = a[(len(a) // BLK) * BLK:]
    if tail != rec(len(a) // BLK)[:len(tail)]: bad.append('append tail of %d bytes is not the record' % len(tail))
    reads += 1
    if last_doc == V and min(last_blk) == V and len(a) == V * APPENDS * BLK:
        final = True
        break
print(json.dumps({'reads': reads, 'bad': bad, 'final': final, 'stale': stale}))
`;
