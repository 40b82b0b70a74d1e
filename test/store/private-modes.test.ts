// The store is private to its owner (DESIGN §4): whatever the umask, everything a store creates is 0700
// (directories) or 0600 (files); a store made with looser modes is tightened at open with one log line;
// mkfs refuses a disk directory others can write; scrub reports (and with repair fixes) loose paths.
import test from 'ava';
import { testMetaEngine } from '../helpers/pg-meta';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { Store } from '../../store/store';
import { ModeError } from '../../store/io/private-modes';
import { ROOT_INO } from '../../store/meta/meta';
import { SMALL, randomBytes, tmpDir } from './helpers';
import { prng } from '../../store/io/faulty-io';
import { REPO_ROOT } from '../helpers/root';

/** Every path under dir whose mode lets group or others in, with its mode. */
function loosePaths(dir: string): string[] {
  const out: string[] = [];
  const walk = (p: string): void => {
    const st = fs.statSync(p);
    if ((st.mode & 0o077) !== 0) out.push(`${p} 0${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const n of fs.readdirSync(p)) walk(path.join(p, n));
  };
  walk(dir);
  return out;
}

function allPaths(dir: string): string[] {
  const out = [dir];
  for (const n of fs.readdirSync(dir, { recursive: true }) as string[]) out.push(path.join(dir, n));
  return out;
}

test.serial(
  'with umask 0, every path a store creates while writing, truncating and healing is owner-only',
  async (t) => {
    const old = process.umask(0);
    try {
      const dir = path.join(tmpDir(), 'store');
      const store = await Store.create(dir, { disks: 6, layout: 'replica:3', ...SMALL });
      const random = prng(12);
      const ec = store.ns.mkdir(ROOT_INO, 'ec', 0o777, 0, 0);
      store.ns.setxattr(ec.ino, 'user.chunkfs.layout', Buffer.from('ec:4+2'), 0);
      const inos: number[] = [];
      for (const [parent, name] of [
        [ROOT_INO, 'r'],
        [ec.ino, 'e'],
      ] as Array<[number, string]>) {
        const f = store.ns.create(parent, name, 0o666, 0, 0);
        inos.push(f.ino);
        await store.write(f.ino, 0, randomBytes(random, 3 * SMALL.chunkSizeBytes + 100));
        await store.write(f.ino, 5000, randomBytes(random, 7000)); // RMW (replica) or copy-on-write (EC)
        await store.truncate(f.ino, SMALL.chunkSizeBytes + 1);
      }
      const victim = await store.shardPath(inos[0], 0, 1);
      fs.rmSync(victim!);
      const report = await store.scrub({ repair: true });
      t.is(report.healed, 1);
      t.true(fs.existsSync(victim!));
      t.deepEqual(loosePaths(dir), [], 'while open (meta.db-wal, -shm, the lock)');
      await store.close();
      t.deepEqual(loosePaths(dir), []);
      t.true(allPaths(dir).length > 40, 'the walk saw the shards');
    } finally {
      process.umask(old);
    }
  },
);

test.serial('opening a store made with loose modes tightens them once and logs one line', async (t) => {
  const dir = path.join(tmpDir(), 'store');
  const s = await Store.create(dir, { disks: 3, layout: 'replica:3', ...SMALL });
  const f = s.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  await s.write(f.ino, 0, Buffer.alloc(1000, 1));
  await s.close();
  const loose: Array<[string, number]> = [
    ['', 0o755],
    ['chunkfs.json', 0o644],
    ['bitrot.key', 0o644],
    ['disks/d0', 0o777],
    ['disks/d1/.chunks', 0o755],
    ...(testMetaEngine() === 'sqlite' ? [['meta.db', 0o664] as [string, number]] : []), // PostgreSQL keeps no file here
  ];
  for (const [p, mode] of loose) fs.chmodSync(path.join(dir, p), mode);
  const lines: string[] = [];
  for (const readOnly of [true, false]) {
    const opened = await Store.open(dir, { readOnly, log: (l) => lines.push(l) });
    t.deepEqual(await opened.read(f.ino, 0, 1000), Buffer.alloc(1000, 1));
    await opened.close();
  }
  t.is(lines.length, 1, 'one line, at the first open only');
  for (const [p] of loose) t.true(lines[0].includes(p === '' ? '. 0755->0700' : `${p} `), `${p} named in: ${lines[0]}`);
  t.regex(lines[0], new RegExp(`made ${loose.length} path\\(s\\) owner-only`));
  for (const [p] of loose) t.is(fs.statSync(path.join(dir, p)).mode & 0o077, 0, p);
});

test.serial('a store whose modes cannot be fixed is refused with a message naming the path', async (t) => {
  const base = tmpDir();
  fs.chmodSync(base, 0o755); // uid 65534 must reach the store
  const dir = path.join(base, 'store');
  await (await Store.create(dir, { disks: 3, layout: 'replica:3', ...SMALL })).close();
  // The store belongs to uid 65534, but its config was left world-readable by root: that user can read
  // it and cannot chmod it, so its open must refuse rather than run on a store others can read.
  for (const p of allPaths(dir)) fs.chownSync(p, 65534, 65534);
  const config = path.join(dir, 'chunkfs.json');
  fs.chownSync(config, 0, 0);
  fs.chmodSync(config, 0o644);
  const script = `require(${JSON.stringify(path.join(REPO_ROOT, 'dist/store/store.js'))}).Store.open(${JSON.stringify(dir)})
    .then(() => { console.log('opened'); process.exit(0) }, (e) => { console.log(e.name + ': ' + e.message); process.exit(3) })`;
  const out = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
    execFile(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script],
      { timeout: 60_000 },
      (err, stdout) => resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? null), stdout }),
    );
  });
  t.is(out.code, 3, out.stdout);
  t.regex(
    out.stdout,
    /^ModeError: .*chunkfs\.json: group or others can access it \(mode 0644\) and it cannot be made private/,
  );
  t.is(fs.statSync(config).mode & 0o777, 0o644, 'nothing changed');
  t.false(fs.existsSync(path.join(dir, 'chunkfs.lock')), 'refused before taking the lock');
});

test('mkfs refuses a disk directory that group or others can write, and creates nothing', async (t) => {
  const base = tmpDir();
  for (const mode of [0o777, 0o775, 0o1777]) {
    const shared = path.join(base, `shared-${mode.toString(8)}`);
    fs.mkdirSync(shared);
    fs.chmodSync(shared, mode);
    const dir = path.join(base, `s-${mode.toString(8)}`);
    const err = await t.throwsAsync(
      Store.create(dir, { disks: [path.join(base, 'ok'), shared, path.join(base, 'ok2')] }),
      { instanceOf: ModeError },
    );
    t.true(err!.message.startsWith(`${shared}: disk directory is writable by group or others`), err!.message);
    t.false(fs.existsSync(dir));
    t.false(fs.existsSync(path.join(base, 'ok')));
  }
  // A disk directory others can only read is fine, and becomes owner-only.
  const readable = path.join(base, 'readable');
  fs.mkdirSync(readable);
  fs.chmodSync(readable, 0o755);
  await (
    await Store.create(path.join(base, 's'), { disks: [readable, path.join(base, 'd1'), path.join(base, 'd2')] })
  ).close();
  t.is(fs.statSync(readable).mode & 0o777, 0o700);
});

test('scrub reports every shard and directory others can access; scrub --repair makes them owner-only', async (t) => {
  const dir = path.join(tmpDir(), 'store');
  const store = await Store.create(dir, { disks: 3, layout: 'replica:3', ...SMALL });
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  await store.write(f.ino, 0, Buffer.alloc(2 * SMALL.chunkSizeBytes, 3));
  const shard = (await store.shardPath(f.ino, 1, 2))!;
  fs.chmodSync(shard, 0o644);
  fs.chmodSync(path.dirname(shard), 0o711);
  const clean = await store.scrub();
  t.is(clean.badCount, 0);
  t.is(clean.looseModes.count, 2);
  t.deepEqual(clean.looseModes.paths.map((p) => p.path).sort(), [path.dirname(shard), shard].sort());
  t.is(clean.looseModes.fixed, 0);
  const repaired = await store.scrub({ repair: true });
  t.is(repaired.looseModes.fixed, 2);
  t.is((await store.scrub()).looseModes.count, 0);
  t.is(fs.statSync(shard).mode & 0o777, 0o600);
  await store.close();
});
