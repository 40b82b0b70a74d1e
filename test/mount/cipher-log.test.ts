// Bytes of encrypting layouts never reach a disk or the metadata database in the clear (DESIGN §10,
// docs/transforms.md "Log records"): through the mount, whole files, small files and fsync'd 100-byte
// partial writes carrying a random marker go into every encrypting layout; a clean unmount applies the
// first round (its intent rows are deleted: SQLite keeps their pages as free pages); the second round
// is cut by kill -9 before the applier took it (intents pending in meta.db-wal), an offline `chunkfs
// status` reads them from the log, the remount replays them and every byte reads back as written.
// Then every file under the test directory (store, meta.db, meta.db-wal, every disk) is searched for
// the marker; on PostgreSQL also pg_dumps of the database (bytea as hex) and the cluster's files, a
// read-only mount shows the pending writes from the log, and the pending records go to SQLite by
// `chunkfs meta copy` (sealed, as they are) before the replay.
import test, { ExecutionContext } from 'ava';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { storeFixture, mkfs, run, shOk, sh, chunkfsOk, PYTHON, StoreFixture } from '../helpers/mount';
import { PG_BIN_DIR, pgTestFile, PgCluster } from '../helpers/pg-cluster';

const LAYOUTS = ['replica:3,aes256gcm', 'ec:4+2,aes256gcm', 'replica:3,zstd,aes256gcm', 'ec:4+2,zstd,aes256gcm'];
const DIRS = LAYOUTS.map((l, i) => `d${i}`);
/** A pg_dump of a test store's database is a few MiB. */
const DUMP_BYTES_MAX = 1 << 30;

// phase 1: a whole 6 MiB file, 8 small files, 40 fsync'd partial writes; phase 2: a whole 5 MiB file,
// 5 small files, one small file rewritten, 40 more partial writes; check N: every file as after phase N.
const CLIENT = `
import os, random, sys
mnt, marker, mode, phase = sys.argv[1], sys.argv[2].encode(), sys.argv[3], int(sys.argv[4])
dirs = sys.argv[5:]
BIG = 6 << 20
def whole(d, name, size):
    rng = random.Random('whole:%s:%s' % (d, name))
    out = bytearray()
    while len(out) < size:
        out += marker + b' whole ' + rng.randbytes(1500) + marker * 40
    return bytes(out[:size])
def small(d, phase, k):
    return (marker + b' small %s %d %d ' % (d.encode(), phase, k)) * (50 + k * 7)
def writes(d, phase):
    rng = random.Random('writes:%s:%d' % (d, phase))
    return [(rng.randrange(BIG - 100), (marker + b' partial %d %d ' % (phase, i)).ljust(100, b'.')) for i in range(40)]
def put(p, data):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
def expected(d, upto):
    big = bytearray(whole(d, 'big', BIG))
    for p in range(1, upto + 1):
        for off, rec in writes(d, p):
            big[off:off + 100] = rec
    files = {'big': bytes(big)}
    files.update({'s1_%d' % k: small(d, 1, k) for k in range(8)})
    if upto >= 2:
        files['w2'] = whole(d, 'w2', 5 << 20)
        files.update({'s2_%d' % k: small(d, 2, k) for k in range(5)})
        files['s1_0'] = small(d, 2, 100)
    return files
for d in dirs:
    base = os.path.join(mnt, d)
    if mode == 'write':
        if phase == 1:
            put(os.path.join(base, 'big'), whole(d, 'big', BIG))
            for k in range(8): put(os.path.join(base, 's1_%d' % k), small(d, 1, k))
        else:
            put(os.path.join(base, 'w2'), whole(d, 'w2', 5 << 20))
            for k in range(5): put(os.path.join(base, 's2_%d' % k), small(d, 2, k))
            put(os.path.join(base, 's1_0'), small(d, 2, 100))
        fd = os.open(os.path.join(base, 'big'), os.O_WRONLY)
        for off, rec in writes(d, phase):
            os.pwrite(fd, rec, off)
            os.fsync(fd)
        os.close(fd)
    else:
        for name, data in sorted(expected(d, phase).items()):
            with open(os.path.join(base, name), 'rb') as f:
                got = f.read()
            if got != data:
                at = next((i for i in range(min(len(got), len(data))) if got[i] != data[i]), min(len(got), len(data)))
                print('differs %s/%s at %d (%d bytes, %d expected)' % (d, name, at, len(got), len(data)))
print('done')
`;

