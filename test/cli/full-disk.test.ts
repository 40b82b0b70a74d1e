// A full disk on a bad day: the file system holding the store directory has no space left. Every
// opener that takes the store lock says so in one line naming the lock file, and leaves nothing
// behind (no empty lock file that the next opener would have to judge stale, no mount point it made).
// A real full file system: a 16 MiB tmpfs (root only; skipped otherwise).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chunkfsCli, chunkfsOk, removeDir, run, tempDir } from '../helpers/mount';

const isRoot = process.getuid?.() === 0;
const rootTest = isRoot ? test.serial : test.skip;
let dir = '';
let mounted = false;
test.before(async () => {
  dir = await tempDir('full-disk');
});
test.after.always(async () => {
  if (mounted) await run('umount', ['-l', `${dir}/fs`]);
  if (dir !== '') await removeDir(dir);
});

/** Every path under root with its size and modification time: what a refused opener must not change. */
function state(root: string): string[] {
  return (fs.readdirSync(root, { recursive: true, encoding: 'utf8' }) as string[]).sort().map((p) => {
    const st = fs.statSync(path.join(root, p));
    return `${p} ${st.size} ${st.mtimeMs}`;
  });
}

rootTest('a store on a full file system: each opener says so in one line and leaves nothing behind', async (t) => {
  fs.mkdirSync(`${dir}/fs`);
  const m = await run('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0700', 'tmpfs', `${dir}/fs`]);
  t.is(m.code, 0, m.stderr);
  mounted = m.code === 0;
  const store = `${dir}/fs/store`;
  await chunkfsOk(['mkfs', store, '--disks', '3']);
  // Fill it: writes of 64 KiB until the file system refuses one.
  const fd = fs.openSync(`${dir}/fs/filler`, 'w');
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(64 << 10));
  } catch (err) {
    t.is((err as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    fs.closeSync(fd);
  }
  const before = state(store);
  const lock = `${store}/chunkfs.lock`;
  const said = new RegExp(
    `^chunkfs \\w+: store ${store}: cannot make the lock ${lock}: its file system is full \\(ENOSPC\\): ` +
      'free some space there and retry; nothing was changed\\n$',
  );
  for (const args of [
    ['fsck', '--repair', store],
    ['scrub', '--repair', store],
    ['heal', store],
    ['mount', store, `${dir}/mnt`],
  ]) {
    const r = await chunkfsCli(args, { timeoutMs: 60_000 });
    t.is(r.code, 1, args.join(' '));
    t.regex(r.stderr, said, args.join(' '));
    t.false(fs.existsSync(lock), `${args[0]}: no lock file left`);
    t.deepEqual(state(store), before, `${args[0]}: nothing changed`);
  }
  t.false(fs.existsSync(`${dir}/mnt`), 'the failed mount left no mount point');
  // A read-only opener cannot make SQLite's WAL index there either: its advice names a full file system.
  const st = await chunkfsCli(['status', store]);
  t.is(st.code, 1);
  t.regex(st.stderr, /^chunkfs status: .*meta\.db-shm, .* cannot be used \(.*its file system is full: df -h\)/);
  t.is(st.stderr.split('\n').length, 2, 'one line');
  // mkfs of another store there: one line naming it, and no store or staging directory left.
  const entries = fs.readdirSync(`${dir}/fs`).sort();
  const mk = await chunkfsCli(['mkfs', `${dir}/fs/store2`, '--disks', '3']);
  t.is(mk.code, 1);
  t.regex(
    mk.stderr,
    new RegExp(`^chunkfs mkfs: ${dir}/fs/store2: no space left to make it \\(.*\\); nothing was made`),
  );
  t.is(mk.stderr.split('\n').length, 2, 'one line');
  t.deepEqual(fs.readdirSync(`${dir}/fs`).sort(), entries, 'nothing made');
  // Space again: the store opens as before.
  fs.rmSync(`${dir}/fs/filler`);
  await chunkfsOk(['fsck', '--repair', store]);
});