async function client(mnt: string, marker: string, mode: 'write' | 'check', phase: number): Promise<string> {
  const r = await run(PYTHON, ['-c', CLIENT, mnt, marker, mode, String(phase), ...DIRS], { timeoutMs: 300_000 });
  if (r.code !== 0) throw new Error(`client ${mode} ${phase}: exit ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout.trim();
}

/** Files under dirs holding the marker (grep -a: binary files too; exit 1 = none). */
async function filesWithMarker(dirs: string[], marker: string): Promise<string[]> {
  const r = await sh(`grep -rlaF -- ${marker} ${dirs.join(' ')} || test $? -le 2`, { timeoutMs: 300_000 });
  // A file gone while grep walked (a shared cluster's other databases come and go) held no marker.
  const errors = r.stderr.split('\n').filter((l) => l !== '' && !/: No such file or directory$/.test(l));
  if (r.code !== 0 || errors.length > 0) throw new Error(`grep failed: ${errors.join('\n')}`);
  return r.stdout.split('\n').filter((l) => l !== '');
}

interface StatusJson {
  intentBacklog: { intents: number };
}

function counter(statusJson: string, name: string): number {
  return Number((JSON.parse(statusJson) as { counters: Record<string, number> }).counters[name]);
}

/** The whole run on the fixture's store (made by the caller); returns the marker for further searches. */
type AfterKill = (marker: string) => Promise<void>;
async function writeKillReplay(t: ExecutionContext, fixture: StoreFixture, afterKill?: AfterKill): Promise<string> {
  const marker = `CFSMARK${randomBytes(8).toString('hex')}`;
  let m = await fixture.mount();
  const dirs = DIRS.map((d, i) => `mkdir ${d} && setfattr -n user.chunkfs.layout -v ${LAYOUTS[i]} ${d}`);
  await shOk(`cd ${m.mountpoint} && ${dirs.join(' && ')}`);
  t.is(await client(m.mountpoint, marker, 'write', 1), 'done');
  await m.stop(); // applies every intent: their rows are deleted
  m = await fixture.mount();
  t.is(await client(m.mountpoint, marker, 'check', 1), 'done', 'every file as written in round 1');
  t.is(await client(m.mountpoint, marker, 'write', 2), 'done');
  await m.kill9(); // encrypted chunks' intents gather 15 s before a rewrite: round 2's are still in the log
  await m.stop();
  await afterKill?.(marker);
  // Offline (read-only): the log's records are opened to be overlaid on reads.
  const offline = JSON.parse(await chunkfsOk(['status', fixture.store, '--json'])) as StatusJson;
  t.true(offline.intentBacklog.intents > 0, `intents pending after kill -9 (${offline.intentBacklog.intents})`);
  m = await fixture.mount();
  const resolved = counter(await chunkfsOk(['status', fixture.store, '--json']), 'intents_resolved');
  t.true(resolved > 0, `recovery replayed the pending intents (${resolved})`);
  t.is(await client(m.mountpoint, marker, 'check', 2), 'done', 'every file as written, replayed intents included');
  await m.stop();
  t.deepEqual(await filesWithMarker([fixture.dir], marker), [], 'no file of the store or its disks holds the marker');
  return marker;
}

const fixture = storeFixture(test, 'cipherlog', { mkfs: false });
test.serial.afterEach.always(() => fixture.stopAll());

test.serial(
  "whole files, small files and fsync'd partial writes of every encrypting layout, kill -9, replay: no marker in any file of the store",
  async (t) => {
    await mkfs(fixture.store); // on PostgreSQL with CHUNKFS_TEST_META=postgres
    await writeKillReplay(t, fixture);
  },
);

const pg = pgTestFile(test, 'cipherlog');
const pgFixture = storeFixture(test, 'cipherlogpg', { mkfs: false });
test.serial.afterEach.always(() => pgFixture.stopAll());

function pgDump(cluster: PgCluster, url: string): string {
  const name = new URL(url).pathname.replace(/^\//, '');
  const pgDumpArgs = [path.join(PG_BIN_DIR, 'pg_dump'), '-h', cluster.socketDir, '-d', name];
  return execFileSync('runuser', ['-u', 'postgres', '--', ...pgDumpArgs], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: DUMP_BYTES_MAX,
  });
}

pg.pgTest(
  "the same on PostgreSQL, moved to SQLite by meta copy after the kill: no marker in the store, in a pg_dump of its database (bytea as hex) or in the cluster's files",
  async (t) => {
    const url = pg.freshDb();
    await mkfs(pgFixture.store, ['--disks', '6', '--layout', 'replica:3', '--meta', url]);
    const noMarkerIn = (dump: string, marker: string, when: string): void => {
      t.false(dump.includes(marker), `the marker is not in the dump ${when}`);
      t.false(dump.includes(Buffer.from(marker).toString('hex')), `nor its bytes as hex (bytea) ${when}`);
    };
    const marker = await writeKillReplay(t, pgFixture, async (marker) => {
      const dump = pgDump(pg.cluster(), url);
      const intents = /^COPY public\.intents .*FROM stdin;\n([\s\S]*?)^\\\.$/m.exec(dump);
      t.true(intents !== null && intents[1].length > 0, 'the dump after kill -9 holds pending intents');
      noMarkerIn(dump, marker, 'after kill -9');
      // A read-only mount serves the pending writes from the log: it opens the sealed records.
      const ro = await pgFixture.mountAt(pgFixture.store, path.join(pgFixture.dir, 'mnt-ro'), ['-o', 'ro']);
      t.is(await client(ro.mountpoint, marker, 'check', 2), 'done', 'a read-only mount shows the logged writes');
      await ro.stop();
      // The pending records move to SQLite as they are (sealed); the remount there replays them.
      const copied = await chunkfsOk(['meta', 'copy', pgFixture.store, '--to', 'sqlite', '--json']);
      const copy = JSON.parse(copied) as { tables: Array<{ name: string; rows: number }> };
      t.true(copy.tables.find((x) => x.name === 'intents')!.rows > 0, 'pending intents copied');
    });
    noMarkerIn(pgDump(pg.cluster(), url), marker, 'left behind by the copy');
    const clusterFiles = path.join(pg.cluster().socketDir, 'data');
    t.deepEqual(await filesWithMarker([clusterFiles], marker), [], "nor in the cluster's files");
  },
);
